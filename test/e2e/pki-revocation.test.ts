import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { describeWithServer } from '../support/test-server.js';
import { openssl, opensslRootCa, signIntermediateCsr } from './pki-issuers-openssl.js';
import { makeServerClient, mountWithRoot, opensslCsr, role } from './pki-issue-helpers.js';
import type { Vault } from './pki-issue-helpers.js';
import { defaultCrl, fetchRaw, issue, opensslSerial, verifiedCrl } from './pki-revocation-helpers.js';

/** Colon form of a certificate's serial, read by openssl. */
const opensslSerialOf = (pem: string): string =>
  openssl(['x509', '-noout', '-serial'], pem)
    .trim()
    .replace(/^serial=/, '')
    .toLowerCase()
    .replace(/^(00)+(?=..)/, '')
    .replace(/(..)(?!$)/g, '$1:');

const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

describeWithServer('pki revocation', (server, kind) => {
  let v: Vault;
  before(async () => {
    v = makeServerClient(server);
  });

  async function setup(opts: { keyType?: string } = {}) {
    const m = await mountWithRoot(v, opts);
    await role(v, m.mount, 'web', {
      allow_any_name: true,
      key_type: opts.keyType ?? 'ec',
      ttl: '1h',
      no_store: false,
    });
    return m;
  }

  it('revokes by serial in any separator form and case; it is on every CRL form, verified by openssl', async () => {
    const { mount, rootPem, issuerId } = await setup();
    const before = await defaultCrl(server.url, mount, rootPem);
    assert.deepEqual(before.serials, []);
    const a = await issue(v, mount, 'web', 'a.example.com');
    const b = await issue(v, mount, 'web', 'b.example.com');
    const c = await issue(v, mount, 'web', 'c.example.com');

    const t0 = Math.floor(Date.now() / 1000);
    let r = await v('POST', `${mount}/revoke`, { body: { serial_number: a.serial } });
    assert.equal(r.status, 200, r.text);
    assert.match(r.contentType, /^application\/json/);
    assert.deepEqual(Object.keys(r.json.data).sort(), ['revocation_time', 'revocation_time_rfc3339', 'state']);
    assert.equal(r.json.data.state, 'revoked');
    assert.equal(r.json.warnings, null);
    assert.ok(Math.abs(r.json.data.revocation_time - t0) <= 2);
    assert.match(r.json.data.revocation_time_rfc3339, RFC3339);
    assert.equal(Math.floor(Date.parse(r.json.data.revocation_time_rfc3339) / 1000), r.json.data.revocation_time);
    const firstTime = r.json.data.revocation_time_rfc3339;
    r = await v('POST', `${mount}/revoke`, { body: { serial_number: b.serial.replace(/:/g, '-').toUpperCase() } });
    assert.equal(r.status, 200, r.text);
    r = await v('POST', `${mount}/revoke`, { form: { serial_number: c.serial.toUpperCase() } });
    assert.equal(r.status, 200, r.text);

    // Revoking again answers with the first revocation.
    r = await v('POST', `${mount}/revoke`, { body: { serial_number: a.serial } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.data.revocation_time_rfc3339, firstTime);

    const want = [a, b, c].map((x) => opensslSerial(x.serial)).sort();
    const der = await defaultCrl(server.url, mount, rootPem);
    assert.deepEqual([...der.serials].sort(), want);
    assert.ok(der.crlNumber > before.crlNumber, `${der.crlNumber} > ${before.crlNumber}`);
    assert.equal(der.deltaBase, undefined);
    assert.equal((der.nextUpdate.getTime() - der.lastUpdate.getTime()) / 1000, 72 * 3600);

    const raw = await fetchRaw(server.url, `${mount}/crl`);
    assert.equal(raw.contentType, 'application/pkix-crl');
    const pem = await fetchRaw(server.url, `${mount}/crl/pem`);
    assert.equal(pem.contentType, 'application/x-pem-file');
    assert.match(pem.body.toString(), /^-----BEGIN X509 CRL-----\n/);
    assert.deepEqual(verifiedCrl(pem.body.toString(), rootPem).serials.sort(), want);

    // JSON forms: cert/crl has the PEM in `certificate`; issuer/:ref/crl in `crl`. No token needed.
    const certCrl = await v('GET', `${mount}/cert/crl`, { token: undefined });
    assert.equal(certCrl.status, 200, certCrl.text);
    assert.equal(certCrl.json.data.certificate, pem.body.toString());
    for (const ref of [issuerId, 'root', 'default']) {
      const j = await v('GET', `${mount}/issuer/${ref}/crl`, { token: undefined });
      assert.equal(j.status, 200, j.text);
      assert.deepEqual(Object.keys(j.json.data), ['crl']);
      assert.equal(j.json.data.crl, pem.body.toString());
      const d = await fetchRaw(server.url, `${mount}/issuer/${ref}/crl/der`);
      assert.equal(d.contentType, 'application/pkix-crl');
      assert.ok(d.body.equals(raw.body));
      const p = await fetchRaw(server.url, `${mount}/issuer/${ref}/crl/pem`);
      assert.equal(p.contentType, 'application/x-pem-file');
      assert.equal(p.body.toString(), pem.body.toString());
    }
    // No delta CRLs unless enabled.
    assert.equal((await fetchRaw(server.url, `${mount}/crl/delta`)).status, 204);
    assert.equal((await v('GET', `${mount}/cert/delta-crl`, { token: undefined })).json.data.certificate, '');

    // Serving does not rebuild: the same bytes twice.
    assert.ok((await fetchRaw(server.url, `${mount}/crl`)).body.equals(raw.body));

    // The certificate reads show the revocation.
    const cert = await v('GET', `${mount}/cert/${a.serial}`, { token: undefined });
    assert.equal(cert.json.data.revocation_time_rfc3339, firstTime);
    const listed = await v('LIST', `${mount}/certs/revoked`);
    assert.equal(listed.status, 200, listed.text);
    assert.deepEqual(listed.json.data.keys, [a, b, c].map((x) => x.serial).sort());
    const page = await v('GET', `${mount}/certs/revoked?list=true&limit=2`);
    assert.deepEqual(page.json.data.keys, listed.json.data.keys.slice(0, 2));
    const rest = await v('GET', `${mount}/certs/revoked?list=true&after=${listed.json.data.keys[1]}`);
    assert.deepEqual(rest.json.data.keys, listed.json.data.keys.slice(2));
  });

  it('refuses bad revoke input with 400 and changes nothing', async () => {
    const { mount, rootPem } = await setup();
    const a = await issue(v, mount, 'web', 'a.example.com');
    const crl0 = await defaultCrl(server.url, mount, rootPem);
    const foreign = opensslRootCa('Foreign CA');
    const root = await v('GET', `${mount}/cert/ca`, { token: undefined });
    const rootSerial = (await v('GET', `${mount}/issuer/default`)).json.data;
    const cases: [Record<string, unknown>, RegExp][] = [
      [{}, /^The serial number or certificate to revoke must be provided\.$/],
      [
        { serial_number: a.serial, certificate: a.certificate },
        /^Must provide either the certificate or the serial to revoke; not both\.$/,
      ],
      [{ serial_number: '01:02:03:04' }, /^certificate with serial 01:02:03:04 not found\.$/],
      [{ serial_number: 'zz:yy' }, /invalid serial number/],
      [{ certificate: foreign.certPem }, /unable to verify signature on presented cert/],
      [{ certificate: 'not a certificate' }, /certificate/],
      [
        { certificate: root.json.data.certificate },
        /^adding issuer \(id: [0-9a-f-]{36}\) to its own CRL is not allowed$/,
      ],
    ];
    for (const [body, msg] of cases) {
      const r = await v('POST', `${mount}/revoke`, { body });
      assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
      assert.match(r.contentType, /^application\/json/);
      assert.equal(r.json.errors.length, 1, r.text);
      assert.match(r.json.errors[0], msg);
    }
    assert.ok(rootSerial.issuer_id);
    const listed = await v('LIST', `${mount}/certs/revoked`);
    assert.equal(listed.status, 404, listed.text);
    assert.deepEqual(listed.json, { errors: [] });
    const crl1 = await defaultCrl(server.url, mount, rootPem);
    assert.equal(crl1.crlNumber, crl0.crlNumber);
    assert.deepEqual(crl1.serials, []);
  });

  it('revokes by certificate, storing a no_store certificate', async () => {
    const { mount, rootPem } = await setup();
    await role(v, mount, 'nostore', { allow_any_name: true, key_type: 'ec', ttl: '1h', no_store: true });
    const a = await issue(v, mount, 'nostore', 'ns.example.com');
    assert.equal((await v('GET', `${mount}/cert/${a.serial}`, { token: undefined })).status, 404);
    const r = await v('POST', `${mount}/revoke`, { body: { certificate: a.certificate } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.data.state, 'revoked');
    const stored = await v('GET', `${mount}/cert/${a.serial}`, { token: undefined });
    assert.equal(stored.status, 200);
    assert.equal(stored.json.data.revocation_time, r.json.data.revocation_time);
    assert.ok((await defaultCrl(server.url, mount, rootPem)).serials.includes(opensslSerial(a.serial)));
  });

  it('revoke-with-key needs the matching private key (RSA, EC, Ed25519) and refuses what revoke refuses', async () => {
    for (const keyType of ['rsa', 'ec', 'ed25519']) {
      const { mount, rootPem } = await setup();
      await role(v, mount, 'k', {
        allow_any_name: true,
        key_type: keyType,
        key_bits: keyType === 'rsa' ? 2048 : 0,
        ttl: '1h',
      });
      const a = await issue(v, mount, 'k', 'a.example.com');
      const b = await issue(v, mount, 'k', 'b.example.com');
      let r = await v('POST', `${mount}/revoke-with-key`, {
        body: { serial_number: a.serial, private_key: b.privateKey },
      });
      assert.equal(r.status, 400, r.text);
      assert.match(r.json.errors[0], /private key does not match/);
      r = await v('POST', `${mount}/revoke-with-key`, {
        body: { certificate: a.certificate, private_key: b.privateKey },
      });
      assert.equal(r.status, 400, r.text);
      r = await v('POST', `${mount}/revoke-with-key`, { body: { serial_number: a.serial } });
      assert.equal(r.status, 400, r.text);
      r = await v('POST', `${mount}/revoke-with-key`, { body: { serial_number: a.serial, private_key: 'garbage' } });
      assert.equal(r.status, 400, r.text);
      assert.deepEqual((await defaultCrl(server.url, mount, rootPem)).serials, [], keyType);

      r = await v('POST', `${mount}/revoke-with-key`, {
        body: { serial_number: a.serial, private_key: a.privateKey },
      });
      assert.equal(r.status, 200, `${keyType}: ${r.text}`);
      r = await v('POST', `${mount}/revoke-with-key`, {
        body: { certificate: b.certificate, private_key: b.privateKey },
      });
      assert.equal(r.status, 200, `${keyType}: ${r.text}`);
      assert.deepEqual(
        (await defaultCrl(server.url, mount, rootPem)).serials.sort(),
        [a, b].map((x) => opensslSerial(x.serial)).sort(),
        keyType,
      );
    }

    // Its own refusals, as revoke's: exactly one of serial_number and certificate, never an
    // issuer (an imported root whose key we hold). Each is a 400 and no CRL changes.
    const { mount, rootPem } = await setup();
    const a = await issue(v, mount, 'web', 'a.example.com');
    const imported = opensslRootCa(`Imported ${mount}`);
    let r = await v('POST', `${mount}/issuers/import/bundle`, {
      body: { pem_bundle: `${imported.keyPem}\n${imported.certPem}\n` },
    });
    assert.equal(r.status, 200, r.text);
    const importedId = r.json.data.imported_issuers[0] as string;
    const crls = async () => [
      await defaultCrl(server.url, mount, rootPem),
      await defaultCrl(server.url, mount, imported.certPem, `issuer/${importedId}/crl/der`),
    ];
    const crlsBefore = await crls();
    const cases: [Record<string, unknown>, RegExp][] = [
      [
        { serial_number: a.serial, certificate: a.certificate, private_key: a.privateKey },
        /^Must provide either the certificate or the serial to revoke; not both\.$/,
      ],
      [{ private_key: a.privateKey }, /^The serial number or certificate to revoke must be provided\.$/],
      [
        { certificate: imported.certPem, private_key: imported.keyPem },
        new RegExp(`^adding issuer \\(id: ${importedId}\\) to its own CRL is not allowed$`),
      ],
    ];
    for (const [body, msg] of cases) {
      r = await v('POST', `${mount}/revoke-with-key`, { body });
      assert.equal(r.status, 400, `${Object.keys(body).join(',')}: ${r.text}`);
      assert.equal(r.json.errors.length, 1, r.text);
      assert.match(r.json.errors[0], msg);
    }
    const crlsAfter = await crls();
    assert.deepEqual(
      crlsAfter.map((c) => c.crlNumber),
      crlsBefore.map((c) => c.crlNumber),
    );
    assert.deepEqual(
      crlsAfter.map((c) => c.serials),
      [[], []],
    );
    assert.equal((await v('GET', `${mount}/cert/${a.serial}`, { token: undefined })).json.data.revocation_time, 0);
  });

  it('a CSR-signed certificate is revoked with the key its owner kept', async () => {
    const { mount, rootPem } = await setup();
    const { csr, key } = opensslCsr('EC:P-256', '/CN=csr.example.com');
    const s = await v('POST', `${mount}/sign/web`, { body: { csr, common_name: 'csr.example.com' } });
    assert.equal(s.status, 200, s.text);
    const r = await v('POST', `${mount}/revoke-with-key`, {
      body: { serial_number: s.json.data.serial_number, private_key: key },
    });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual((await defaultCrl(server.url, mount, rootPem)).serials, [
      opensslSerial(s.json.data.serial_number),
    ]);
  });

  it('revoking a lease revokes its certificate and updates the CRL', async () => {
    const { mount, rootPem } = await setup();
    await role(v, mount, 'leased', { allow_any_name: true, key_type: 'ec', ttl: '1h', generate_lease: true });
    const r = await v('POST', `${mount}/issue/leased`, { body: { common_name: 'lease.example.com' } });
    assert.equal(r.status, 200, r.text);
    assert.notEqual(r.json.lease_id, '');
    const rv = await v('PUT', 'sys/leases/revoke', { body: { lease_id: r.json.lease_id } });
    assert.equal(rv.status, 204, rv.text);
    assert.deepEqual((await defaultCrl(server.url, mount, rootPem)).serials, [
      opensslSerial(r.json.data.serial_number),
    ]);
    const cert = await v('GET', `${mount}/cert/${r.json.data.serial_number}`, { token: undefined });
    assert.ok(cert.json.data.revocation_time > 0);
  });

  it('revokes an intermediate issuer: listed on its parent CRL, loses issuing-certificates', async () => {
    // An imported root (with its key) and an intermediate of this mount that openssl signs with it.
    const mount = `pki-rev-int-${kind}`;
    let r = await v('POST', `sys/mounts/${mount}`, { body: { type: 'pki', config: { max_lease_ttl: '87600h' } } });
    assert.equal(r.status, 204, r.text);
    const parent = opensslRootCa('Imported Root');
    r = await v('POST', `${mount}/config/ca`, { body: { pem_bundle: `${parent.keyPem}\n${parent.certPem}` } });
    assert.equal(r.status, 200, r.text);
    const rootId = r.json.data.imported_issuers[0];
    const rootPem = parent.certPem;
    r = await v('POST', `${mount}/intermediate/generate/internal`, {
      body: { common_name: 'Int CA', key_type: 'ec' },
    });
    assert.equal(r.status, 200, r.text);
    const intPem = signIntermediateCsr(r.json.data.csr, parent.certPem, parent.keyPem);
    r = await v('POST', `${mount}/intermediate/set-signed`, { body: { certificate: intPem } });
    assert.equal(r.status, 200, r.text);
    const intId = r.json.data.imported_issuers[0];
    assert.ok(intId);
    const intSerial = (await v('GET', `${mount}/issuer/${intId}/json`)).json.data;
    assert.ok(intSerial);
    const signed = { json: { data: { serial_number: opensslSerialOf(intPem), certificate: intPem } } };
    await role(v, mount, 'via-int', { allow_any_name: true, key_type: 'ec', ttl: '1h', issuer_ref: intId });
    assert.equal((await v('POST', `${mount}/issue/via-int`, { body: { common_name: 'x.example.com' } })).status, 200);

    // Not through revoke.
    r = await v('POST', `${mount}/revoke`, { body: { serial_number: signed.json.data.serial_number } });
    assert.equal(r.status, 400, r.text);
    assert.match(r.json.errors[0], new RegExp(`adding issuer \\(id: ${intId}\\) to its own CRL is not allowed`));

    r = await v('POST', `${mount}/issuer/${intId}/revoke`, { body: {} });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.data.issuer_id, intId);
    assert.equal(r.json.data.revoked, true);
    assert.ok(r.json.data.revocation_time > 0);
    assert.match(r.json.data.revocation_time_rfc3339, RFC3339);
    assert.ok(!r.json.data.usage.split(',').includes('issuing-certificates'), r.json.data.usage);
    const rootCrl = await verifiedCrl((await fetchRaw(server.url, `${mount}/issuer/${rootId}/crl/der`)).body, rootPem);
    assert.deepEqual(rootCrl.serials, [opensslSerial(signed.json.data.serial_number)]);
    // The intermediate still signs its own (empty) CRL.
    const intCrl = await fetchRaw(server.url, `${mount}/issuer/${intId}/crl/der`);
    assert.equal(intCrl.status, 200);
    assert.deepEqual(verifiedCrl(intCrl.body, signed.json.data.certificate).serials, []);
    // It issues no more.
    r = await v('POST', `${mount}/issue/via-int`, { body: { common_name: 'y.example.com' } });
    assert.equal(r.status, 400, r.text);
    // Revoking again is harmless.
    r = await v('POST', `${mount}/issuer/${intId}/revoke`, { body: {} });
    assert.equal(r.status, 200, r.text);
  });

  it('config/crl: defaults, partial writes, validation; expiry sets nextUpdate; disable empties the CRL', async () => {
    const { mount, rootPem } = await setup();
    let r = await v('GET', `${mount}/config/crl`);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json.data, {
      expiry: '72h',
      disable: false,
      ocsp_disable: false,
      ocsp_expiry: '12h',
      auto_rebuild: false,
      auto_rebuild_grace_period: '12h',
      enable_delta: false,
      delta_rebuild_interval: '15m',
      cross_cluster_revocation: false,
      unified_crl: false,
      unified_crl_on_existing_paths: false,
      max_crl_entries: 100000,
    });
    const bad: [Record<string, unknown>, RegExp][] = [
      [
        { enable_delta: true },
        /^Delta CRLs cannot be enabled when auto rebuilding is disabled as the complete CRL is always regenerated!$/,
      ],
      [
        { auto_rebuild: true, auto_rebuild_grace_period: '80h' },
        /^CRL auto-rebuilding grace period \(80h\) must be strictly shorter than CRL expiry \(72h\)$/,
      ],
      [{ ocsp_expiry: '-1h' }, /ocsp_expiry must be greater than or equal to 0/],
      [{ expiry: 'soon' }, /invalid expiry/],
      [{ unified_crl: true }, /^unified_crl can only be enabled on Vault Enterprise$/],
      [{ auto_rebuild: 'maybe' }, /auto_rebuild/],
    ];
    for (const [body, msg] of bad) {
      r = await v('POST', `${mount}/config/crl`, { body });
      assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
      assert.match(r.json.errors[0], msg);
    }
    assert.equal((await v('GET', `${mount}/config/crl`)).json.data.auto_rebuild, false);

    r = await v('POST', `${mount}/config/crl`, { body: { expiry: '48h', max_crl_entries: 0 } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.data.expiry, '48h');
    assert.equal(r.json.data.max_crl_entries, 100000);
    assert.equal(r.json.data.ocsp_expiry, '12h');
    const a = await issue(v, mount, 'web', 'a.example.com');
    assert.equal((await v('POST', `${mount}/revoke`, { body: { serial_number: a.serial } })).status, 200);
    let crl = await defaultCrl(server.url, mount, rootPem);
    assert.equal((crl.nextUpdate.getTime() - crl.lastUpdate.getTime()) / 1000, 48 * 3600);
    assert.equal(crl.serials.length, 1);

    r = await v('POST', `${mount}/config/crl`, { body: { disable: true } });
    assert.equal(r.status, 200, r.text);
    crl = await defaultCrl(server.url, mount, rootPem);
    assert.deepEqual(crl.serials, []);
    // Revocations are still recorded while disabled.
    const b = await issue(v, mount, 'web', 'b.example.com');
    assert.equal((await v('POST', `${mount}/revoke`, { body: { serial_number: b.serial } })).status, 200);
    assert.equal((await v('LIST', `${mount}/certs/revoked`)).json.data.keys.length, 2);
    r = await v('POST', `${mount}/config/crl`, { body: { disable: false } });
    assert.equal((await defaultCrl(server.url, mount, rootPem)).serials.length, 2);
  });

  it('crl/rotate builds a new number; rotate-delta without delta is a no-op warning', async () => {
    const { mount, rootPem } = await setup();
    const c1 = await defaultCrl(server.url, mount, rootPem);
    let r = await v('GET', `${mount}/crl/rotate`);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json.data, { success: true });
    const c2 = await defaultCrl(server.url, mount, rootPem);
    assert.equal(c2.crlNumber, c1.crlNumber + 1);
    r = await v('GET', `${mount}/crl/rotate-delta`);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json.warnings, [
      'requested rebuild of delta CRL when delta CRL is not enabled; this is a no-op',
    ]);
  });

  it('sign-revocation-list signs the given entries and refuses reserved extensions', async () => {
    const { mount, rootPem } = await setup();
    let r = await v('POST', `${mount}/issuer/default/sign-revocation-list`, {
      body: {
        crl_number: 42,
        next_update: '1h',
        revoked_certs: [
          { serial_number: '0a:0b', revocation_time: 1700000000 },
          { serial_number: '3c-4d-5e', revocation_time: '2024-01-02T03:04:05Z' },
        ],
      },
    });
    assert.equal(r.status, 200, r.text);
    const facts = verifiedCrl(r.json.data.crl, rootPem);
    assert.equal(facts.crlNumber, 42);
    assert.deepEqual(facts.serials, ['0A0B', '3C4D5E']);
    assert.match(facts.text, /Revocation Date: Nov 14 22:13:20 2023 GMT/);
    assert.equal((facts.nextUpdate.getTime() - facts.lastUpdate.getTime()) / 1000, 3600);
    r = await v('POST', `${mount}/issuer/default/sign-revocation-list`, {
      body: { crl_number: 7, delta_crl_base_number: 5, format: 'der' },
    });
    assert.equal(r.status, 200, r.text);
    const delta = verifiedCrl(Buffer.from(r.json.data.crl, 'base64'), rootPem);
    assert.equal(delta.deltaBase, 5);
    r = await v('POST', `${mount}/issuer/default/sign-revocation-list`, {
      body: { crl_number: 1, extensions: [{ id: '2.5.29.20', critical: false, value: 'AgEB' }] },
    });
    assert.equal(r.status, 400, r.text);
    r = await v('POST', `${mount}/issuer/default/sign-revocation-list`, { body: {} });
    assert.equal(r.status, 400, r.text);
  });

  it('ACL: the authenticated revocation paths need a token and a policy; CRL fetches need none', async () => {
    const { mount } = await setup();
    const a = await issue(v, mount, 'web', 'a.example.com');
    let r = await v('PUT', 'sys/policies/acl/reader', {
      body: { policy: `path "${mount}/cert/*" { capabilities = ["read"] }` },
    });
    assert.ok(r.status === 204 || r.status === 200, r.text);
    r = await v('POST', 'auth/token/create', { body: { policies: ['reader'] } });
    const weak = r.json.auth.client_token as string;
    for (const [method, path, body] of [
      ['POST', 'revoke', { serial_number: a.serial }],
      ['POST', 'revoke-with-key', { serial_number: a.serial, private_key: a.privateKey }],
      ['POST', 'issuer/default/revoke', {}],
      ['GET', 'config/crl', undefined],
      ['POST', 'config/crl', { expiry: '1h' }],
      ['GET', 'crl/rotate', undefined],
      ['GET', 'crl/rotate-delta', undefined],
      ['LIST', 'certs/revoked', undefined],
      ['POST', 'issuer/default/sign-revocation-list', { crl_number: 1 }],
    ] as const) {
      for (const token of [undefined, weak]) {
        const x = await v(method, `${mount}/${path}`, { token, body });
        assert.equal(x.status, 403, `${method} ${path} token=${token ? 'weak' : 'none'}: ${x.text}`);
        assert.deepEqual(x.json, { errors: ['permission denied', ...(token ? [] : ['missing client token'])] });
      }
    }
    for (const path of [
      'crl',
      'crl/pem',
      'cert/crl',
      'issuer/default/crl',
      'issuer/default/crl/der',
      'issuer/default/crl/pem',
    ]) {
      assert.equal((await fetchRaw(server.url, `${mount}/${path}`)).status, 200, path);
    }
    for (const path of ['crl/delta', 'crl/delta/pem', 'issuer/default/crl/delta/der', 'issuer/default/crl/delta/pem']) {
      assert.equal((await fetchRaw(server.url, `${mount}/${path}`)).status, 204, path);
    }
    for (const path of ['cert/delta-crl', 'issuer/default/crl/delta'])
      assert.equal((await fetchRaw(server.url, `${mount}/${path}`)).status, 200, path);
    // A policy granting revoke is enough for revoke.
    await v('PUT', 'sys/policies/acl/revoker', {
      body: { policy: `path "${mount}/revoke" { capabilities = ["update"] }` },
    });
    r = await v('POST', 'auth/token/create', { body: { policies: ['revoker'] } });
    const ok = await v('POST', `${mount}/revoke`, {
      token: r.json.auth.client_token,
      body: { serial_number: a.serial },
    });
    assert.equal(ok.status, 200, ok.text);
  });
});
