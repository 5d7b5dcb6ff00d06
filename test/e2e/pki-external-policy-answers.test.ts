import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { describeWithServer } from '../support/test-server.js';
import { addRoot, httpsVaultClient, opensslTestCa, startScriptedPolicyService } from './pki-external-policy-helpers.js';
import type { Issued, PolicyResponder, ScriptedPolicyService, TestCa } from './pki-external-policy-helpers.js';
import { mountWithRoot, opensslCsr, storedSerials } from './pki-issue-helpers.js';
import type { Vault } from './pki-issue-helpers.js';
import { keyMatchesCert, verifyChain, x509Text } from './pki-issuers-openssl.js';

type Body = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
type Mode = 'issue' | 'sign' | 'ica';

const OPS: [string, Mode][] = [
  ['issue', 'issue'],
  ['sign', 'sign'],
  ['sign-intermediate', 'ica'],
];

/**
 * The twelve external-policy paths of a mount, ordered operation, issuer prefix, policy suffix:
 * `i ^ 1` is the same path with the policy suffix toggled, `i ^ 2` with the prefix toggled.
 */
const PATHS = OPS.flatMap(([op, mode]) =>
  (['root', 'second'] as const).flatMap((issuer) =>
    [undefined, 'web'].map((policy) => ({
      path: `${issuer === 'second' ? 'issuer/second/' : ''}external-policy/${op}${policy ? `/${policy}` : ''}`,
      mode,
      issuer,
      policy,
    })),
  ),
);

/**
 * Answers as a well-behaved policy service: a template for the request's CSR (a CA on
 * sign-intermediate) for the requested issuer, to be stored; `over` replaces answer fields.
 */
function templating(ca: TestCa, over: (request: Body) => Body = () => ({})): PolicyResponder {
  return (request) => {
    const vr = request.vault_request_values;
    const user = request.user_request_key_values;
    const name = typeof user.common_name === 'string' ? user.common_name : undefined;
    const certificate = ca.signCsr(user.csr, { ca: vr.issuance_mode === 'ica', ...(name ? { name } : {}) });
    return {
      json: {
        request_uuid: request.request_uuid,
        certificate,
        issuer_ref: vr.requested_issuer_id,
        store_certificate: true,
        ...over(request),
      },
    };
  };
}

