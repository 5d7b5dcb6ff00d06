import { before, it } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:https';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { hvacSkip, runHvacScript } from '../support/hvac-script.js';
import { describeWithServer } from '../support/test-server.js';
import { opensslTestCa } from './pki-external-policy-helpers.js';

/** TLS certificate logins (auth/cert) over HTTPS with client certificates. */
const ca = opensslTestCa('Strongroom test CA');
const serverCert = ca.issue('localhost');
const external = ca.issue('agent-ext', { client: true });
const stranger = ca.issue('stranger', { client: true });
const serverOnly = ca.issue('agent-ext-srv');
const otherCa = opensslTestCa('Someone else');
const forged = otherCa.issue('agent-ext', { client: true });

interface Reply {
  status: number;
  contentType: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
}

/** One HTTPS request trusting the test CA, optionally with a client certificate. */
function call(
  base: string,
  method: string,
  path: string,
  opts: { token?: string; body?: unknown; cert?: { certPem: string; keyPem: string } } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const body = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    const req = request(
      `${base}/v1/${path}`,
      {
        method,
        ca: ca.certPem,
        ...(opts.cert ? { cert: opts.cert.certPem, key: opts.cert.keyPem } : {}),
        headers: {
          ...(opts.token ? { 'x-vault-token': opts.token } : {}),
          ...(body ? { 'content-type': 'application/json' } : {}),
        },
        agent: false,
      },
      (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            contentType: String(res.headers['content-type'] ?? ''),
            json: text ? (JSON.parse(text) as unknown) : undefined,
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describeWithServer(
  'TLS certificate auth',
  {
    config: { tlsCertFile: serverCert.certFile, tlsKeyFile: serverCert.keyFile },
  },
  (server) => {
    const root = (method: string, path: string, body?: unknown) =>
      call(server.url, method, path, { token: server.rootToken, body });
    before(async () => {
      assert.equal((await root('POST', 'sys/mounts/pki', { type: 'pki' })).status, 204);
      assert.equal(
        (await root('POST', 'pki/root/generate/internal', { common_name: 'Strongroom Root', key_type: 'ec' })).status,
        200,
      );
      const role = { allowed_domains: 'example.com', allow_subdomains: true, key_type: 'ec', max_ttl: '24h' };
      assert.ok((await root('POST', 'pki/roles/agents', role)).status < 300);
    });

    it(
      'logs in with external and Strongroom-issued certificates through hvac, and renews itself',
      { skip: hvacSkip },
      async () => {
        const file = join(ca.dir, 'cert-hvac.json');
        writeFileSync(
          file,
          JSON.stringify({
            dir: ca.dir,
            external_ca_file: ca.certFile,
            external_cert: external.certFile,
            external_key: external.keyFile,
          }),
        );
        try {
          const { code, out } = await runHvacScript(
            'vault-auth-cert.py',
            { url: server.url, token: server.rootToken, caFile: ca.certFile },
            [file],
          );
          assert.equal(code, 0, out);
          for (const step of ['certs', 'external-ca', 'self-renewal'])
            assert.match(out, new RegExp(`^ok ${step}$`, 'm'));
        } finally {
          rmSync(file, { force: true });
        }
      },
    );

    it('refuses missing, untrusted, unnamed and revoked certificates in Vault envelope', async () => {
      assert.equal((await root('POST', 'sys/auth/tls', { type: 'cert' })).status, 204);
      let r = await root('POST', 'auth/tls/certs/ext', { certificate: ca.certPem, allowed_common_names: 'agent-ext' });
      assert.equal(r.status, 204);
      r = await root('POST', 'auth/tls/certs/bad', { certificate: 'not a pem' });
      assert.deepEqual([r.status, r.json], [400, { errors: ['failed to parse certificate'] }]);
      r = await root('POST', 'auth/tls/certs/bad', { display_name: 'x' });
      assert.deepEqual([r.status, r.json], [400, { errors: ['must specify certificate'] }]);

      const login = (cert?: { certPem: string; keyPem: string }, name?: string) =>
        call(server.url, 'POST', 'auth/tls/login', { cert, body: name ? { name } : {} });
      const refused = [400, { errors: ['invalid certificate or no client certificate supplied'] }];
      r = await login(readIssued(external));
      assert.equal(r.status, 200);
      assert.equal(r.json.auth.metadata.common_name, 'agent-ext');
      assert.deepEqual(r.json.auth.token_policies, ['default']);
      for (const cert of [undefined, readIssued(stranger), readIssued(forged), readIssued(serverOnly)]) {
        r = await login(cert);
        assert.deepEqual([r.status, r.json], refused);
        assert.match(r.contentType, /^application\/json/);
      }
      r = await login(readIssued(external), 'nope');
      assert.deepEqual([r.status, r.json], refused);

      // A Strongroom certificate, then the same after revocation.
      const pkiCa = (await root('GET', 'pki/cert/ca')).json.data.certificate as string;
      r = await root('POST', 'auth/tls/certs/own', { certificate: pkiCa, allowed_dns_sans: 'svc.example.com' });
      assert.equal(r.status, 204);
      const issued = (await root('POST', 'pki/issue/agents', { common_name: 'svc.example.com' })).json.data;
      const own = { certPem: issued.certificate as string, keyPem: issued.private_key as string };
      r = await login(own, 'own');
      assert.equal(r.status, 200);
      assert.equal(r.json.auth.metadata.serial_number, issued.serial_number);
      assert.equal((await root('POST', 'pki/revoke', { serial_number: issued.serial_number })).status, 200);
      r = await login(own, 'own');
      assert.deepEqual([r.status, r.json], refused);
    });
  },
);

function readIssued(i: { certFile: string; keyFile: string }): { certPem: string; keyPem: string } {
  return { certPem: readFileSync(i.certFile, 'utf8'), keyPem: readFileSync(i.keyFile, 'utf8') };
}
