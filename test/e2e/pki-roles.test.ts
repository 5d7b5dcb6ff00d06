import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { describeWithServer } from '../support/test-server.js';
import { vaultClient } from './vault-http.js';

/** Every field of a role read and its default (reference 8.2/8.3) for a role written with no fields. */
const DEFAULT_ROLE = {
  allow_any_name: false,
  allow_bare_domains: false,
  allow_glob_domains: false,
  allow_ip_sans: true,
  allow_localhost: true,
  allow_subdomains: false,
  allow_token_displayname: false,
  allow_wildcard_certificates: true,
  allowed_domains: [],
  allowed_domains_template: false,
  allowed_other_sans: [],
  allowed_serial_numbers: [],
  allowed_uri_sans: [],
  allowed_uri_sans_template: false,
  allowed_user_ids: [],
  basic_constraints_valid_for_non_ca: false,
  client_flag: true,
  cn_validations: ['email', 'hostname'],
  code_signing_flag: false,
  country: [],
  email_protection_flag: false,
  enforce_hostnames: true,
  ext_key_usage: [],
  ext_key_usage_oids: [],
  generate_lease: false,
  issuer_ref: 'default',
  key_bits: 2048,
  key_type: 'rsa',
  key_usage: ['DigitalSignature', 'KeyAgreement', 'KeyEncipherment'],
  locality: [],
  max_ttl: 0,
  no_store: false,
  no_store_metadata: false,
  not_after: '',
  not_before_duration: 30,
  organization: [],
  ou: [],
  policy_identifiers: [],
  postal_code: [],
  province: [],
  require_cn: true,
  serial_number_source: 'json-csr',
  server_flag: true,
  signature_bits: 256,
  street_address: [],
  ttl: 0,
  use_csr_common_name: true,
  use_csr_sans: true,
  use_pss: false,
};

