/**
 * lego (Debian's package) against the ACME server under TLS: register with and without
 * EAB, obtain with http-01, tls-alpn-01 and dns-01 (lego's `exec` provider and the test's
 * DNS server), renew, revoke; openssl checks the chain, the CRL and OCSP after each.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { it } from 'node:test';
import { legoExecScript, loopbackFor } from '../support/acme-fixtures.js';
import { checkChain, checkRevoked, clientMount, describeWithClients, requireTool, run } from './pki-acme-clients.js';
import type { X509Certificate } from './pki-acme-clients.js';

const FILE_TAG = 32;
const haveLego = requireTool('lego');

describeWithClients('pki ACME with lego', !haveLego && 'lego is not installed', (suite, kind) => {
  let seq = 0;

  /** One lego working directory and the arguments every command of it takes. */
  function lego(directoryUrl: string, name: string, extra: string[] = []) {
    const path = join(suite.t.dir, `lego-${++seq}`);
    const args = ['--server', directoryUrl, '--path', path, '--accept-tos', '--email', 'ops@acme.test'];
    args.push('--domains', name, ...extra);
    const env = { LEGO_CA_CERTIFICATES: suite.t.caFile, EXEC_PATH: legoExecScript(suite.dns, suite.t.dir) };
    return {
      run: (cmd: string[]) => run('lego', [...args, ...cmd], env),
      chain: () => readFileSync(join(path, 'certificates', `${name.replace('*', '_')}.crt`), 'utf8'),
      /** `lego revoke`, then the CRL and OCSP of the mount must show it. */
      revoke: async (m: { mount: string; rootPem: string }, leaf: X509Certificate) => {
        const r = await run('lego', [...args, 'revoke', '--keep', '--reason', '4'], env);
        assert.equal(r.code, 0, r.out);
        await checkRevoked(suite.t, m.mount, m.rootPem, leaf);
      },
    };
  }

  it('http-01 on a role directory: run, renew, revoke', async () => {
    const m = await clientMount(suite.t, { dns_resolver: suite.dns.address });
    const ip = loopbackFor(FILE_TAG, kind, 1);
    const name = 'lego-http.acme.test';
    suite.dns.mapHost(name, ip);
    const l = lego(`${m.cluster}/roles/web/acme/directory`, name, ['--http', '--http.port', `${ip}:80`]);
    let r = await l.run(['run']);
    assert.equal(r.code, 0, r.out);
    const first = checkChain(l.chain(), m.rootPem, name);
    r = await l.run(['renew', '--days', '100000', '--no-random-sleep']);
    assert.equal(r.code, 0, r.out);
    const renewed = checkChain(l.chain(), m.rootPem, name);
    assert.notEqual(renewed.serialNumber, first.serialNumber);
    await l.revoke(m, renewed);
  });

  it('tls-alpn-01 with EAB on an issuer directory (eab_policy always-required)', async () => {
    const m = await clientMount(suite.t, { dns_resolver: suite.dns.address, eab_policy: 'always-required' });
    const eab = await suite.t.v('POST', `${m.mount}/issuer/root/acme/new-eab`);
    assert.equal(eab.status, 200, eab.text);
    const ip = loopbackFor(FILE_TAG, kind, 2);
    const name = 'lego-alpn.acme.test';
    suite.dns.mapHost(name, ip);
    const l = lego(`${m.cluster}/issuer/root/acme/directory`, name, [
      '--eab',
      '--kid',
      eab.json.data.id,
      '--hmac',
      eab.json.data.key,
      '--tls',
      '--tls.port',
      `${ip}:443`,
    ]);
    let r = await l.run(['run']);
    assert.equal(r.code, 0, r.out);
    const leaf = checkChain(l.chain(), m.rootPem, name);
    await l.revoke(m, leaf);
    // Without EAB the same directory refuses a new account.
    const plain = lego(`${m.cluster}/issuer/root/acme/directory`, 'other.acme.test', ['--tls']);
    r = await plain.run(['run']);
    assert.notEqual(r.code, 0);
    assert.match(r.out, /externalAccountRequired|external account/i);
  });

  it('dns-01 for a wildcard through the exec provider and dns_resolver', async () => {
    const m = await clientMount(suite.t, { dns_resolver: suite.dns.address });
    const name = '*.lego-dns.acme.test';
    const l = lego(`${m.cluster}/roles/web/acme/directory`, name, [
      '--dns',
      'exec',
      '--dns.resolvers',
      suite.dns.address,
      '--dns.disable-cp',
    ]);
    const r = await l.run(['run']);
    assert.equal(r.code, 0, r.out);
    const leaf = checkChain(l.chain(), m.rootPem, name);
    await l.revoke(m, leaf);
  });
});
