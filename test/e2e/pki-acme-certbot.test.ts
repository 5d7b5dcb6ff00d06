/**
 * certbot (Debian's package) against the ACME server under TLS: `certonly --standalone`
 * with http-01, `renew --force-renewal` and `revoke`, with --server on a role directory
 * and on an issuer directory; openssl checks the chain, the CRL and OCSP after each.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { it } from 'node:test';
import { loopbackFor } from '../support/acme-fixtures.js';
import { checkChain, checkRevoked, clientMount, describeWithClients, requireTool, run } from './pki-acme-clients.js';

const FILE_TAG = 33;
const haveCertbot = requireTool('certbot');

describeWithClients('pki ACME with certbot', !haveCertbot && 'certbot is not installed', (suite, kind) => {
  let seq = 0;

  /** certbot with its own config, work and log directories, trusting the test CA. */
  function certbot(server: string, ip: string) {
    const base = join(suite.t.dir, `certbot-${++seq}`);
    const common = [
      '--non-interactive',
      '--config-dir',
      join(base, 'config'),
      '--work-dir',
      join(base, 'work'),
      '--logs-dir',
      join(base, 'logs'),
      '--server',
      server,
    ];
    const env = { REQUESTS_CA_BUNDLE: suite.t.caFile };
    const standalone = ['--standalone', '--http-01-address', ip, '--http-01-port', '80'];
    return {
      certonly: (name: string) =>
        run('certbot', ['certonly', ...common, ...standalone, '--agree-tos', '-m', 'ops@acme.test', '-d', name], env),
      renew: () =>
        run('certbot', ['renew', ...common, ...standalone, '--force-renewal', '--no-random-sleep-on-renew'], env),
      revoke: (name: string) =>
        run(
          'certbot',
          ['revoke', ...common, '--cert-name', name, '--reason', 'superseded', '--no-delete-after-revoke'],
          env,
        ),
      fullchain: (name: string) => readFileSync(join(base, 'config', 'live', name, 'fullchain.pem'), 'utf8'),
    };
  }

  for (const [label, dir, n] of [
    ['a role directory', 'roles/web/acme/', 1],
    ['an issuer directory', 'issuer/root/acme/', 2],
  ] as const) {
    it(`certonly, renew --force-renewal and revoke on ${label}`, async () => {
      const m = await clientMount(suite.t, { dns_resolver: suite.dns.address });
      const ip = loopbackFor(FILE_TAG, kind, n);
      const name = `certbot-${n}.acme.test`;
      suite.dns.mapHost(name, ip);
      const c = certbot(`${m.cluster}/${dir}directory`, ip);
      let r = await c.certonly(name);
      assert.equal(r.code, 0, r.out);
      const first = checkChain(c.fullchain(name), m.rootPem, name);
      r = await c.renew();
      assert.equal(r.code, 0, r.out);
      const renewed = checkChain(c.fullchain(name), m.rootPem, name);
      assert.notEqual(renewed.serialNumber, first.serialNumber);
      r = await c.revoke(name);
      assert.equal(r.code, 0, r.out);
      await checkRevoked(suite.t, m.mount, m.rootPem, renewed);
    });
  }
});