describeWithServer('pki roles', (server) => {
  let v: ReturnType<typeof vaultClient>;
  let n = 0;
  const mount = async (): Promise<string> => {
    const path = `roles${++n}`;
    const r = await v('POST', `sys/mounts/${path}`, { body: { type: 'pki' } });
    assert.equal(r.status, 204, r.text);
    return path;
  };
  before(async () => {
    v = vaultClient(server.url, server.rootToken);
  });

  it('writes a role with every default and reads it back in the exact shape', async () => {
    const m = await mount();
    const w = await v('POST', `${m}/roles/plain`, { body: {} });
    assert.equal(w.status, 200, w.text);
    assert.deepEqual(w.json.data, DEFAULT_ROLE);
    const r = await v('GET', `${m}/roles/plain`);
    assert.equal(r.status, 200);
    assert.match(r.contentType, /^application\/json/);
    assert.deepEqual(r.json.data, DEFAULT_ROLE);
    assert.equal(r.json.lease_id, '');
    assert.equal(r.json.renewable, false);
  });

  it('coerces Vault input types and resolves key bits per key type', async () => {
    const m = await mount();
    const w = await v('POST', `${m}/roles/web`, {
      form: {
        allowed_domains: 'example.com,example.org',
        allow_subdomains: 'true',
        ttl: '1h',
        max_ttl: '72h',
        key_type: 'ec',
        not_before_duration: '2m',
        key_usage: 'DigitalSignature',
      },
    });
    assert.equal(w.status, 200, w.text);
    const d = w.json.data;
    assert.deepEqual(d.allowed_domains, ['example.com', 'example.org']);
    assert.equal(d.allow_subdomains, true);
    assert.equal(d.ttl, 3600);
    assert.equal(d.max_ttl, 259200);
    assert.equal(d.not_before_duration, 120);
    assert.deepEqual([d.key_type, d.key_bits, d.signature_bits], ['ec', 256, 0]);
    assert.deepEqual(d.key_usage, ['DigitalSignature']);
    const ed = await v('POST', `${m}/roles/ed`, { body: { key_type: 'ed25519', key_bits: 4096 } });
    assert.deepEqual([ed.json.data.key_bits, ed.json.data.signature_bits], [0, 0]);
    const any = await v('POST', `${m}/roles/any`, { body: { key_type: 'any' } });
    assert.equal(any.json.data.key_bits, 0);
  });

  it('POST replaces the whole role; PATCH changes only what it sends', async () => {
    const m = await mount();
    await v('POST', `${m}/roles/r`, {
      body: { allowed_domains: ['example.com'], allow_bare_domains: true, ttl: 60 },
    });
    let r = await v('POST', `${m}/roles/r`, { body: { ttl: 120 } });
    assert.deepEqual(r.json.data.allowed_domains, []);
    assert.equal(r.json.data.allow_bare_domains, false);
    await v('POST', `${m}/roles/r`, { body: { allowed_domains: ['example.com'], ttl: 60 } });
    r = await v('PATCH', `${m}/roles/r`, {
      body: { ttl: '5m' },
      headers: { 'content-type': 'application/merge-patch+json' },
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.data.ttl, 300);
    assert.deepEqual(r.json.data.allowed_domains, ['example.com']);
    // null removes a field in a merge patch: it takes its default again.
    await v('PATCH', `${m}/roles/r`, {
      body: { allow_localhost: false, not_before_duration: '1m', key_type: 'ec' },
      headers: { 'content-type': 'application/merge-patch+json' },
    });
    r = await v('PATCH', `${m}/roles/r`, {
      body: { allow_localhost: null, not_before_duration: null, key_type: null, ttl: '6m' },
      headers: { 'content-type': 'application/merge-patch+json' },
    });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(
      [
        r.json.data.allow_localhost,
        r.json.data.not_before_duration,
        r.json.data.key_type,
        r.json.data.key_bits,
        r.json.data.ttl,
      ],
      [true, 30, 'rsa', 2048, 360],
    );
    assert.deepEqual(r.json.data.allowed_domains, ['example.com']);
    r = await v('PATCH', `${m}/roles/r`, { body: { ttl: '5m' } });
    assert.equal(r.status, 415);
    r = await v('PATCH', `${m}/roles/missing`, {
      body: { ttl: 1 },
      headers: { 'content-type': 'application/merge-patch+json' },
    });
    assert.equal(r.status, 400);
    assert.deepEqual(r.json, { errors: ['Unable to fetch role entry to patch'] });
  });

  it('lists roles (404 when none, paginated with after/limit) and deletes them', async () => {
    const m = await mount();
    let r = await v('LIST', `${m}/roles`);
    assert.equal(r.status, 404);
    assert.deepEqual(r.json, { errors: [] });
    for (const name of ['c', 'a', 'b']) await v('POST', `${m}/roles/${name}`, { body: {} });
    r = await v('LIST', `${m}/roles`);
    assert.deepEqual(r.json.data.keys, ['a', 'b', 'c']);
    r = await v('GET', `${m}/roles?list=true&after=a&limit=1`);
    assert.deepEqual(r.json.data.keys, ['b']);
    r = await v('DELETE', `${m}/roles/b`);
    assert.equal(r.status, 204);
    r = await v('GET', `${m}/roles/b`);
    assert.equal(r.status, 404);
    assert.deepEqual(r.json, { errors: [] });
    r = await v('LIST', `${m}/roles`);
    assert.deepEqual(r.json.data.keys, ['a', 'c']);
  });

  it('warns about generate_lease (off with no_store), an unknown issuer, and extra keys', async () => {
    const m = await mount();
    let r = await v('POST', `${m}/roles/l`, { body: { generate_lease: true, name: 'l', bogus: 1 } });
    assert.equal(r.json.data.generate_lease, true);
    const warnings: string[] = r.json.warnings;
    assert.ok(warnings.some((w) => /generate_lease/.test(w)));
    assert.ok(warnings.some((w) => /no issuing certificate configured/.test(w)));
    assert.ok(warnings.includes('Endpoint ignored these unrecognized parameters: [bogus]'));
    assert.ok(warnings.some((w) => /replaced the value of these parameters.*\[name\]/.test(w)));
    r = await v('POST', `${m}/roles/l`, { body: { generate_lease: true, no_store: true } });
    assert.equal(r.json.data.generate_lease, false);
    assert.equal(r.json.data.no_store, true);
  });

  it('refuses invalid roles with a 400 naming the problem and stores nothing', async () => {
    const m = await mount();
    const bad: [Record<string, unknown>, RegExp][] = [
      [{ ttl: '2h', max_ttl: '1h' }, /"ttl" value must be less than "max_ttl" value/],
      [{ key_type: 'rsa', key_bits: 1024 }, /RSA keys < 2048 bits/],
      [{ key_type: 'ec', key_bits: 300 }, /unsupported bit length for EC key: 300/],
      [{ key_type: 'dsa' }, /unknown key type "dsa"/],
      [{ signature_bits: 128 }, /unsupported hash signature algorithm: 128/],
      [{ cn_validations: 'disabled,email' }, /cannot specify disabled/],
      [{ cn_validations: 'dns' }, /unknown type: dns/],
      [{ ext_key_usage_oids: 'not-an-oid' }, /not-an-oid/],
      [{ allowed_other_sans: '1.2.3;DER:x' }, /only utf8 other SANs/],
      [{ serial_number_source: 'csr' }, /serial_number_source/],
      [{ ttl: 'forever' }, /error converting input "forever" for field "ttl"/],
      [{ allow_any_name: 'maybe' }, /field "allow_any_name"/],
      [{ not_after: 'tomorrow' }, /not_after/],
      [{ policy_identifiers: 'x.y' }, /policy_identifiers/],
    ];
    for (const [body, re] of bad) {
      const r = await v('POST', `${m}/roles/bad`, { body });
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.match(r.json.errors[0], re);
    }
    assert.equal((await v('GET', `${m}/roles/bad`)).status, 404);
    for (const name of ['a%20b', '-x', 'x-', '.x', 'a%40b']) {
      const r = await v('POST', `${m}/roles/${name}`, { body: {} });
      assert.equal(r.status, 400, name);
      assert.match(r.json.errors[0], /invalid role name/);
    }
    for (const name of ['a', 'a.b-c_d', 'A9'])
      assert.equal((await v('POST', `${m}/roles/${name}`, { body: {} })).status, 200, name);
  });

  it('needs a token and the ACL capability', async () => {
    const m = await mount();
    let r = await v('GET', `${m}/roles/x`, { token: undefined });
    assert.equal(r.status, 403);
    await v('PUT', 'sys/policy/roles-read', { body: { policy: `path "${m}/roles/*" { capabilities = ["read"] }` } });
    const t = await v('POST', 'auth/token/create', { body: { policies: ['roles-read'] } });
    const token = t.json.auth.client_token as string;
    await v('POST', `${m}/roles/x`, { body: {} });
    r = await v('GET', `${m}/roles/x`, { token });
    assert.equal(r.status, 200);
    r = await v('POST', `${m}/roles/x`, { token, body: {} });
    assert.equal(r.status, 403);
    assert.deepEqual(r.json, { errors: ['permission denied'] });
  });
});