describe('external-policy answers of a scripted service over HTTPS', () => {
  let ca: TestCa;
  let otherCa: TestCa;
  let serverTls: Issued;
  let svc: ScriptedPolicyService;
  const leaf = opensslCsr('EC:P-256', '/CN=leaf.example.com');
  const ica = opensslCsr('EC:P-256', '/CN=ica.example.com');

  before(async () => {
    ca = opensslTestCa('External policy answers CA');
    otherCa = opensslTestCa('Unrelated CA');
    serverTls = ca.issue('strongroom');
    svc = await startScriptedPolicyService(ca.issue('policy-service'), templating(ca));
  });
  after(async () => svc?.close());

  /** A request body the path's mode accepts. */
  const bodyFor = (mode: Mode): Body =>
    mode === 'issue'
      ? { common_name: 'x.example.com', key_type: 'ec' }
      : { csr: mode === 'ica' ? ica.csr : leaf.csr, common_name: `${mode}.example.com` };

  describeWithServer('', (server) => {
    let v: Vault;
    let mount: string;
    const pems: Record<'root' | 'second', string> = { root: '', second: '' };
    const ids: Record<'root' | 'second', string> = { root: '', second: '' };

    before(async () => {
      v = httpsVaultClient(server.url, ca.certPem, server.rootToken);
      const m = await mountWithRoot(v);
      mount = m.mount;
      [pems.root, ids.root] = [m.rootPem, m.issuerId];
      const second = await addRoot(v, mount, 'second');
      [pems.second, ids.second] = [second.pem, second.id];
      const r = await v('POST', `${mount}/config/external-policy`, {
        body: { enabled: true, external_service_url: svc.url, trusted_ca: ca.certPem, timeout: '5s' },
      });
      assert.equal(r.status, 200, r.text);
    });

    it('every path variant issues a certificate openssl verifies against its chain, without a lease', async () => {
      svc.respond(templating(ca));
      for (const p of PATHS) {
        const r = await v('POST', `${mount}/${p.path}`, { body: bodyFor(p.mode) });
        assert.equal(r.status, 200, `${p.path}: ${r.text}`);
        assert.equal(r.json.lease_id, '', p.path);
        assert.equal(r.json.lease_duration, 0, p.path);
        const vr = svc.last().vault_request_values;
        assert.equal(vr.issuance_mode, p.mode, p.path);
        assert.equal(vr.policy_name, p.policy, p.path);
        assert.equal(vr.requested_issuer_id, ids[p.issuer], p.path);
        const d = r.json.data;
        assert.equal(d.issuing_ca, pems[p.issuer], p.path);
        // sign-intermediate lists the new CA first, then the issuer's chain.
        const chain = p.mode === 'ica' ? d.ca_chain.slice(1) : d.ca_chain;
        if (p.mode === 'ica') assert.equal(d.ca_chain[0], d.certificate, p.path);
        assert.deepEqual(chain, [pems[p.issuer]], p.path);
        assert.match(verifyChain(d.certificate, chain), /OK/, p.path);
        const text = x509Text(d.certificate);
        assert.match(text, p.mode === 'ica' ? /CA:TRUE/ : /CA:FALSE/, p.path);
        const key = p.mode === 'issue' ? d.private_key : p.mode === 'ica' ? ica.key : leaf.key;
        assert.ok(keyMatchesCert(key, d.certificate), `${p.path}: the certificate is for the request's key`);
      }

      const r = await v('POST', `${mount}/external-policy/issue/web`, {
        body: { common_name: 'bundle.example.com', key_type: 'ec', format: 'pem_bundle' },
      });
      assert.equal(r.status, 200, r.text);
      const blocks =
        (r.json.data.certificate as string).match(/-----BEGIN ([A-Z ]+)-----[\s\S]+?-----END \1-----/g) ?? [];
      assert.deepEqual(
        blocks.map((b) => /BEGIN ([A-Z ]+)-----/.exec(b)![1]),
        ['EC PRIVATE KEY', 'CERTIFICATE'],
        'on issue: the key and the certificate',
      );
      assert.ok(keyMatchesCert(blocks[0]!, blocks[1]!));
      assert.match(verifyChain(blocks[1]!, [pems.root]), /OK/);
      // On sign the issuing CA joins the certificate only when it is not a self-signed root.
      const s = await v('POST', `${mount}/external-policy/sign/web`, {
        body: { ...bodyFor('sign'), format: 'pem_bundle' },
      });
      assert.equal(s.status, 200, s.text);
      assert.equal((s.json.data.certificate as string).split(/(?=-----BEGIN )/).length, 1, s.json.data.certificate);
      assert.match(verifyChain(s.json.data.certificate, [pems.root]), /OK/);
    });

    it('ACL: a token granted exactly one path issues there and is refused on its siblings', async () => {
      svc.respond(templating(ca));
      const policy = async (name: string, text: string) =>
        assert.equal((await v('PUT', `sys/policies/acl/${name}`, { body: { policy: text } })).status, 204);
      const token = async (policies: string[]) =>
        (await v('POST', 'auth/token/create', { body: { policies } })).json.auth.client_token as string;
      for (const [i, p] of PATHS.entries()) {
        const name = `only-${i}-${mount}`;
        await policy(name, `path "${mount}/${p.path}" { capabilities = ["update"] }`);
        const t = await token([name]);
        const r = await v('POST', `${mount}/${p.path}`, { token: t, body: bodyFor(p.mode) });
        assert.equal(r.status, 200, `${p.path}: ${r.text}`);
        assert.deepEqual(svc.last().identity_request_key_values.token_policies.sort(), ['default', name].sort());
        const hits = svc.hits();
        for (const sibling of [PATHS[i ^ 1]!, PATHS[i ^ 2]!, PATHS[(i + 4) % PATHS.length]!]) {
          const denied = await v('POST', `${mount}/${sibling.path}`, { token: t, body: bodyFor(sibling.mode) });
          assert.equal(denied.status, 403, `${p.path} grant used on ${sibling.path}`);
          assert.deepEqual(denied.json, { errors: ['permission denied'] });
        }
        assert.equal(svc.hits(), hits, 'refused requests never reach the service');
      }
    });

    it('store_certificate, error beside a certificate, and generate_lease', async () => {
      const issue = async () => {
        const r = await v('POST', `${mount}/external-policy/issue`, {
          body: { common_name: 'fields.example.com', key_type: 'ec' },
        });
        assert.equal(r.status, 200, r.text);
        assert.equal(r.json.lease_id, '');
        assert.equal(r.json.lease_duration, 0);
        return r;
      };
      svc.respond(templating(ca, () => ({ store_certificate: false })));
      let r = await issue();
      let serial = r.json.data.serial_number as string;
      assert.ok(!(await storedSerials(v, mount)).includes(serial), 'not listed under certs/');
      const missing = await v('GET', `${mount}/cert/${serial}`);
      assert.equal(missing.status, 404, missing.text);

      svc.respond(templating(ca, () => ({ store_certificate: true })));
      r = await issue();
      serial = r.json.data.serial_number;
      assert.ok((await storedSerials(v, mount)).includes(serial), 'listed under certs/');
      const stored = await v('GET', `${mount}/cert/${serial}`);
      assert.equal(stored.status, 200, stored.text);
      assert.equal(stored.json.data.certificate.trim(), r.json.data.certificate.trim());

      svc.respond(templating(ca, () => ({ error: 'issued, but renew it soon', warnings: ['from the policy'] })));
      r = await issue();
      assert.deepEqual(r.json.warnings, ['from the policy', 'issued, but renew it soon']);
      assert.match(verifyChain(r.json.data.certificate, [pems.root]), /OK/);

      svc.respond(templating(ca, () => ({ generate_lease: true })));
      r = await issue();
      assert.equal(r.json.warnings.length, 1);
      assert.match(
        r.json.warnings[0],
        /asked for a lease; certificates issued through external-policy paths carry no lease/,
      );
      assert.ok((await storedSerials(v, mount)).includes(r.json.data.serial_number));
    });

    it('unusable answers and an untrusted service fail with a clear message and store nothing', async () => {
      const imported = await v('POST', `${mount}/issuers/import/cert`, { body: { pem_bundle: otherCa.certPem } });
      assert.equal(imported.status, 200, imported.text);
      const keyless = imported.json.data.imported_issuers[0] as string;
      const other = opensslCsr('EC:P-256', '/CN=other.example.com');
      const cases: [string, Mode, PolicyResponder, RegExp][] = [
        [
          'unknown issuer_ref',
          'issue',
          templating(ca, () => ({ issuer_ref: 'nosuch' })),
          /^external policy service: issuer_ref "nosuch" of the answer cannot sign: /,
        ],
        [
          'issuer without a key',
          'sign',
          templating(ca, () => ({ issuer_ref: keyless })),
          new RegExp(`issuer_ref "${keyless}" of the answer cannot sign: issuer ${keyless} has no private key`),
        ],
        [
          'template for another key',
          'sign',
          templating(ca, () => ({ certificate: ca.signCsr(other.csr) })),
          /the template certifies a different public key than the one in the request/,
        ],
        [
          'CA template on a leaf path',
          'sign',
          templating(ca, () => ({ certificate: ca.signCsr(leaf.csr, { ca: true }) })),
          /the template is a CA certificate; use sign-intermediate/,
        ],
        [
          'leaf template on sign-intermediate',
          'ica',
          templating(ca, () => ({ certificate: ca.signCsr(ica.csr) })),
          /a sign-intermediate template must be a CA certificate/,
        ],
        [
          'neither certificate nor error',
          'issue',
          (q) => ({ json: { request_uuid: q.request_uuid, warnings: ['nothing decided'] } }),
          /the answer has neither a certificate nor an error/,
        ],
        [
          'a body that is not JSON',
          'issue',
          () => ({ text: '<html>policy</html>' }),
          /^external policy service: the answer is not JSON$/,
        ],
      ];
      const serials = await storedSerials(v, mount);
      const path = {
        issue: 'external-policy/issue',
        sign: 'external-policy/sign',
        ica: 'external-policy/sign-intermediate',
      };
      for (const [what, mode, responder, message] of cases) {
        svc.respond(responder);
        const hits = svc.hits();
        const r = await v('POST', `${mount}/${path[mode]}`, { body: bodyFor(mode) });
        assert.equal(r.status, 502, `${what}: ${r.text}`);
        assert.match(r.contentType, /^application\/json/);
        assert.equal(r.json.errors.length, 1, what);
        assert.match(r.json.errors[0], message, what);
        assert.equal(svc.hits(), hits + 1, what);
        assert.deepEqual(await storedSerials(v, mount), serials, `${what}: nothing stored`);
      }

      // A service whose certificate the configured trusted_ca did not issue is never sent the request.
      svc.respond(templating(ca));
      let r = await v('POST', `${mount}/config/external-policy`, { body: { trusted_ca: otherCa.certPem } });
      assert.equal(r.status, 200, r.text);
      try {
        const hits = svc.hits();
        r = await v('POST', `${mount}/external-policy/issue`, { body: bodyFor('issue') });
        assert.equal(r.status, 502, r.text);
        assert.match(
          r.json.errors[0],
          new RegExp(
            `^external policy service: cannot reach https://127\\.0\\.0\\.1:\\d+: unable to verify the ` +
              `first certificate$`,
          ),
        );
        assert.equal(svc.hits(), hits);
        assert.deepEqual(await storedSerials(v, mount), serials, 'nothing stored');
      } finally {
        r = await v('POST', `${mount}/config/external-policy`, { body: { trusted_ca: ca.certPem } });
        assert.equal(r.status, 200, r.text);
      }
    });

    // The server's certificate is made by the enclosing suite's `before`.
    return () => ({ config: { tlsCertFile: serverTls.certFile, tlsKeyFile: serverTls.keyFile } });
  });
});
