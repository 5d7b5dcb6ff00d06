import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { describeWithServer } from '../support/test-server.js';
import {
  keyMatchesCert,
  openssl,
  opensslRootCa,
  signIntermediateCsr,
  verifyChain,
  x509Text,
} from './pki-issuers-openssl.js';
import { SERIAL, makeServerClient, mountWithRoot, pemToDer, role, storedSerials } from './pki-issue-helpers.js';
import type { Vault } from './pki-issue-helpers.js';

const ISSUE_FIELDS = [
  'ca_chain',
  'certificate',
  'expiration',
  'issuing_ca',
  'private_key',
  'private_key_type',
  'serial_number',
];

describeWithServer('pki issue', (server) => {
  let v: Vault;
  before(async () => {
    v = makeServerClient(server);
  });

  it('issues an EC certificate openssl verifies, with SANs, usages and the config/urls authority info', async () => {
    const { mount, rootPem } = await mountWithRoot(v);
    await role(v, mount, 'web', {
      allowed_domains: 'example.com',
      allow_subdomains: true,
      key_type: 'ec',
      ttl: '1h',
      organization: 'Example',
      ou: 'Web',
    });
    const r = await v('POST', `${mount}/issue/web`, {
      body: {
        common_name: 'www.example.com',
        alt_names: 'api.example.com,ops@mail.example.com',
        ip_sans: '10.0.0.7,::1',
      },
    });
    assert.equal(r.status, 200, r.text);
    assert.match(r.contentType, /^application\/json/);
    const d = r.json.data;
    assert.deepEqual(Object.keys(d).sort(), ISSUE_FIELDS);
    assert.match(r.json.lease_id, new RegExp(`^${mount}/issue/web/[1-9A-Za-z]{24}$`));
    assert.ok(r.json.lease_duration >= 3598 && r.json.lease_duration <= 3600, String(r.json.lease_duration));
    assert.equal(r.json.renewable, false);
    assert.match(d.serial_number, SERIAL);
    assert.equal(d.private_key_type, 'ec');
    assert.match(d.private_key, /^-----BEGIN EC PRIVATE KEY-----/);
    assert.ok(!d.certificate.endsWith('\n'));
    assert.equal(d.issuing_ca, rootPem);
    assert.deepEqual(d.ca_chain, [rootPem]);
    assert.ok(keyMatchesCert(d.private_key, d.certificate));
    assert.match(verifyChain(d.certificate, [rootPem]), /OK/);

    const text = x509Text(d.certificate);
    assert.match(text, /Subject: CN=www\.example\.com,OU=Web,O=Example/);
    assert.match(
      text,
      new RegExp(
        String.raw`DNS:www\.example\.com, DNS:api\.example\.com, email:ops@mail\.example\.com, IP Address:` +
          String.raw`10\.0\.0\.7, IP Address:0:0:0:0:0:0:0:1`,
      ),
    );
    assert.match(text, /X509v3 Key Usage: critical\s+Digital Signature, Key Encipherment, Key Agreement/);
    assert.match(text, /X509v3 Extended Key Usage:\s+TLS Web Server Authentication, TLS Web Client Authentication/);
    assert.doesNotMatch(text, /Basic Constraints/);
    assert.match(text, new RegExp(`OCSP - URI:http://ca\\.test/v1/${mount}/ocsp`));
    assert.match(text, new RegExp(`CA Issuers - URI:http://ca\\.test/v1/${mount}/ca`));
    assert.match(text, new RegExp(`CRL Distribution Points:\\s+Full Name:\\s+URI:http://ca\\.test/v1/${mount}/crl`));
    const expiry = Number(d.expiration);
    const now = Date.now() / 1000;
    assert.ok(expiry > now + 3500 && expiry <= now + 3601, `role ttl 1h: ${expiry - now}`);

    // Stored: listed, readable without a token, with no revocation.
    assert.ok((await storedSerials(v, mount)).includes(d.serial_number));
    const c = await v('GET', `${mount}/cert/${d.serial_number}`, { token: undefined });
    assert.equal(c.status, 200);
    assert.equal(c.json.data.certificate, d.certificate);
    assert.equal(c.json.data.revocation_time, 0);
    assert.equal(c.json.data.revocation_time_rfc3339, '');
    const dashed = await v('GET', `${mount}/cert/${d.serial_number.replaceAll(':', '-').toUpperCase()}`, {
      token: undefined,
    });
    assert.equal(dashed.json.data.certificate, d.certificate);
  });

  it('issues RSA keys from the pool in every private key format and output format', async () => {
    const { mount, rootPem } = await mountWithRoot(v);
    await role(v, mount, 'rsa', { allowed_domains: 'example.com', allow_bare_domains: true });
    let r = await v('POST', `${mount}/issue/rsa`, { body: { common_name: 'example.com' } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.data.private_key_type, 'rsa');
    assert.match(r.json.data.private_key, /^-----BEGIN RSA PRIVATE KEY-----/);
    assert.match(x509Text(r.json.data.certificate), /Public-Key: \(2048 bit\)/);
    assert.ok(keyMatchesCert(r.json.data.private_key, r.json.data.certificate));
    // As Vault answers (docs/vault-compatibility.md): expiration a number, warnings null when empty.
    assert.equal(typeof r.json.data.expiration, 'number');
    assert.equal(r.json.warnings, null);

    r = await v('POST', `${mount}/issue/rsa`, {
      body: { common_name: 'example.com', format: 'der', private_key_format: 'pkcs8' },
    });
    assert.equal(r.status, 200, r.text);
    const pkcs8Der = Buffer.from(r.json.data.private_key, 'base64');
    assert.match(
      openssl(['asn1parse', '-inform', 'DER'], pkcs8Der),
      /OBJECT\s+:rsaEncryption/,
      'base64 of a PKCS#8 DER',
    );
    assert.ok(
      keyMatchesCert(
        r.json.data.private_key,
        openssl(['x509', '-inform', 'DER'], Buffer.from(r.json.data.certificate, 'base64')).trim(),
        true,
      ),
    );

    r = await v('POST', `${mount}/issue/rsa`, { body: { common_name: 'example.com', private_key_format: 'pkcs8' } });
    assert.match(r.json.data.private_key, /^-----BEGIN PRIVATE KEY-----/);
    assert.ok(keyMatchesCert(r.json.data.private_key, r.json.data.certificate));

    r = await v('POST', `${mount}/issue/rsa`, { body: { common_name: 'example.com', format: 'der' } });
    const d = r.json.data;
    assert.doesNotMatch(d.certificate, /BEGIN/);
    assert.match(
      openssl(['x509', '-inform', 'DER', '-noout', '-subject'], Buffer.from(d.certificate, 'base64')),
      /CN ?= ?example\.com/,
    );
    assert.deepEqual(Buffer.from(d.issuing_ca, 'base64'), pemToDer(rootPem));
    assert.deepEqual(Buffer.from(d.ca_chain[0], 'base64'), pemToDer(rootPem));
    assert.ok(
      keyMatchesCert(
        d.private_key,
        openssl(['x509', '-inform', 'DER'], Buffer.from(d.certificate, 'base64')).trim(),
        true,
      ),
    );

    r = await v('POST', `${mount}/issue/rsa`, {
      body: { common_name: 'example.com', format: 'pem_bundle', private_key_format: 'pkcs8' },
    });
    const b = r.json.data;
    assert.match(b.private_key, /^-----BEGIN PRIVATE KEY-----/);
    const blocks = (b.certificate as string).split(/(?=-----BEGIN )/);
    assert.equal(blocks.length, 2, 'on issue the bundle is the key and the certificate, without the chain');
    assert.match(blocks[0]!, /^-----BEGIN RSA PRIVATE KEY-----/, 'the bundle keeps the native key encoding');
    assert.ok(keyMatchesCert(blocks[0]!.trim(), blocks[1]!.trim()));
    assert.match(verifyChain(blocks[1]!.trim(), [rootPem]), /OK/);
    assert.deepEqual(b.ca_chain, [rootPem]);

    r = await v('POST', `${mount}/issue/rsa`, { body: { common_name: 'example.com', format: 'p12' } });
    assert.equal(r.status, 400);
    assert.match(r.json.errors[0], /unknown format "p12"/);
  });

  it('honours ip/uri/other SANs, user ids, exclude_cn_from_sans, subject serial and policy identifiers', async () => {
    const { mount, rootPem } = await mountWithRoot(v);
    await role(v, mount, 'all', {
      allowed_domains: 'example.com',
      allow_subdomains: true,
      key_type: 'ec',
      allowed_uri_sans: 'spiffe://example.com/*',
      allowed_other_sans: '1.3.6.1.4.1.311.20.2.3;UTF8:*@example.com',
      allowed_user_ids: 'alice,svc-*',
      allowed_serial_numbers: 'SN-*',
      policy_identifiers: '1.2.3.4',
      basic_constraints_valid_for_non_ca: true,
      server_flag: false,
      client_flag: true,
      code_signing_flag: true,
      ext_key_usage_oids: '1.3.6.1.4.1.99.1',
      key_usage: 'DigitalSignature',
    });
    const r = await v('POST', `${mount}/issue/all`, {
      body: {
        common_name: 'a.example.com',
        exclude_cn_from_sans: true,
        alt_names: 'b.example.com',
        uri_sans: 'spiffe://example.com/svc/a',
        other_sans: '1.3.6.1.4.1.311.20.2.3;UTF8:me@example.com',
        user_ids: 'alice,svc-7',
        serial_number: 'SN-42',
      },
    });
    assert.equal(r.status, 200, r.text);
    const text = x509Text(r.json.data.certificate);
    assert.match(
      text,
      new RegExp(
        String.raw`Subject: CN=a\.example\.com,serialNumber=SN-42,UID=alice,UID=svc-7|Subject: UID=svc-7,` +
          String.raw`UID=alice,serialNumber=SN-42,CN=a\.example\.com`,
      ),
    );
    assert.match(
      text,
      new RegExp(
        String.raw`X509v3 Subject Alternative Name:\s+DNS:b\.example\.com, URI:spiffe:\/\/example\.com\/svc\/a, ` +
          String.raw`othername: (UPN|msUPN|1\.3\.6\.1\.4\.1\.311\.20\.2\.3)[:;]`,
      ),
    );
    assert.doesNotMatch(text, /DNS:a\.example\.com/);
    assert.match(text, /CA:FALSE/);
    assert.match(text, /Policy: 1\.2\.3\.4/);
    assert.match(text, /TLS Web Client Authentication, Code Signing, 1\.3\.6\.1\.4\.1\.99\.1/);
    assert.match(text, /X509v3 Key Usage: critical\s+Digital Signature\n/);
    assert.match(verifyChain(r.json.data.certificate, [rootPem]), /OK/);
  });

  it('applies ttl, not_after, role max_ttl, not_before_duration and the issuer leaf_not_after_behavior', async () => {
    const { mount, rootPem } = await mountWithRoot(v, { ttl: '240h' });
    await role(v, mount, 'ttl', { allow_any_name: true, key_type: 'ec', max_ttl: '48h', not_before_duration: '5m' });
    const now = Date.now() / 1000;
    let r = await v('POST', `${mount}/issue/ttl`, { body: { common_name: 'x.test', ttl: '2h' } });
    assert.ok(Math.abs(r.json.data.expiration - (now + 7200)) < 5);
    const nb =
      Date.parse(openssl(['x509', '-noout', '-startdate'], r.json.data.certificate).replace('notBefore=', '').trim()) /
      1000;
    assert.ok(Math.abs(nb - (now - 300)) < 5, `not_before_duration 5m: ${now - nb}`);

    const stored = await storedSerials(v, mount);
    r = await v('POST', `${mount}/issue/ttl`, { body: { common_name: 'x.test', ttl: '100h' } });
    assert.equal(r.status, 400);
    assert.equal(
      r.json.errors[0],
      'ttl of 360000s (100h0m0s) is longer than the maximum of 172800s (48h0m0s) allowed by the ' +
        `role's max_ttl (role "ttl"); ask for at most 48h0m0s, or raise the role's max_ttl`,
    );
    assert.deepEqual(await storedSerials(v, mount), stored, 'nothing stored');
    // Without a ttl the mount default (768h here) is clamped to the role's max_ttl, with Vault's warning.
    r = await v('POST', `${mount}/issue/ttl`, { body: { common_name: 'x.test' } });
    assert.equal(r.status, 200, r.text);
    assert.ok(Math.abs(r.json.data.expiration - (now + 48 * 3600)) < 5, 'clamped to max_ttl');
    assert.ok(r.json.warnings.some((w: string) => /is longer than permitted maxTTL/.test(w)));

    const na = new Date((Math.floor(now) + 86400) * 1000).toISOString().replace('.000', '');
    r = await v('POST', `${mount}/issue/ttl`, { body: { common_name: 'x.test', not_after: na } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.data.expiration, Date.parse(na) / 1000);

    r = await v('POST', `${mount}/issue/ttl`, { body: { common_name: 'x.test', not_after: na, ttl: '1h' } });
    assert.equal(r.status, 400);
    assert.match(r.json.errors[0], /Either ttl or not_after/);

    // Beyond the issuer (240h): err by default, then truncate, then permit.
    const far = new Date((Math.floor(now) + 400 * 3600) * 1000).toISOString().replace('.000', '');
    const before = await storedSerials(v, mount);
    r = await v('POST', `${mount}/issue/ttl`, { body: { common_name: 'x.test', not_after: far } });
    assert.equal(r.status, 400);
    assert.match(r.json.errors[0], /beyond the expiration of the CA certificate/);
    assert.deepEqual(await storedSerials(v, mount), before, 'nothing stored');
    const rootExpiry =
      Date.parse(openssl(['x509', '-noout', '-enddate'], rootPem).replace('notAfter=', '').trim()) / 1000;
    const patch = (b: string) =>
      v('PATCH', `${mount}/issuer/default`, {
        body: { leaf_not_after_behavior: b },
        headers: { 'content-type': 'application/merge-patch+json' },
      });
    // An issuer change is seen by issuance within the signing-context window (a second): ask until it shows.
    const issueFarUntil = async (expiration: number) => {
      const deadline = Date.now() + 20_000;
      for (;;) {
        const res = await v('POST', `${mount}/issue/ttl`, { body: { common_name: 'x.test', not_after: far } });
        assert.equal(res.status, 200, res.text);
        if (res.json.data.expiration === expiration) return;
        assert.ok(Date.now() < deadline, `expiration still ${res.json.data.expiration}, expected ${expiration}`);
        await new Promise((done) => setTimeout(done, 50));
      }
    };
    assert.equal((await patch('truncate')).status, 200);
    await issueFarUntil(rootExpiry);
    assert.equal((await patch('permit')).status, 200);
    await issueFarUntil(Date.parse(far) / 1000);
  });

  it('leases: each certificate of a role has one, generate_lease or not; revoking the lease revokes it', async () => {
    const { mount, rootPem } = await mountWithRoot(v);
    await role(v, mount, 'plain', { allow_any_name: true, key_type: 'ec', ttl: '1h' });
    await role(v, mount, 'leased', { allow_any_name: true, key_type: 'ec', generate_lease: true, ttl: '2h' });
    for (const [name, ttl] of [
      ['plain', 3600],
      ['leased', 7200],
    ] as const) {
      const r = await v('POST', `${mount}/issue/${name}`, { body: { common_name: 'l.test' } });
      assert.equal(r.status, 200, r.text);
      assert.match(r.json.lease_id, new RegExp(`^${mount}/issue/${name}/[1-9A-Za-z]{24}$`));
      assert.equal(r.json.renewable, false);
      assert.ok(r.json.lease_duration >= ttl - 2 && r.json.lease_duration <= ttl, String(r.json.lease_duration));
      const lookup = await v('PUT', 'sys/leases/lookup', { body: { lease_id: r.json.lease_id } });
      assert.equal(lookup.status, 200, lookup.text);
      assert.equal(lookup.json.data.renewable, false);
      assert.equal(lookup.json.data.id, r.json.lease_id);
      const revoke = await v('PUT', 'sys/leases/revoke', { body: { lease_id: r.json.lease_id } });
      assert.equal(revoke.status, 204, revoke.text);
      const c = await v('GET', `${mount}/cert/${r.json.data.serial_number}`, { token: undefined });
      assert.ok(c.json.data.revocation_time > 0);
      assert.match(c.json.data.revocation_time_rfc3339, /^\d{4}-\d{2}-\d{2}T/);
      assert.equal((await v('PUT', 'sys/leases/lookup', { body: { lease_id: r.json.lease_id } })).status, 400);
      assert.match(verifyChain(r.json.data.certificate, [rootPem]), /OK/);
    }
  });

  it('concurrent issues share commits and each gets its own lease', async () => {
    const { mount } = await mountWithRoot(v);
    await role(v, mount, 'many', { allow_any_name: true, key_type: 'ec', ttl: '1h' });
    const rs = await Promise.all(
      Array.from({ length: 24 }, (_, i) => v('POST', `${mount}/issue/many`, { body: { common_name: `c${i}.test` } })),
    );
    for (const r of rs) assert.equal(r.status, 200, r.text);
    const ids = rs.map((r) => (r.json.lease_id as string).slice(`${mount}/issue/many/`.length)).sort();
    const listed = await v('LIST', `sys/leases/lookup/${mount}/issue/many/`);
    assert.equal(listed.status, 200, listed.text);
    assert.deepEqual(listed.json.data.keys, ids);
    const serials = await storedSerials(v, mount);
    for (const r of rs) assert.ok(serials.includes(r.json.data.serial_number));
  });

  it('no_store: the certificate is not stored but its lease is; revoking the lease records it revoked', async () => {
    const { mount, rootPem } = await mountWithRoot(v);
    await role(v, mount, 'ephemeral', { allow_any_name: true, key_type: 'ec', no_store: true, ttl: '1h' });
    const before = await storedSerials(v, mount);
    const r = await v('POST', `${mount}/issue/ephemeral`, { body: { common_name: 'e.test' } });
    assert.equal(r.status, 200, r.text);
    assert.match(r.json.lease_id, new RegExp(`^${mount}/issue/ephemeral/[1-9A-Za-z]{24}$`));
    assert.ok(r.json.lease_duration >= 3598 && r.json.lease_duration <= 3600, String(r.json.lease_duration));
    assert.deepEqual(await storedSerials(v, mount), before);
    assert.equal((await v('GET', `${mount}/cert/${r.json.data.serial_number}`)).status, 404);
    assert.equal((await v('PUT', 'sys/leases/lookup', { body: { lease_id: r.json.lease_id } })).status, 200);

    assert.equal((await v('PUT', 'sys/leases/revoke', { body: { lease_id: r.json.lease_id } })).status, 204);
    const c = await v('GET', `${mount}/cert/${r.json.data.serial_number}`, { token: undefined });
    assert.equal(c.status, 200, c.text);
    assert.equal(c.json.data.certificate, r.json.data.certificate);
    assert.ok(c.json.data.revocation_time > 0);
    assert.match(verifyChain(c.json.data.certificate, [rootPem]), /OK/);
    // Revoking again (another node, a retry) changes nothing.
    assert.equal((await v('PUT', 'sys/leases/revoke', { body: { lease_id: r.json.lease_id } })).status, 204);
    assert.equal(
      (await v('GET', `${mount}/cert/${r.json.data.serial_number}`, { token: undefined })).json.data.revocation_time,
      c.json.data.revocation_time,
    );
  });

  it('no_store keeps certificates out of storage; cert_metadata is stored unless no_store_metadata', async () => {
    const { mount } = await mountWithRoot(v);
    await role(v, mount, 'ephemeral', { allow_any_name: true, key_type: 'ec', no_store: true });
    await role(v, mount, 'meta', { allow_any_name: true, key_type: 'ec' });
    await role(v, mount, 'nometa', { allow_any_name: true, key_type: 'ec', no_store_metadata: true });
    const before = await storedSerials(v, mount);
    let r = await v('POST', `${mount}/issue/ephemeral`, { body: { common_name: 'e.test' } });
    assert.equal(r.status, 200);
    assert.deepEqual(await storedSerials(v, mount), before);
    assert.equal((await v('GET', `${mount}/cert/${r.json.data.serial_number}`)).status, 404);

    const meta = Buffer.from('{"owner":"team-a"}').toString('base64');
    r = await v('POST', `${mount}/issue/meta`, { body: { common_name: 'm.test', cert_metadata: meta } });
    assert.equal(r.status, 200, r.text);
    const m = await v('GET', `${mount}/cert-metadata/${r.json.data.serial_number}`);
    assert.equal(m.status, 200, m.text);
    assert.equal(m.json.data.cert_metadata, meta);
    assert.equal(m.json.data.role, 'meta');
    assert.equal(m.json.data.serial_number, r.json.data.serial_number);
    assert.deepEqual((await v('LIST', `${mount}/cert-metadata`)).json.data.keys, [r.json.data.serial_number]);

    const count = (await storedSerials(v, mount)).length;
    r = await v('POST', `${mount}/issue/nometa`, { body: { common_name: 'n.test', cert_metadata: meta } });
    assert.equal(r.status, 400);
    assert.match(r.json.errors[0], /no_store_metadata/);
    r = await v('POST', `${mount}/issue/meta`, { body: { common_name: 'n.test', cert_metadata: 'not base64!' } });
    assert.equal(r.status, 400);
    assert.equal((await storedSerials(v, mount)).length, count);
  });

  it('issuer/:ref/issue/:role signs with the path issuer, else role issuer_ref; remove_roots_from_chain', async () => {
    const { mount, rootPem } = await mountWithRoot(v, { issuerName: 'first' });
    const second = await v('POST', `${mount}/root/generate/internal`, {
      body: { common_name: 'Second Root', key_type: 'ec', issuer_name: 'second', ttl: '8760h' },
    });
    assert.equal(second.status, 200, second.text);
    const secondPem = second.json.data.certificate as string;
    await role(v, mount, 'r', { allow_any_name: true, key_type: 'ec' });
    await role(v, mount, 'r2', { allow_any_name: true, key_type: 'ec', issuer_ref: 'second' });
    let r = await v('POST', `${mount}/issue/r`, { body: { common_name: 'a.test' } });
    assert.equal(r.json.data.issuing_ca, rootPem);
    r = await v('POST', `${mount}/issuer/second/issue/r`, { body: { common_name: 'a.test' } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.data.issuing_ca, secondPem);
    assert.match(verifyChain(r.json.data.certificate, [secondPem]), /OK/);
    r = await v('POST', `${mount}/issue/r2`, { body: { common_name: 'a.test', remove_roots_from_chain: true } });
    assert.equal(r.json.data.issuing_ca, secondPem);
    assert.equal(r.json.data.ca_chain, undefined, 'only a root in the chain, so none is left');
    r = await v('POST', `${mount}/issuer/nope/issue/r`, { body: { common_name: 'a.test' } });
    assert.equal(r.status, 400);
  });

  it('serials are unique across issuers of a mount, exactly 20 bytes and positive, as openssl reads them', async () => {
    const { mount, rootPem } = await mountWithRoot(v, { issuerName: 'first' });
    const second = await v('POST', `${mount}/issuers/generate/root/internal`, {
      body: { common_name: 'Second Serial Root', key_type: 'ec', issuer_name: 'second', ttl: '8760h' },
    });
    assert.equal(second.status, 200, second.text);
    const roots = { first: rootPem, second: second.json.data.certificate as string };
    await role(v, mount, 'r', { allow_any_name: true, key_type: 'ec' });
    const per = 12;
    const answers = await Promise.all(
      Array.from({ length: 2 * per }, async (_, i) => {
        const issuer = i % 2 === 0 ? 'first' : 'second';
        const r = await v('POST', `${mount}/issuer/${issuer}/issue/r`, { body: { common_name: `s${i}.test` } });
        assert.equal(r.status, 200, r.text);
        return { issuer, data: r.json.data as { serial_number: string; certificate: string } };
      }),
    );
    const serials = answers.map((a) => a.data.serial_number);
    assert.equal(new Set(serials).size, serials.length, 'no serial repeats, within or across issuers');
    for (const { issuer, data } of answers) {
      const serial = data.serial_number;
      assert.match(serial, /^[0-9a-f]{2}(:[0-9a-f]{2}){19}$/, `40 hex digits in colon form: ${serial}`);
      const first = parseInt(serial.slice(0, 2), 16);
      assert.ok(first > 0 && first < 0x80, `positive with a non-zero first byte: ${serial}`);
      assert.equal(
        openssl(['x509', '-noout', '-serial'], data.certificate).trim(),
        `serial=${serial.replace(/:/g, '').toUpperCase()}`,
      );
      const text = x509Text(data.certificate);
      assert.doesNotMatch(text, /Serial Number:.*Negative/);
      assert.match(text, new RegExp(`Serial Number:\\s*\\n\\s*${serial}\\s*\\n`));
      assert.match(verifyChain(data.certificate, [roots[issuer as keyof typeof roots]]), /OK/, `${issuer}: ${serial}`);
    }
    const listed = await storedSerials(v, mount);
    for (const s of serials) assert.ok(listed.includes(s), `${s} is stored`);
  });

  it('issues from an intermediate: ca_chain holds it and the root; remove_roots_from_chain drops root', async () => {
    const mount = `pki-int-${process.pid}`;
    assert.equal(
      (await v('POST', `sys/mounts/${mount}`, { body: { type: 'pki', config: { max_lease_ttl: '87600h' } } })).status,
      204,
    );
    const csr = await v('POST', `${mount}/intermediate/generate/internal`, {
      body: { common_name: 'Issuing CA', key_type: 'ec' },
    });
    assert.equal(csr.status, 200, csr.text);
    const root = opensslRootCa('Outside Root');
    const intPem = signIntermediateCsr(csr.json.data.csr, root.certPem, root.keyPem, { days: 30 });
    const set = await v('POST', `${mount}/intermediate/set-signed`, {
      body: { certificate: `${intPem}\n${root.certPem}` },
    });
    assert.equal(set.status, 200, set.text);
    await role(v, mount, 'leaf', { allow_any_name: true, key_type: 'ec', ttl: '1h' });
    let r = await v('POST', `${mount}/issue/leaf`, { body: { common_name: 'leaf.test' } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.data.issuing_ca, intPem);
    assert.deepEqual(r.json.data.ca_chain, [intPem, root.certPem]);
    assert.match(verifyChain(r.json.data.certificate, [root.certPem], [intPem]), /OK/);
    r = await v('POST', `${mount}/issue/leaf`, {
      body: { common_name: 'leaf.test', remove_roots_from_chain: true, format: 'pem_bundle' },
    });
    assert.deepEqual(r.json.data.ca_chain, [intPem]);
    const blocks = (r.json.data.certificate as string).split(/(?=-----BEGIN )/).map((b) => b.trim());
    assert.equal(blocks.length, 2, 'key and certificate: on issue the bundle carries no CA');
    assert.ok(keyMatchesCert(blocks[0]!, blocks[1]!));
    assert.match(verifyChain(blocks[1]!, [root.certPem], [intPem]), /OK/);
  });

  it('RSA issuers honour signature_bits and use_pss', async () => {
    const { mount, rootPem } = await mountWithRoot(v, { keyType: 'rsa', keyBits: 2048 });
    await role(v, mount, 's384', { allow_any_name: true, key_type: 'ec', signature_bits: 384 });
    await role(v, mount, 'pss', { allow_any_name: true, key_type: 'ec', use_pss: true });
    let r = await v('POST', `${mount}/issue/s384`, { body: { common_name: 'a.test' } });
    assert.match(x509Text(r.json.data.certificate), /Signature Algorithm: sha384WithRSAEncryption/);
    assert.match(verifyChain(r.json.data.certificate, [rootPem]), /OK/);
    r = await v('POST', `${mount}/issue/pss`, { body: { common_name: 'a.test' } });
    assert.match(x509Text(r.json.data.certificate), /Signature Algorithm: rsassaPss/);
    assert.match(verifyChain(r.json.data.certificate, [rootPem]), /OK/);
    r = await v('POST', `${mount}/issue/s384`, { body: { common_name: 'a.test', signature_bits: 512 } });
    assert.match(x509Text(r.json.data.certificate), /sha512WithRSAEncryption/);
  });

  it('denies names outside the role and bad input with a 400 that names the value, storing nothing', async () => {
    const { mount } = await mountWithRoot(v);
    await role(v, mount, 'strict', {
      allowed_domains: 'example.com',
      allow_subdomains: true,
      key_type: 'ec',
      allow_ip_sans: false,
    });
    await role(v, mount, 'any', { key_type: 'any', allow_any_name: true });
    const before = await storedSerials(v, mount);
    const cases: [string, Record<string, unknown>, RegExp][] = [
      ['strict', { common_name: 'evil.org' }, /common name evil\.org not allowed by this role/],
      [
        'strict',
        { common_name: 'a.example.com', alt_names: 'b.example.com,evil.org' },
        /subject alternate name evil\.org not allowed/,
      ],
      ['strict', { common_name: 'a.example.com', alt_names: 'me@evil.org' }, /email address me@evil\.org not allowed/],
      [
        'strict',
        { common_name: 'a.example.com', ip_sans: '10.0.0.1' },
        /IP Subject Alternative Names are not allowed.*10\.0\.0\.1/,
      ],
      [
        'strict',
        { common_name: 'a.example.com', uri_sans: 'spiffe://x/y' },
        /URI Subject Alternative Names are not allowed.*spiffe:\/\/x\/y/,
      ],
      ['strict', { common_name: 'a.example.com', other_sans: '1.2.3;UTF8:x' }, /other SAN OID 1\.2\.3 not allowed/],
      ['strict', { common_name: 'a.example.com', user_ids: 'bob' }, /user_id bob is not allowed/],
      ['strict', { common_name: 'a.example.com', serial_number: 'SN1' }, /serial_number SN1 not allowed/],
      ['strict', {}, /common_name field is required/],
      ['strict', { common_name: 'a.example.com', ttl: 'soon' }, /field "ttl"/],
      ['strict', { common_name: 'a.example.com', not_after: '2030-01-01' }, /failed to parse not_after/],
      ['strict', { common_name: 'a.example.com', private_key_format: 'jks' }, /unknown private_key_format "jks"/],
      ['strict', { common_name: 'a.example.com', signature_bits: 100 }, /unsupported hash signature algorithm: 100/],
      ['any', { common_name: 'a.test' }, /role key type "any" not allowed for issuing/],
      ['missing', { common_name: 'a.test' }, /unknown role: missing/],
    ];
    for (const [roleName, body, re] of cases) {
      const r = await v('POST', `${mount}/issue/${roleName}`, { body });
      assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
      assert.match(r.contentType, /^application\/json/);
      assert.match(r.json.errors[0], re);
    }
    assert.deepEqual(await storedSerials(v, mount), before);
    const r = await v('DELETE', `${mount}/issue/strict`);
    assert.equal(r.status, 405);
  });

  it('a role change or deletion takes effect on the next request', async () => {
    const { mount } = await mountWithRoot(v);
    await role(v, mount, 'c', { allowed_domains: 'example.com', allow_bare_domains: true, key_type: 'ec' });
    assert.equal((await v('POST', `${mount}/issue/c`, { body: { common_name: 'example.com' } })).status, 200);
    await role(v, mount, 'c', { allowed_domains: 'example.org', allow_bare_domains: true, key_type: 'ec' });
    let r = await v('POST', `${mount}/issue/c`, { body: { common_name: 'example.com' } });
    assert.equal(r.status, 400);
    r = await v('PATCH', `${mount}/roles/c`, {
      body: { allowed_domains: 'example.com' },
      headers: { 'content-type': 'application/merge-patch+json' },
    });
    assert.equal(r.status, 200);
    assert.equal((await v('POST', `${mount}/issue/c`, { body: { common_name: 'example.com' } })).status, 200);
    assert.equal((await v('DELETE', `${mount}/roles/c`)).status, 204);
    r = await v('POST', `${mount}/issue/c`, { body: { common_name: 'example.com' } });
    assert.equal(r.status, 400);
    assert.deepEqual(r.json.errors, ['unknown role: c']);
  });

  it('LIST certs pages with after and limit; serials are unique', async () => {
    const { mount } = await mountWithRoot(v);
    await role(v, mount, 'p', { allow_any_name: true, key_type: 'ec' });
    const issued = await Promise.all(
      Array.from({ length: 12 }, (_, i) => v('POST', `${mount}/issue/p`, { body: { common_name: `h${i}.test` } })),
    );
    for (const r of issued) assert.equal(r.status, 200, r.text);
    const all = await storedSerials(v, mount);
    assert.equal(all.length, 13, 'the root and twelve leaves');
    assert.equal(new Set(all).size, 13);
    assert.deepEqual([...all].sort(), all);
    const page1 = await v('LIST', `${mount}/certs?limit=5`);
    assert.deepEqual(page1.json.data.keys, all.slice(0, 5));
    const page2 = await v('GET', `${mount}/certs?list=true&limit=5&after=${all[4]}`);
    assert.deepEqual(page2.json.data.keys, all.slice(5, 10));
  });
});
