import { before, it } from 'node:test';
import assert from 'node:assert/strict';
import { describeWithServer } from '../support/test-server.js';
import { vaultClient } from './vault-http.js';
import { openssl, opensslRootCa, signIntermediateCsr, verifyChain, x509Text } from './pki-issuers-openssl.js';

describeWithServer('pki intermediates, imports, rotation and deletes', (server) => {
  let v: ReturnType<typeof vaultClient>;
  let n = 0;
  const mount = async (): Promise<string> => {
    const path = `lc${++n}`;
    const r = await v('POST', `sys/mounts/${path}`, { body: { type: 'pki', config: { max_lease_ttl: '87600h' } } });
    assert.equal(r.status, 204, r.text);
    return path;
  };
  const root = async (m: string, body: Record<string, unknown> = {}) => {
    const r = await v('POST', `${m}/root/generate/internal`, {
      body: { common_name: `Root ${m}`, key_type: 'ec', ttl: '8760h', ...body },
    });
    assert.equal(r.status, 200, r.text);
    return r.json.data as Record<string, string>;
  };
  before(async () => {
    v = vaultClient(server.url, server.rootToken);
  });

  it("builds an intermediate: CSR, signature by another mount's root, set-signed, chain", async () => {
    const rootMount = await mount();
    const r0 = await v('POST', `${rootMount}/root/generate/exported`, {
      body: { common_name: 'Example Root', key_type: 'ec', ttl: '8760h' },
    });
    assert.equal(r0.status, 200, r0.text);
    const rootPem: string = r0.json.data.certificate;
    const rootKey: string = r0.json.data.private_key;

    const m = await mount();
    let r = await v('POST', `${m}/intermediate/generate/internal`, {
      body: {
        common_name: 'int.example.com',
        key_type: 'ec',
        key_name: 'int-key',
        organization: 'Example',
        add_basic_constraints: true,
        key_usage: 'DigitalSignature',
      },
    });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(Object.keys(r.json.data).sort(), ['csr', 'key_id']);
    const csr: string = r.json.data.csr;
    const keyId: string = r.json.data.key_id;
    const req = openssl(['req', '-verify', '-noout', '-text', '-nameopt', 'RFC2253'], csr);
    assert.match(req, /Subject: CN=int\.example\.com,O=Example/);
    assert.match(req, /DNS:int\.example\.com/);
    assert.match(req, /CA:TRUE/);
    assert.match(req, /Digital Signature/);
    assert.equal((await v('LIST', `${m}/issuers`)).status, 404, 'no issuer before the signed certificate is imported');
    assert.deepEqual((await v('LIST', `${m}/keys`)).json.data.keys, [keyId]);

    const intPem = signIntermediateCsr(csr, rootPem, rootKey, { pathlen: 0 });
    r = await v('POST', `${m}/intermediate/set-signed`, { body: { certificate: `${intPem}\n${rootPem}` } });
    assert.equal(r.status, 200, r.text);
    const [intId, rootId] = r.json.data.imported_issuers as string[];
    assert.equal(r.json.data.imported_issuers.length, 2);
    assert.equal(r.json.data.imported_keys, null);
    assert.equal(r.json.data.existing_issuers, null);
    assert.equal(r.json.data.existing_keys, null);
    assert.deepEqual(r.json.data.mapping, { [intId!]: keyId, [rootId!]: '' });

    r = await v('GET', `${m}/issuer/default`);
    assert.equal(r.json.data.issuer_id, intId, 'the issuer with a key became the default');
    assert.deepEqual(r.json.data.ca_chain, [intPem, rootPem]);
    assert.equal(r.json.data.key_id, keyId);
    assert.equal(r.json.data.revocation_signature_algorithm, '');
    r = await v('GET', `${m}/issuer/${rootId}`);
    assert.deepEqual(r.json.data.ca_chain, [rootPem]);
    assert.equal(r.json.data.key_id, '');
    r = await v('GET', `${m}/ca_chain`, { token: undefined });
    assert.equal(r.text, `${intPem}\n${rootPem}\n`);
    verifyChain(intPem, [rootPem]);
    const chainFromApi = (await v('GET', `${m}/cert/ca_chain`, { token: undefined })).json.data.ca_chain as string;
    assert.equal(chainFromApi, `${intPem}\n${rootPem}\n`);
    assert.match(x509Text(intPem), /CA:TRUE, pathlen:0/);

    // Importing the same bundle again creates nothing.
    r = await v('POST', `${m}/intermediate/set-signed`, { body: { certificate: `${intPem}\n${rootPem}` } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.data.imported_issuers, null);
    assert.deepEqual(r.json.data.existing_issuers, [intId, rootId]);
    assert.equal((await v('LIST', `${m}/issuers`)).json.data.keys.length, 2);
    // Intermediate certificates are not stored certificates of this mount.
    assert.equal((await v('LIST', `${m}/certs`)).status, 404);
  });

  it('returns exported intermediate CSRs in DER and cross-sign CSRs for an existing key', async () => {
    const m = await mount();
    let r = await v('POST', `${m}/issuers/generate/intermediate/exported`, {
      body: { common_name: 'Der Int', format: 'der', key_type: 'rsa' },
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.data.private_key_type, 'rsa');
    assert.doesNotMatch(r.json.data.csr, /BEGIN/);
    const req = openssl(
      ['req', '-inform', 'DER', '-verify', '-noout', '-subject'],
      Buffer.from(r.json.data.csr, 'base64'),
    );
    assert.match(req, /CN ?= ?Der Int/);
    assert.match(Buffer.from(r.json.data.private_key, 'base64').toString('latin1'), /^0/);

    const rt = await root(m, { common_name: 'Cross Root' });
    r = await v('POST', `${m}/intermediate/cross-sign`, { body: { common_name: 'Cross Root', key_ref: rt.key_id } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.data.key_id, rt.key_id);
    const csrPub = openssl(['req', '-noout', '-pubkey'], r.json.data.csr);
    const rootPub = openssl(['x509', '-noout', '-pubkey'], rt.certificate!);
    assert.equal(csrPub, rootPub);
    r = await v('POST', `${m}/intermediate/generate/existing`, { body: { common_name: 'x', key_ref: 'nope' } });
    assert.equal(r.status, 400);
  });

  it('imports bundles with keys, matches keys to issuers, reports duplicates and refuses bad input', async () => {
    const m = await mount();
    const a = opensslRootCa('Imported A');
    let r = await v('POST', `${m}/issuers/import/bundle`, { body: { pem_bundle: `${a.keyPem}\n${a.certPem}\n` } });
    assert.equal(r.status, 200, r.text);
    const issuerA: string = r.json.data.imported_issuers[0];
    const keyA: string = r.json.data.imported_keys[0];
    assert.deepEqual(r.json.data, {
      imported_issuers: [issuerA],
      imported_keys: [keyA],
      mapping: { [issuerA]: keyA },
      existing_issuers: null,
      existing_keys: null,
    });
    assert.equal((await v('GET', `${m}/config/issuers`)).json.data.default, issuerA);
    assert.equal((await v('GET', `${m}/ca/pem`, { token: undefined })).text.trim(), a.certPem);

    r = await v('POST', `${m}/config/ca`, { body: { pem_bundle: `${a.certPem}\n${a.keyPem}` } });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json.data, {
      imported_issuers: null,
      imported_keys: null,
      mapping: { [issuerA]: keyA },
      existing_issuers: [issuerA],
      existing_keys: [keyA],
    });

    // Key first, certificate later: the issuer is linked to the key already present.
    const b = opensslRootCa('Imported B');
    r = await v('POST', `${m}/keys/import`, { body: { pem_bundle: b.keyPem, key_name: 'b-key' } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.data.key_name, 'b-key');
    assert.equal(r.json.data.key_type, 'ec');
    const keyB: string = r.json.data.key_id;
    r = await v('POST', `${m}/keys/import`, { body: { pem_bundle: b.keyPem } });
    assert.equal(r.json.data.key_id, keyB, 'a key is never imported twice');
    assert.ok(r.json.warnings.length > 0);
    r = await v('POST', `${m}/issuers/import/cert`, { body: { pem_bundle: b.certPem } });
    assert.equal(r.status, 200, r.text);
    const issuerB: string = r.json.data.imported_issuers[0];
    assert.deepEqual(r.json.data.mapping, { [issuerB]: keyB });

    // A certificate whose key is elsewhere: imported without a key.
    const c = opensslRootCa('Imported C');
    r = await v('POST', `${m}/issuers/import/cert`, { body: { pem_bundle: c.certPem } });
    const issuerC: string = r.json.data.imported_issuers[0];
    assert.deepEqual(r.json.data.mapping, { [issuerC]: '' });
    assert.ok(r.json.warnings.some((w: string) => /key/.test(w)));
    // Importing its key later links it.
    r = await v('POST', `${m}/issuers/import/bundle`, { body: { pem_bundle: c.keyPem } });
    assert.equal(r.status, 200, r.text);
    assert.equal((await v('GET', `${m}/issuer/${issuerC}`)).json.data.key_id, r.json.data.imported_keys[0]);

    const before = (await v('LIST', `${m}/issuers`)).json.data.keys.length;
    const beforeKeys = (await v('LIST', `${m}/keys`)).json.data.keys.length;
    const d = opensslRootCa('Not imported');
    const leaf = opensslRootCa('Leaf', { ca: false });
    const bad: [string, string, RegExp][] = [
      ['issuers/import/cert', `${d.certPem}\n${d.keyPem}`, /private keys/],
      ['issuers/import/bundle', 'short', /too short/],
      [
        'issuers/import/bundle',
        `-----BEGIN CERTIFICATE-----\n${'A'.repeat(80)}!!\n-----END CERTIFICATE-----`,
        /base64/,
      ],
      [
        'issuers/import/bundle',
        `-----BEGIN CERTIFICATE-----\n${Buffer.from('x'.repeat(90)).toString('base64')}\n-----END CERTIFICATE-----`,
        /certificate/,
      ],
      ['issuers/import/bundle', `${d.certPem}\n${leaf.certPem}`, /non-CA/],
      [
        'issuers/import/bundle',
        `${d.certPem}\n-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----`,
        /encrypted/,
      ],
      [
        'issuers/import/bundle',
        'this is plainly not a PEM bundle at all, only a long line of text without blocks',
        /PEM/,
      ],
      [
        'config/ca',
        `${d.certPem}\n-----BEGIN PRIVATE ` +
          `KEY-----\n${Buffer.from('junk'.repeat(30)).toString('base64')}\n-----END PRIVATE KEY-----`,
        /private key/,
      ],
    ];
    for (const [path, pem, reason] of bad) {
      r = await v('POST', `${m}/${path}`, { body: { pem_bundle: pem } });
      assert.equal(r.status, 400, `${path}: ${r.text}`);
      assert.match(r.json.errors[0], reason, path);
    }
    r = await v('POST', `${m}/intermediate/set-signed`, { body: { certificate: `${d.certPem}\n${d.keyPem}` } });
    assert.equal(r.status, 400);
    r = await v('POST', `${m}/issuers/import/bundle`, { body: {} });
    assert.equal(r.status, 400);
    assert.equal((await v('LIST', `${m}/issuers`)).json.data.keys.length, before, 'nothing stored');
    assert.equal((await v('LIST', `${m}/keys`)).json.data.keys.length, beforeKeys, 'nothing stored');
  });

  it('rotates roots, replaces the default and can follow the latest issuer', async () => {
    const m = await mount();
    const a = await root(m, { issuer_name: 'first' });
    let r = await v('POST', `${m}/root/rotate/internal`, { body: { common_name: 'Rotated', key_type: 'ec' } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.data.issuer_name, 'next');
    const next: string = r.json.data.issuer_id;
    assert.match(x509Text(r.json.data.certificate), /Subject: CN=Rotated/);
    verifyChain(r.json.data.certificate, [r.json.data.certificate]);
    assert.notEqual(r.json.data.key_id, a.key_id);
    assert.equal(
      (await v('GET', `${m}/config/issuers`)).json.data.default,
      a.issuer_id,
      'rotation does not change the default',
    );
    r = await v('POST', `${m}/root/rotate/internal`, { body: { common_name: 'Rotated again', key_type: 'ec' } });
    assert.equal(r.json.data.issuer_name, '', '"next" is taken');

    r = await v('POST', `${m}/root/replace`, { body: {} });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json.data, { default: next, default_follows_latest_issuer: false });
    assert.equal(
      (await v('GET', `${m}/cert/ca`, { token: undefined })).json.data.certificate,
      (await v('GET', `${m}/issuer/next`)).json.data.certificate,
    );

    r = await v('POST', `${m}/config/issuers`, { body: { default: 'first', default_follows_latest_issuer: true } });
    assert.deepEqual(r.json.data, { default: a.issuer_id, default_follows_latest_issuer: true });
    const latest = await root(m, { issuer_name: 'latest' });
    assert.equal((await v('GET', `${m}/config/issuers`)).json.data.default, latest.issuer_id);

    for (const body of [{ default: '' }, { default: 'default' }, { default: 'missing' }]) {
      r = await v('POST', `${m}/config/issuers`, { body });
      assert.equal(r.status, 400, JSON.stringify(body));
    }
    r = await v('POST', `${m}/config/issuers`, { body: { default_follows_latest_issuer: 'maybe' } });
    assert.equal(r.status, 400);
    assert.match(r.json.errors[0], /default_follows_latest_issuer/);
  });

  it('updates issuers with POST (all fields) and PATCH (only sent fields) and validates them', async () => {
    const m = await mount();
    const a = await root(m, { issuer_name: 'a' });
    const b = await root(m, { issuer_name: 'b' });
    let r = await v('POST', `${m}/issuer/a`, {
      body: {
        issuer_name: 'renamed',
        leaf_not_after_behavior: 'truncate',
        usage: 'issuing-certificates,crl-signing',
        manual_chain: 'self',
        issuing_certificates: 'http://pki.example.com/a',
        revocation_signature_algorithm: 'ecdsawithsha384',
      },
    });
    assert.equal(r.status, 200, r.text);
    const d = r.json.data;
    assert.equal(d.issuer_id, a.issuer_id);
    assert.equal(d.issuer_name, 'renamed');
    assert.equal(d.leaf_not_after_behavior, 'truncate');
    assert.equal(d.usage, 'crl-signing,issuing-certificates,read-only');
    assert.deepEqual(d.manual_chain, [a.issuer_id]);
    assert.deepEqual(d.issuing_certificates, ['http://pki.example.com/a']);
    assert.equal(d.enable_aia_url_templating, false);
    assert.equal(d.revocation_signature_algorithm, 'ECDSAWithSHA384');

    r = await v('PATCH', `${m}/issuer/renamed`, {
      body: { leaf_not_after_behavior: 'permit' },
      headers: { 'content-type': 'application/merge-patch+json' },
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.data.issuer_name, 'renamed', 'PATCH keeps what was not sent');
    assert.equal(r.json.data.leaf_not_after_behavior, 'permit');
    assert.deepEqual(r.json.data.issuing_certificates, ['http://pki.example.com/a']);
    r = await v('PATCH', `${m}/issuer/renamed`, {
      body: { leaf_not_after_behavior: null },
      headers: { 'content-type': 'application/merge-patch+json' },
    });
    assert.equal(r.json.data.leaf_not_after_behavior, 'err', 'null removes the value');
    assert.equal(r.json.data.issuer_name, 'renamed');

    // POST without the other fields puts them back to their defaults.
    r = await v('POST', `${m}/issuer/${a.issuer_id}`, { body: { issuer_name: 'renamed' } });
    assert.equal(r.json.data.leaf_not_after_behavior, 'err');
    assert.equal(r.json.data.usage, 'crl-signing,issuing-certificates,ocsp-signing,read-only');
    assert.equal(r.json.data.manual_chain, null);
    assert.deepEqual(r.json.data.issuing_certificates, []);
    assert.equal(r.json.data.enable_aia_url_templating, undefined);

    const bad: [Record<string, unknown>, RegExp][] = [
      [{ leaf_not_after_behavior: 'sometimes' }, /leaf_not_after_behavior/],
      [{ issuer_name: 'b' }, /already in use/],
      [{ issuer_name: 'default' }, /reserved/],
      [{ usage: 'everything' }, /usage/],
      [{ revocation_signature_algorithm: 'SHA256WithRSA' }, /Invalid signature algorithm/],
      [{ revocation_signature_algorithm: 'MD5' }, /Unknown signature algorithm/],
      [{ manual_chain: b.issuer_id }, /manual_chain/],
      [{ manual_chain: 'self,missing' }, /unable to find PKI issuer/],
      [{ ocsp_servers: 'ftp//broken' }, /invalid URL/],
    ];
    for (const [body, reason] of bad) {
      r = await v('PATCH', `${m}/issuer/${a.issuer_id}`, {
        body,
        headers: { 'content-type': 'application/merge-patch+json' },
      });
      assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
      assert.match(r.json.errors[0], reason);
    }
    r = await v('GET', `${m}/issuer/${a.issuer_id}`);
    assert.equal(r.json.data.issuer_name, 'renamed', 'failed updates change nothing');
    r = await v('PATCH', `${m}/issuer/${a.issuer_id}`, {
      body: { enable_aia_url_templating: true, ocsp_servers: '{{cluster_path}}/ocsp' },
      headers: { 'content-type': 'application/merge-patch+json' },
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.data.enable_aia_url_templating, true);
    // A manual chain that names another issuer is kept in order.
    r = await v('POST', `${m}/issuer/b`, { body: { issuer_name: 'b', manual_chain: ['self', a.issuer_id] } });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json.data.manual_chain, [b.issuer_id, a.issuer_id]);
    assert.equal(r.json.data.ca_chain.length, 2);
  });

  it('deletes keys only when unused, issuers idempotently, and everything with DELETE root (sudo)', async () => {
    const m = await mount();
    const a = await root(m, { issuer_name: 'a', key_name: 'ka' });
    let r = await v('DELETE', `${m}/key/ka`);
    assert.equal(r.status, 400);
    assert.match(r.json.errors[0], /in use/);
    r = await v('DELETE', `${m}/issuer/a`);
    assert.equal(r.status, 200, r.text);
    assert.ok(r.json.warnings[0].includes('default issuer'));
    assert.equal((await v('GET', `${m}/config/issuers`)).json.data.default, '');
    assert.equal((await v('GET', `${m}/ca`, { token: undefined })).status, 204);
    r = await v('DELETE', `${m}/issuer/a`);
    assert.equal(r.status, 204);
    r = await v('DELETE', `${m}/key/${a.key_id}`);
    assert.equal(r.status, 200, r.text);
    assert.ok(r.json.warnings[0].includes('default key'));
    r = await v('DELETE', `${m}/key/ka`);
    assert.equal(r.status, 204);
    // The root certificate itself stays readable by serial.
    assert.equal((await v('GET', `${m}/cert/${a.serial_number}`, { token: undefined })).status, 200);

    await root(m);
    await root(m);
    await v('POST', `${m}/keys/generate/internal`, { body: { key_type: 'ec' } });
    const policy =
      `path "${m}/*" { capabilities = ["create", "read", "update", "delete", "list"] }\npath ` +
      `"${m}/root" { capabilities = ["delete"] }`;
    r = await v('POST', 'sys/policies/acl/pki-admin', { body: { policy } });
    assert.equal(r.status, 204, r.text);
    r = await v('POST', 'auth/token/create', { body: { policies: ['pki-admin'] } });
    assert.equal(r.status, 200, r.text);
    const token: string = r.json.auth.client_token;
    r = await v('DELETE', `${m}/root`, { token });
    assert.equal(r.status, 403, 'DELETE root needs sudo');
    assert.equal((await v('LIST', `${m}/issuers`)).json.data.keys.length, 2);
    await v('POST', 'sys/policies/acl/pki-admin', {
      body: { policy: policy.replace('capabilities = ["delete"]', 'capabilities = ["delete", "sudo"]') },
    });
    r = await v('DELETE', `${m}/root`, { token });
    assert.equal(r.status, 204, r.text);
    assert.equal((await v('LIST', `${m}/issuers`)).status, 404);
    assert.equal((await v('LIST', `${m}/keys`)).status, 404);
    assert.deepEqual((await v('GET', `${m}/config/issuers`)).json.data, {
      default: '',
      default_follows_latest_issuer: false,
    });
    assert.deepEqual((await v('GET', `${m}/config/keys`)).json.data, { default: '' });
    assert.equal((await v('GET', `${m}/ca/pem`, { token: undefined })).status, 204);
    // The mount works again after a new root.
    await root(m);
    assert.equal((await v('GET', `${m}/ca/pem`, { token: undefined })).status, 200);
  });

  it('manages keys: generate, list, read, rename, default', async () => {
    const m = await mount();
    let r = await v('POST', `${m}/keys/generate/exported`, { body: { key_name: 'k1', key_type: 'rsa' } });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(Object.keys(r.json.data).sort(), ['key_id', 'key_name', 'key_type', 'private_key']);
    assert.match(r.json.data.private_key, /^-----BEGIN RSA PRIVATE KEY-----/);
    assert.match(openssl(['pkey', '-noout', '-text'], r.json.data.private_key), /Private-Key: \(2048 bit/);
    const k1: string = r.json.data.key_id;
    r = await v('POST', `${m}/keys/generate/internal`, { body: { key_name: 'k2', key_type: 'ed25519' } });
    assert.deepEqual(Object.keys(r.json.data).sort(), ['key_id', 'key_name', 'key_type']);
    const k2: string = r.json.data.key_id;
    r = await v('LIST', `${m}/keys`);
    assert.deepEqual(r.json.data, {
      keys: [k1, k2],
      key_info: { [k1]: { key_name: 'k1' }, [k2]: { key_name: 'k2' } },
    });
    assert.equal((await v('LIST', `${m}/keys`, { token: undefined })).status, 403);
    r = await v('GET', `${m}/key/k2`);
    assert.equal(r.json.data.key_type, 'ed25519');
    assert.match(r.json.data.subject_key_id, /^[0-9a-f]{2}(:[0-9a-f]{2}){19}$/);
    assert.deepEqual((await v('GET', `${m}/config/keys`)).json.data, { default: k1 });
    r = await v('POST', `${m}/config/keys`, { body: { default: 'k2' } });
    assert.deepEqual(r.json.data, { default: k2 });
    r = await v('POST', `${m}/key/k2`, { body: { key_name: 'renamed' } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.data.key_name, 'renamed');
    assert.equal((await v('GET', `${m}/key/default`)).json.data.key_name, 'renamed');
    r = await v('POST', `${m}/key/renamed`, { body: { key_name: 'k1' } });
    assert.equal(r.status, 400);
    r = await v('GET', `${m}/key/missing`);
    assert.equal(r.status, 400);
    assert.deepEqual(r.json, { errors: ['unable to find PKI key for reference: missing'] });
    r = await v('POST', `${m}/config/keys`, { body: { default: 'missing' } });
    assert.equal(r.status, 400);
  });
});
