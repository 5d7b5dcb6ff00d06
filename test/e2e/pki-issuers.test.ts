import { before, it } from 'node:test';
import assert from 'node:assert/strict';
import { dbKinds } from '../support/test-db.js';
import { describeWithServer } from '../support/test-server.js';
import { vaultClient } from './vault-http.js';
import { keyMatchesCert, openssl, verifyChain, x509Text } from './pki-issuers-openssl.js';

const ROOT_FIELDS = [
  'certificate',
  'expiration',
  'issuer_id',
  'issuer_name',
  'issuing_ca',
  'key_id',
  'key_name',
  'serial_number',
];
const SERIAL = /^[0-9a-f]{2}(:[0-9a-f]{2}){0,19}$/;

/** The 8192-bit RSA key made on the first database, imported on the others instead of generating another. */
let rsa8192KeyPem = '';

describeWithServer('pki root generation and authority information', (server, kind) => {
  let v: ReturnType<typeof vaultClient>;
  let n = 0;
  /** A fresh mount per test so tests stay independent. */
  const mount = async (): Promise<string> => {
    const path = `pki${++n}`;
    const r = await v('POST', `sys/mounts/${path}`, { body: { type: 'pki', config: { max_lease_ttl: '87600h' } } });
    assert.equal(r.status, 204, r.text);
    return path;
  };
  before(async () => {
    v = vaultClient(server.url, server.rootToken);
  });

  it('generates an internal root with every subject field and shows it in issuers, certs and CA paths', async () => {
    const m = await mount();
    const r = await v('POST', `${m}/root/generate/internal`, {
      body: {
        common_name: 'ca.example.com',
        alt_names: 'alt.example.com,admin@example.com',
        ip_sans: '10.0.0.1',
        uri_sans: 'spiffe://example.com/ca',
        other_sans: '1.3.6.1.4.1.311.20.2.3;UTF8:ca@example.com',
        ou: 'Ops',
        organization: 'Example Inc',
        country: 'NL',
        locality: 'Amsterdam',
        province: 'NH',
        street_address: 'Main 1',
        postal_code: '1000AA',
        serial_number: 'SN-1',
        ttl: '87600h',
        key_type: 'ec',
        key_bits: 384,
        max_path_length: 2,
        permitted_dns_domains: 'example.com,.example.org',
        issuer_name: 'root-a',
        key_name: 'root-key',
      },
    });
    assert.equal(r.status, 200, r.text);
    assert.match(r.contentType, /^application\/json/);
    const d = r.json.data;
    assert.deepEqual(Object.keys(d).sort(), ROOT_FIELDS);
    assert.match(d.serial_number, SERIAL);
    assert.equal(d.issuer_name, 'root-a');
    assert.equal(d.key_name, 'root-key');
    assert.equal(d.certificate, d.issuing_ca);
    assert.ok(!d.certificate.endsWith('\n'));
    assert.ok(
      Array.isArray(r.json.warnings) && r.json.warnings.some((w: string) => /config\/urls/.test(w)),
      'warns about missing AIA',
    );

    const text = x509Text(d.certificate);
    assert.match(text, /Subject: .*CN=ca\.example\.com/);
    assert.match(text, /O=Example Inc/);
    assert.match(text, /OU=Ops/);
    assert.match(text, /C=NL/);
    assert.match(text, /serialNumber=SN-1/);
    assert.match(
      text,
      new RegExp(
        String.raw`DNS:ca\.example\.com, DNS:alt\.example\.com, email:admin@example\.com, IP Address:10\.0\.0\.1, ` +
          String.raw`URI:spiffe:\/\/example\.com\/ca`,
      ),
    );
    assert.match(text, /CA:TRUE, pathlen:2/);
    assert.match(text, /Certificate Sign, CRL Sign/);
    assert.match(text, /Permitted:\s+DNS:example\.com\s+DNS:\.example\.org/);
    assert.match(text, /ecdsa-with-SHA384/);
    assert.match(text, /NIST CURVE: P-384/);
    const notAfter = Date.parse(/Not After : (.+)/.exec(text)![1]!);
    assert.ok(Math.abs(notAfter / 1000 - d.expiration) < 2);
    assert.ok(Math.abs(notAfter - Date.now() - 87600 * 3600 * 1000) < 120_000);
    verifyChain(d.certificate, [d.certificate]);
    const serialHex = openssl(['x509', '-noout', '-serial'], d.certificate).trim().split('=')[1]!.toLowerCase();
    assert.equal(BigInt(`0x${d.serial_number.replaceAll(':', '')}`), BigInt(`0x${serialHex}`));

    // Unauthenticated views of the issuer.
    let x = await v('LIST', `${m}/issuers`, { token: undefined });
    assert.equal(x.status, 200, x.text);
    assert.deepEqual(x.json.data.keys, [d.issuer_id]);
    assert.deepEqual(x.json.data.key_info[d.issuer_id], {
      issuer_name: 'root-a',
      is_default: true,
      key_id: d.key_id,
      serial_number: d.serial_number,
    });
    x = await v('GET', `${m}/issuer/root-a/json`, { token: undefined });
    assert.equal(x.status, 200);
    assert.deepEqual(x.json.data, {
      issuer_id: d.issuer_id,
      issuer_name: 'root-a',
      certificate: d.certificate,
      ca_chain: [d.certificate],
    });
    x = await v('GET', `${m}/issuer/${d.issuer_id}/pem`, { token: undefined });
    assert.equal(x.status, 200);
    assert.equal(x.contentType, 'application/pem-certificate-chain');
    assert.equal(x.text.trim(), d.certificate);
    const der = await fetch(`${server.url}/v1/${m}/issuer/default/der`);
    assert.equal(der.headers.get('content-type'), 'application/pkix-cert');
    assert.match(x509Text(Buffer.from(await der.arrayBuffer())), /CN=ca\.example\.com/);
    const caDer = await fetch(`${server.url}/v1/${m}/ca`);
    assert.equal(caDer.status, 200);
    assert.equal(caDer.headers.get('content-type'), 'application/pkix-cert');
    assert.equal(
      Buffer.from(await caDer.arrayBuffer()).toString('base64'),
      d.certificate.split('\n').slice(1, -1).join(''),
    );
    x = await v('GET', `${m}/ca/pem`, { token: undefined });
    assert.equal(x.contentType, 'application/pem-certificate-chain');
    assert.equal(x.text.trim(), d.certificate);
    x = await v('GET', `${m}/ca_chain`, { token: undefined });
    assert.equal(x.contentType, 'application/pkix-cert');
    assert.equal(x.text, `${d.certificate}\n`);
    x = await v('GET', `${m}/cert/ca`, { token: undefined });
    assert.deepEqual(x.json.data, { certificate: d.certificate, revocation_time: 0, revocation_time_rfc3339: '' });
    x = await v('GET', `${m}/cert/ca_chain`, { token: undefined });
    assert.deepEqual(x.json.data, {
      certificate: `${d.certificate}\n`,
      ca_chain: `${d.certificate}\n`,
      revocation_time: 0,
      revocation_time_rfc3339: '',
    });
    // The root is a stored certificate, readable by serial with either separator.
    x = await v('GET', `${m}/cert/${d.serial_number.replaceAll(':', '-').toUpperCase()}`, { token: undefined });
    assert.equal(x.status, 200, x.text);
    assert.deepEqual(x.json.data, { certificate: d.certificate, revocation_time: 0, revocation_time_rfc3339: '' });
    // hvac URL-quotes the colons.
    x = await v('GET', `${m}/cert/${encodeURIComponent(d.serial_number)}`, { token: undefined });
    assert.equal(x.status, 200, x.text);
    x = await v('GET', `${m}/cert/${d.serial_number}/raw/pem`, { token: undefined });
    assert.equal(x.contentType, 'application/pem-certificate-chain');
    assert.equal(x.text.trim(), d.certificate);
    x = await v('LIST', `${m}/certs`);
    assert.deepEqual(x.json.data.keys, [d.serial_number]);
    x = await v('LIST', `${m}/certs`, { token: undefined });
    assert.equal(x.status, 403);

    // Authenticated issuer read: every field of the reference.
    x = await v('GET', `${m}/issuer/default`);
    assert.equal(x.status, 200, x.text);
    assert.deepEqual(x.json.data, {
      issuer_id: d.issuer_id,
      issuer_name: 'root-a',
      key_id: d.key_id,
      certificate: d.certificate,
      ca_chain: [d.certificate],
      manual_chain: null,
      leaf_not_after_behavior: 'err',
      usage: 'crl-signing,issuing-certificates,ocsp-signing,read-only',
      revocation_signature_algorithm: 'ECDSAWithSHA384',
      revoked: false,
      issuing_certificates: [],
      crl_distribution_points: [],
      ocsp_servers: [],
      delta_crl_distribution_points: [],
    });
    x = await v('GET', `${m}/issuer/default`, { token: undefined });
    assert.equal(x.status, 403);
    x = await v('GET', `${m}/key/root-key`);
    assert.equal(x.json.data.key_type, 'ec');
    assert.equal(x.json.data.key_id, d.key_id);
    const ski = /Subject Key Identifier:\s+([0-9A-F:]+)/.exec(text)![1]!.toLowerCase();
    assert.equal(x.json.data.subject_key_id, ski);
    x = await v('GET', `${m}/config/keys`);
    assert.deepEqual(x.json.data, { default: d.key_id });
    x = await v('GET', `${m}/config/issuers`);
    assert.deepEqual(x.json.data, { default: d.issuer_id, default_follows_latest_issuer: false });
  });

  it('generates roots for each key type and size with the right signature algorithm', async () => {
    const cases: { body: Record<string, unknown>; key: RegExp; sig: RegExp; alg: string }[] = [
      { body: {}, key: /Public-Key: \(2048 bit\)/, sig: /sha256WithRSAEncryption/, alg: 'SHA256WithRSA' },
      {
        body: { key_type: 'rsa', key_bits: 3072, signature_bits: 384 },
        key: /Public-Key: \(3072 bit\)/,
        sig: /sha384WithRSAEncryption/,
        alg: 'SHA384WithRSA',
      },
      {
        body: { key_type: 'rsa', key_bits: 4096, signature_bits: 512, use_pss: true },
        key: /Public-Key: \(4096 bit\)/,
        sig: /rsassaPss/,
        alg: 'SHA512WithRSAPSS',
      },
      { body: { key_type: 'ec', key_bits: 224 }, key: /P-224/, sig: /ecdsa-with-SHA256/, alg: 'ECDSAWithSHA256' },
      { body: { key_type: 'ec' }, key: /P-256/, sig: /ecdsa-with-SHA256/, alg: 'ECDSAWithSHA256' },
      { body: { key_type: 'ec', key_bits: 521 }, key: /P-521/, sig: /ecdsa-with-SHA512/, alg: 'ECDSAWithSHA512' },
      { body: { key_type: 'ed25519', key_bits: 4096 }, key: /ED25519/, sig: /ED25519/, alg: 'PureEd25519' },
    ];
    for (const c of cases) {
      const m = await mount();
      const r = await v('POST', `${m}/root/generate/internal`, {
        body: { common_name: `root ${JSON.stringify(c.body)}`, ttl: '24h', ...c.body },
      });
      assert.equal(r.status, 200, r.text);
      const text = x509Text(r.json.data.certificate);
      assert.match(text, c.key, JSON.stringify(c.body));
      assert.match(text, c.sig, JSON.stringify(c.body));
      assert.doesNotMatch(text, /Subject Alternative Name/, 'a CN that is no host name is not a SAN');
      verifyChain(r.json.data.certificate, [r.json.data.certificate]);
      const i = await v('GET', `${m}/issuer/default`);
      assert.equal(i.json.data.revocation_signature_algorithm, c.alg);
      const k = await v('GET', `${m}/key/default`);
      assert.equal(k.json.data.key_type, (c.body.key_type as string | undefined) ?? 'rsa');
    }
  });

  it('RSA 8192: an 8192-bit root issues on each database (made once, its key imported on the next)', async () => {
    const m = await mount();
    let r;
    if (kind === dbKinds()[0]) {
      // 8192-bit generation takes seconds: it happens once per run, and the key is kept for the next databases.
      r = await v('POST', `${m}/root/generate/exported`, {
        body: { common_name: 'RSA 8192 Root', key_type: 'rsa', key_bits: 8192, ttl: '24h' },
      });
      assert.equal(r.status, 200, r.text);
      rsa8192KeyPem = r.json.data.private_key as string;
      assert.ok(keyMatchesCert(rsa8192KeyPem, r.json.data.certificate));
    } else {
      assert.ok(rsa8192KeyPem, 'the first database made the 8192-bit key');
      r = await v('POST', `${m}/keys/import`, { body: { pem_bundle: rsa8192KeyPem, key_name: 'rsa8192' } });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.data.key_type, 'rsa');
      r = await v('POST', `${m}/root/generate/existing`, {
        body: { common_name: 'RSA 8192 Root', key_ref: 'rsa8192', ttl: '24h' },
      });
      assert.equal(r.status, 200, r.text);
    }
    const rootPem = r.json.data.certificate as string;
    const text = x509Text(rootPem);
    assert.match(text, /Public-Key: \(8192 bit\)/);
    assert.match(text, /Signature Algorithm: sha256WithRSAEncryption/);
    assert.match(verifyChain(rootPem, [rootPem]), /OK/);
    assert.equal(openssl(['x509', '-noout', '-pubkey'], rootPem), openssl(['pkey', '-pubout'], rsa8192KeyPem));
    r = await v('GET', `${m}/issuer/default`);
    assert.equal(r.json.data.revocation_signature_algorithm, 'SHA256WithRSA');
    assert.equal((await v('GET', `${m}/key/default`)).json.data.key_type, 'rsa');

    r = await v('POST', `${m}/roles/leaf`, { body: { allow_any_name: true, key_type: 'ec' } });
    assert.equal(r.status, 200, r.text);
    r = await v('POST', `${m}/issue/leaf`, { body: { common_name: 'leaf.rsa8192.test', ttl: '1h' } });
    assert.equal(r.status, 200, r.text);
    const leaf = r.json.data.certificate as string;
    assert.equal(r.json.data.issuing_ca, rootPem);
    assert.match(x509Text(leaf), /Signature Algorithm: sha256WithRSAEncryption/);
    assert.match(verifyChain(leaf, [rootPem]), /OK/);
    assert.ok(keyMatchesCert(r.json.data.private_key, leaf));
  });

  it('returns the key once for exported roots in pem, der and pem_bundle, pkcs8 on request', async () => {
    let m = await mount();
    let r = await v('POST', `${m}/issuers/generate/root/exported`, {
      body: { common_name: 'Exported EC', key_type: 'ec' },
    });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(Object.keys(r.json.data).sort(), [...ROOT_FIELDS, 'private_key', 'private_key_type'].sort());
    assert.equal(r.json.data.private_key_type, 'ec');
    assert.match(r.json.data.private_key, /^-----BEGIN EC PRIVATE KEY-----\n[\s\S]+-----END EC PRIVATE KEY-----$/);
    assert.ok(keyMatchesCert(r.json.data.private_key, r.json.data.certificate));

    m = await mount();
    r = await v('POST', `${m}/root/generate/exported`, {
      body: { common_name: 'DER RSA', format: 'der', private_key_format: 'pkcs8' },
    });
    assert.equal(r.status, 200, r.text);
    assert.doesNotMatch(r.json.data.certificate, /BEGIN/);
    assert.match(x509Text(Buffer.from(r.json.data.certificate, 'base64')), /CN=DER RSA/);
    const certPem = openssl(['x509', '-inform', 'DER'], Buffer.from(r.json.data.certificate, 'base64')).trim();
    assert.equal(r.json.data.private_key_type, 'rsa');
    assert.ok(keyMatchesCert(r.json.data.private_key, certPem, true));
    assert.match(
      openssl(['asn1parse', '-inform', 'DER'], Buffer.from(r.json.data.private_key, 'base64')),
      /rsaEncryption/,
      'PKCS#8 wraps the algorithm',
    );

    m = await mount();
    r = await v('POST', `${m}/root/generate/exported`, {
      body: { common_name: 'Bundle', key_type: 'ed25519', format: 'pem_bundle' },
    });
    assert.equal(r.status, 200, r.text);
    assert.match(r.json.data.private_key, /^-----BEGIN PRIVATE KEY-----/);
    assert.equal(r.json.data.certificate, `${r.json.data.private_key}\n${r.json.data.issuing_ca}`);

    r = await v('POST', `${m}/root/generate/internal`, { body: { common_name: 'Internal' } });
    assert.equal(r.json.data.private_key, undefined);
    // The second root does not replace the first: both are issuers, the first stays default.
    const l = await v('LIST', `${m}/issuers`);
    assert.equal(l.json.data.keys.length, 2);
    assert.equal(l.json.data.key_info[r.json.data.issuer_id].is_default, false);
  });

  it('generates a root from an existing key, with not_after and the mount TTL cap', async () => {
    const m = await mount();
    const k = await v('POST', `${m}/keys/generate/internal`, { body: { key_type: 'ec', key_name: 'shared' } });
    assert.equal(k.status, 200, k.text);
    let r = await v('POST', `${m}/root/generate/existing`, {
      body: { common_name: 'From key', key_ref: 'shared', not_after: '2036-01-01T00:00:00Z' },
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.data.key_id, k.json.data.key_id);
    assert.match(x509Text(r.json.data.certificate), /Not After : Jan\s+1 00:00:00 2036 GMT/);
    // IEEE 802.1AR devices use the "no well-defined expiration" value.
    r = await v('POST', `${m}/root/generate/internal`, {
      body: { common_name: 'Forever', key_type: 'ec', not_after: '9999-12-31T23:59:59Z' },
    });
    assert.equal(r.status, 200, r.text);
    assert.match(x509Text(r.json.data.certificate), /Not After : Dec 31 23:59:59 9999 GMT/);
    verifyChain(r.json.data.certificate, [r.json.data.certificate]);
    r = await v('POST', `${m}/root/generate/internal`, {
      body: { common_name: 'Too long', key_type: 'ec', ttl: '100000h' },
    });
    assert.equal(r.status, 200, r.text);
    assert.ok(r.json.warnings.some((w: string) => /maximum/.test(w)));
    assert.ok(Math.abs(r.json.data.expiration - (Date.now() / 1000 + 87600 * 3600)) < 120);
  });

  it('refuses bad input with 400 and a reason, storing nothing', async () => {
    const m = await mount();
    const bad: [string, Record<string, unknown>, RegExp][] = [
      ['root/generate/internal', { common_name: 'x', key_type: 'dsa' }, /unknown key type/],
      ['root/generate/internal', { common_name: 'x', key_bits: 1024 }, /2048/],
      ['root/generate/internal', { common_name: 'x', key_bits: 1000000 }, /bit length/],
      [
        'root/generate/internal',
        { common_name: 'x', key_type: 'ec', key_bits: 300 },
        /unsupported bit length for EC key: 300/,
      ],
      ['root/generate/internal', { common_name: 'x', key_bits: 'lots' }, /key_bits/],
      ['root/generate/internal', { common_name: 'x', signature_bits: 100 }, /signature/],
      ['root/generate/internal', { common_name: 'x', format: 'xml' }, /format/],
      ['root/generate/internal', { common_name: 'x', private_key_format: 'jks' }, /private_key_format/],
      ['root/generate/internal', { common_name: 'x', managed_key_name: 'hsm' }, /managed keys/],
      ['root/generate/internal', { common_name: 'x', issuer_name: 'default' }, /reserved/],
      ['root/generate/internal', { common_name: 'x', issuer_name: 'bad name!' }, /invalid characters/],
      ['root/generate/internal', { common_name: 'x', not_after: 'tomorrow' }, /not_after/],
      ['root/generate/internal', { common_name: 'x', ip_sans: 'not-an-ip' }, /IP/],
      ['root/generate/internal', { common_name: 'x', other_sans: 'garbage' }, /other_sans/],
      ['root/generate/kms', { common_name: 'x' }, /managed keys/],
      ['root/generate/bogus', { common_name: 'x' }, /internal/],
      ['root/generate/existing', { common_name: 'x', key_ref: 'missing' }, /unable to find PKI key/],
      ['intermediate/generate/internal', { common_name: 'x', key_type: 'ec', key_bits: 123 }, /EC/],
      ['keys/generate/internal', { key_type: 'rsa', key_bits: 1024 }, /2048/],
      ['keys/generate/kms', {}, /managed keys/],
      ['keys/import', { pem_bundle: '-----BEGIN PRIVATE KEY-----\nnot base64!\n-----END PRIVATE KEY-----' }, /base64/],
    ];
    for (const [path, body, reason] of bad) {
      const r = await v('POST', `${m}/${path}`, { body });
      assert.equal(r.status, 400, `${path} ${JSON.stringify(body)}: ${r.text}`);
      assert.equal(r.contentType.split(';')[0], 'application/json');
      assert.equal(r.json.errors.length, 1);
      assert.match(r.json.errors[0], reason, `${path} ${JSON.stringify(body)}`);
    }
    assert.equal((await v('LIST', `${m}/issuers`)).status, 404);
    assert.equal((await v('LIST', `${m}/keys`)).status, 404);
    assert.equal((await v('LIST', `${m}/certs`)).status, 404);
    assert.equal((await v('GET', `${m}/config/issuers`)).json.data.default, '');
  });

  it('answers empty CA paths with 204, unknown serials with 404 and unknown issuers with 400', async () => {
    const m = await mount();
    for (const p of ['ca', 'ca/pem', 'ca_chain', 'cert/ca/raw', 'cert/0a:0b/raw']) {
      const r = await v('GET', `${m}/${p}`, { token: undefined });
      assert.equal(r.status, 204, p);
      assert.equal(r.text, '');
    }
    let r = await v('LIST', `${m}/issuers`, { token: undefined });
    assert.equal(r.status, 404);
    assert.deepEqual(r.json, { errors: [] });
    r = await v('GET', `${m}/cert/0a:0b`, { token: undefined });
    assert.equal(r.status, 404);
    assert.deepEqual(r.json, { errors: [] });
    r = await v('GET', `${m}/cert/zz`, { token: undefined });
    assert.equal(r.status, 400);
    r = await v('GET', `${m}/cert/ca`, { token: undefined });
    assert.equal(r.status, 400);
    assert.deepEqual(r.json, { errors: ['no default issuer currently configured'] });
    r = await v('GET', `${m}/issuer/nope/json`, { token: undefined });
    assert.equal(r.status, 400);
    assert.deepEqual(r.json, { errors: ['unable to find PKI issuer for reference: nope'] });
    r = await v('GET', `${m}/issuer/default`);
    assert.equal(r.status, 400);
    assert.deepEqual(r.json, { errors: ['no default issuer currently configured'] });
  });

  it('stores config/urls and config/cluster per mount and puts the URLs into new roots', async () => {
    const m = await mount();
    let r = await v('GET', `${m}/config/urls`);
    assert.deepEqual(r.json.data, {
      issuing_certificates: [],
      crl_distribution_points: [],
      ocsp_servers: [],
      delta_crl_distribution_points: [],
      enable_templating: false,
    });
    r = await v('POST', `${m}/config/urls`, {
      body: { issuing_certificates: 'http://pki.example.com/ca', ocsp_servers: ['http://ocsp.example.com'] },
    });
    assert.equal(r.status, 200, r.text);
    r = await v('POST', `${m}/config/urls`, { body: { crl_distribution_points: 'http://pki.example.com/crl' } });
    assert.deepEqual(r.json.data, {
      issuing_certificates: ['http://pki.example.com/ca'],
      crl_distribution_points: ['http://pki.example.com/crl'],
      ocsp_servers: ['http://ocsp.example.com'],
      delta_crl_distribution_points: [],
      enable_templating: false,
    });
    r = await v('POST', `${m}/config/urls`, { body: { ocsp_servers: 'not a url' } });
    assert.equal(r.status, 400);
    assert.match(
      r.json.errors[0],
      /invalid URL found in Authority Information Access \(AIA\) parameter ocsp_servers: not a url/,
    );
    r = await v('POST', `${m}/config/urls`, { body: { ocsp_servers: '' } });
    assert.deepEqual(r.json.data.ocsp_servers, []);

    r = await v('POST', `${m}/config/cluster`, {
      body: { path: 'https://vault-a.example.com/v1/' + m, aia_path: 'http://cdn.example.com/' + m },
    });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual((await v('GET', `${m}/config/cluster`)).json.data, {
      path: `https://vault-a.example.com/v1/${m}`,
      aia_path: `http://cdn.example.com/${m}`,
    });
    r = await v('POST', `${m}/config/cluster`, { body: { path: 'relative/path' } });
    assert.equal(r.status, 400);

    r = await v('POST', `${m}/root/generate/internal`, { body: { common_name: 'With AIA', key_type: 'ec' } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.warnings, null);
    let text = x509Text(r.json.data.certificate);
    assert.match(text, /CA Issuers - URI:http:\/\/pki\.example\.com\/ca/);
    assert.match(text, /Full Name:\s+URI:http:\/\/pki\.example\.com\/crl/);

    r = await v('POST', `${m}/config/urls`, {
      body: { enable_templating: true, issuing_certificates: '{{cluster_aia_path}}/issuer/{{issuer_id}}/der' },
    });
    assert.equal(r.status, 200, r.text);
    r = await v('POST', `${m}/root/generate/internal`, { body: { common_name: 'Templated', key_type: 'ec' } });
    assert.equal(r.status, 200, r.text);
    text = x509Text(r.json.data.certificate);
    assert.ok(text.includes(`CA Issuers - URI:http://cdn.example.com/${m}/issuer/${r.json.data.issuer_id}/der`), text);

    const other = await mount();
    assert.deepEqual((await v('GET', `${other}/config/urls`)).json.data.issuing_certificates, []);
  });
});
