import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { describeWithServer } from '../support/test-server.js';
import { openssl, verifyChain, x509Text } from './pki-issuers-openssl.js';
import { SERIAL, makeServerClient, mountWithRoot, pemToDer, role, storedSerials } from './pki-issue-helpers.js';
import type { Vault } from './pki-issue-helpers.js';
import { csrWith, tamperedCsr, validity, verifySignedAnswer } from './pki-privileged-helpers.js';

const RESULT_FIELDS = ['ca_chain', 'certificate', 'expiration', 'issuing_ca', 'serial_number'];

const now = (): number => Date.now() / 1000;

describeWithServer('pki sign-verbatim', (server) => {
  let v: Vault;
  // CSRs made once per file: a plain one, one asking for its own usages, one asking for a CA.
  let plain: { csr: string };
  let withUsages: { csr: string };
  before(async () => {
    const raw = makeServerClient(server);
    // Every certificate this file gets signed is also checked by openssl against its chain.
    v = async (method, path, opts) => {
      const r = await raw(method, path, opts);
      if (r.status === 200 && /sign-verbatim(\/[^/]+)?$/.test(path))
        assert.match(verifySignedAnswer(r.json.data), /OK/, `${path}: openssl verify`);
      return r;
    };
    plain = csrWith('EC:P-256', '/C=US/O=Acme/OU=Ops/CN=Not A Host Name', [
      'subjectAltName=DNS:anything.invalid,IP:192.0.2.7,URI:urn:example:device:1,email:dev@nowhere.invalid',
      'certificatePolicies=1.2.3.4',
    ]);
    withUsages = csrWith('EC:P-256', '/CN=usages.example', [
      'keyUsage=critical,keyEncipherment',
      'extendedKeyUsage=clientAuth,codeSigning',
    ]);
  });

  it('without a role: signs the CSR as it is (subject, SANs, extensions), stores it and gives no lease', async () => {
    const { mount, rootPem } = await mountWithRoot(v, { mountConfig: { default_lease_ttl: '10h' } });
    const r = await v('POST', `${mount}/sign-verbatim`, { body: { csr: plain.csr } });
    assert.equal(r.status, 200, r.text);
    assert.match(r.contentType, /^application\/json/);
    assert.equal(r.json.lease_id, '');
    assert.equal(r.json.lease_duration, 0);
    const d = r.json.data;
    assert.deepEqual(Object.keys(d).sort(), RESULT_FIELDS);
    assert.match(d.serial_number, SERIAL);
    assert.equal(d.issuing_ca, rootPem);
    assert.deepEqual(d.ca_chain, [rootPem]);
    assert.match(verifyChain(d.certificate, [rootPem]), /OK/);

    const subjectDer = (args: string[], input: string): string =>
      openssl([...args, '-noout', '-subject', '-nameopt', 'RFC2253'], input);
    assert.equal(
      subjectDer(['x509'], d.certificate).replace(/^subject=/, ''),
      subjectDer(['req'], plain.csr).replace(/^subject=/, ''),
    );
    const text = x509Text(d.certificate);
    assert.match(text, /Subject: CN=Not A Host Name,OU=Ops,O=Acme,C=US/);
    assert.match(
      text,
      new RegExp(
        String.raw`X509v3 Subject Alternative Name:\s+DNS:anything\.invalid, IP Address:192\.0\.2\.7, URI:urn:` +
          String.raw`example:device:1, email:dev@nowhere\.invalid`,
      ),
    );
    assert.match(text, /X509v3 Certificate Policies:\s+Policy: 1\.2\.3\.4/);
    assert.match(
      text,
      /X509v3 Key Usage: critical\s+Digital Signature, Key Encipherment, Key Agreement\n/,
      'the default key usages',
    );
    assert.doesNotMatch(text, /Extended Key Usage|Basic Constraints/);
    const { notAfter } = validity(d.certificate);
    assert.equal(notAfter, d.expiration);
    assert.ok(Math.abs(notAfter - (now() + 10 * 3600)) < 60, 'the mount default ttl');
    assert.ok((await storedSerials(v, mount)).includes(d.serial_number));
  });

  it('key_usage, ext_key_usage and ext_key_usage_oids default what the CSR lacks, case-insensitive', async () => {
    const { mount, rootPem } = await mountWithRoot(v);
    const body = {
      key_usage: 'digitalsignature,CONTENTCOMMITMENT,NoSuchUsage',
      ext_key_usage: ['serverauth', 'TimeStamping'],
      ext_key_usage_oids: '1.2.3.4.5,1.3.6.1.4.1.99.2',
    };
    let r = await v('POST', `${mount}/sign-verbatim`, { body: { csr: plain.csr, ...body } });
    assert.equal(r.status, 200, r.text);
    let text = x509Text(r.json.data.certificate);
    assert.match(text, /X509v3 Key Usage: critical\s+Digital Signature, Non Repudiation\n/);
    assert.match(
      text,
      new RegExp(
        String.raw`X509v3 Extended Key Usage:\s+TLS Web Server Authentication, Time Stamping, 1\.2\.3\.4\.5, ` +
          String.raw`1\.3\.6\.1\.4\.1\.99\.2\n`,
      ),
    );

    r = await v('POST', `${mount}/sign-verbatim`, { body: { csr: withUsages.csr, ...body } });
    assert.equal(r.status, 200, r.text);
    text = x509Text(r.json.data.certificate);
    assert.match(text, /X509v3 Key Usage: critical\s+Key Encipherment\n/, "the CSR's own key usage wins");
    assert.match(text, /X509v3 Extended Key Usage:\s+TLS Web Client Authentication, Code Signing\n/);
    assert.match(verifyChain(r.json.data.certificate, [rootPem]), /OK/);

    r = await v('POST', `${mount}/sign-verbatim`, { body: { csr: plain.csr, key_usage: [] } });
    assert.equal(r.status, 200, r.text);
    assert.doesNotMatch(x509Text(r.json.data.certificate), /Key Usage/, 'an empty list means no key usage');

    r = await v('POST', `${mount}/sign-verbatim`, { body: { csr: plain.csr, ext_key_usage_oids: 'not-an-oid' } });
    assert.equal(r.status, 400);
    assert.match(r.json.errors[0], /not a valid OID/);
  });

  it('with a role: ttl, max_ttl, issuer_ref, not_before_duration, no_store apply, leased; no name checks', async () => {
    const { mount, rootPem } = await mountWithRoot(v, { issuerName: 'first' });
    let r = await v('POST', `${mount}/root/generate/internal`, {
      body: { common_name: 'Second Root', key_type: 'ec', issuer_name: 'second', ttl: '8760h' },
    });
    assert.equal(r.status, 200, r.text);
    const second = r.json.data.certificate as string;
    await role(v, mount, 'verb', {
      ttl: '2h',
      max_ttl: '3h',
      issuer_ref: 'second',
      not_before_duration: '1h',
      allowed_domains: 'example.com',
      key_type: 'rsa',
    });
    r = await v('POST', `${mount}/sign-verbatim/verb`, { body: { csr: plain.csr } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.data.issuing_ca, second, "the role's issuer_ref");
    assert.match(verifyChain(r.json.data.certificate, [second]), /OK/);
    const { notBefore, notAfter } = validity(r.json.data.certificate);
    assert.ok(Math.abs(notAfter - (now() + 2 * 3600)) < 60, 'role ttl');
    assert.ok(Math.abs(notBefore - (now() - 3600)) < 60, 'role not_before_duration');
    assert.match(r.json.lease_id, new RegExp(`^${mount}/sign-verbatim/verb/[1-9A-HJ-NP-Za-km-z]{24}$`));
    assert.ok(Math.abs(r.json.lease_duration - 2 * 3600) < 60, `lease_duration ${r.json.lease_duration}`);
    assert.equal(r.json.renewable, false);
    const serial = r.json.data.serial_number as string;
    assert.ok((await storedSerials(v, mount)).includes(serial));

    // Revoking the lease revokes the certificate.
    r = await v('PUT', 'sys/leases/revoke', { body: { lease_id: r.json.lease_id } });
    assert.equal(r.status, 204, r.text);
    r = await v('GET', `${mount}/cert/${serial}`);
    assert.ok(r.json.data.revocation_time > 0, 'revoked with its lease');

    r = await v('POST', `${mount}/sign-verbatim/verb`, { body: { csr: plain.csr, ttl: '4h' } });
    assert.equal(r.status, 400, 'ttl beyond the role max_ttl');
    assert.match(r.json.errors[0], /max_ttl/);
    r = await v('POST', `${mount}/sign-verbatim/verb`, { body: { csr: plain.csr, ttl: '150m' } });
    assert.equal(r.status, 200, r.text);
    assert.ok(Math.abs(validity(r.json.data.certificate).notAfter - (now() + 150 * 60)) < 60);

    r = await v('POST', `${mount}/issuer/first/sign-verbatim/verb`, { body: { csr: plain.csr } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.data.issuing_ca, rootPem, 'the path issuer beats the role');
    assert.match(r.json.lease_id, new RegExp(`^${mount}/issuer/first/sign-verbatim/verb/`));
    r = await v('POST', `${mount}/issuer/second/sign-verbatim`, { body: { csr: plain.csr } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.data.issuing_ca, second);
    assert.equal(r.json.lease_id, '');

    await role(v, mount, 'nostore', { no_store: true, ttl: '1h' });
    const stored = await storedSerials(v, mount);
    r = await v('POST', `${mount}/sign-verbatim/nostore`, { body: { csr: plain.csr } });
    assert.equal(r.status, 200, r.text);
    assert.notEqual(r.json.lease_id, '');
    assert.deepEqual(await storedSerials(v, mount), stored, 'no_store keeps it out of the store');
    assert.equal((await v('GET', `${mount}/cert/${r.json.data.serial_number}`)).status, 404);
  });

  it('truncates notAfter to the issuer unless enforce_leaf_not_after_behavior; ttl within the mount max', async () => {
    const { mount, rootPem } = await mountWithRoot(v, {
      ttl: '1000h',
      issuerName: 'short',
      mountConfig: { max_lease_ttl: '20000h' },
    });
    const rootEnd = validity(rootPem).notAfter;
    let r = await v('POST', `${mount}/sign-verbatim`, { body: { csr: plain.csr, ttl: '5000h' } });
    assert.equal(r.status, 200, r.text);
    assert.equal(validity(r.json.data.certificate).notAfter, rootEnd);
    assert.match(r.json.warnings.join('\n'), /truncated/);
    r = await v('POST', `${mount}/sign-verbatim`, {
      body: { csr: plain.csr, ttl: '5000h', enforce_leaf_not_after_behavior: true },
    });
    assert.equal(r.status, 400);
    assert.match(r.json.errors[0], /beyond the expiration of the CA certificate/);
    r = await v('PATCH', `${mount}/issuer/short`, {
      body: { leaf_not_after_behavior: 'permit' },
      headers: { 'content-type': 'application/merge-patch+json' },
    });
    assert.equal(r.status, 200, r.text);
    r = await v('POST', `${mount}/sign-verbatim`, {
      body: { csr: plain.csr, ttl: '5000h', enforce_leaf_not_after_behavior: true },
    });
    assert.equal(r.status, 200, r.text);
    assert.ok(validity(r.json.data.certificate).notAfter > rootEnd + 3000 * 3600);
    r = await v('POST', `${mount}/sign-verbatim`, { body: { csr: plain.csr, ttl: '20001h' } });
    assert.equal(r.status, 400);
    r = await v('POST', `${mount}/sign-verbatim`, {
      body: { csr: plain.csr, not_after: '2027-03-04T05:06:07Z', enforce_leaf_not_after_behavior: true },
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(validity(r.json.data.certificate).notAfter, Date.parse('2027-03-04T05:06:07Z') / 1000);
    // The IEEE 802.1AR "no well-defined expiration" value.
    r = await v('POST', `${mount}/sign-verbatim`, {
      body: { csr: plain.csr, not_after: '9999-12-31T23:59:59Z', enforce_leaf_not_after_behavior: true },
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.data.expiration, 253402300799);
    assert.match(openssl(['x509', '-noout', '-enddate'], r.json.data.certificate), /Dec 31 23:59:59 9999 GMT/);
  });

  it('adds user_ids, honours format, remove_roots_from_chain, signature_bits and use_pss', async () => {
    const { mount, rootPem } = await mountWithRoot(v, { keyType: 'rsa', keyBits: 2048 });
    let r = await v('POST', `${mount}/sign-verbatim`, {
      body: { csr: plain.csr, user_ids: 'alice,bob', signature_bits: 384, use_pss: true },
    });
    assert.equal(r.status, 200, r.text);
    const text = x509Text(r.json.data.certificate);
    assert.match(text, /Subject: UID=bob,UID=alice,CN=Not A Host Name,OU=Ops,O=Acme,C=US/);
    assert.match(text, /Signature Algorithm: rsassaPss[\s\S]*Hash Algorithm: sha384/);
    assert.match(verifyChain(r.json.data.certificate, [rootPem]), /OK/);

    r = await v('POST', `${mount}/sign-verbatim`, {
      body: { csr: plain.csr, remove_roots_from_chain: true, format: 'der' },
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.data.ca_chain, undefined, 'only the root was in the chain');
    assert.deepEqual(Buffer.from(r.json.data.issuing_ca, 'base64'), pemToDer(rootPem));
    assert.match(
      openssl(['x509', '-inform', 'DER', '-noout', '-subject'], Buffer.from(r.json.data.certificate, 'base64')),
      /Not A Host Name/,
    );

    r = await v('POST', `${mount}/sign-verbatim`, { body: { csr: plain.csr, format: 'pem_bundle' } });
    assert.equal(r.status, 200, r.text);
    assert.equal(
      (r.json.data.certificate as string).match(/BEGIN CERTIFICATE/g)?.length,
      1,
      'the root is self-signed: the certificate alone',
    );
  });

  it('refuses CA requests and bad input with 400, storing nothing', async () => {
    const { mount } = await mountWithRoot(v);
    await role(v, mount, 'nometa', { no_store_metadata: true });
    const stored = await storedSerials(v, mount);
    const ca = csrWith('EC:P-256', '/CN=Wants To Be A CA', ['basicConstraints=critical,CA:TRUE']);
    const weak = csrWith('RSA:1024', '/CN=weak');
    const cases: [string, Record<string, unknown>, RegExp][] = [
      ['sign-verbatim', { csr: ca.csr }, /requests a CA certificate/],
      ['sign-verbatim/nometa', { csr: ca.csr }, /requests a CA certificate/],
      [
        'sign-verbatim',
        { csr: '-----BEGIN CERTIFICATE REQUEST-----\nMIIBbroken\n-----END CERTIFICATE REQUEST-----' },
        /certificate request|csr/i,
      ],
      ['sign-verbatim', { csr: tamperedCsr(plain.csr) }, /request signature invalid/],
      ['sign-verbatim', {}, /"csr" is empty/],
      ['sign-verbatim', { csr: weak.csr }, /2048-bit/],
      ['sign-verbatim/no-such-role', { csr: plain.csr }, /unknown role: no-such-role/],
      [
        'issuer/no-such-issuer/sign-verbatim',
        { csr: plain.csr },
        /unable to find PKI issuer for reference: no-such-issuer/,
      ],
      ['sign-verbatim', { csr: plain.csr, format: 'pfx' }, /format/],
      ['sign-verbatim', { csr: plain.csr, signature_bits: 100 }, /signature/],
      ['sign-verbatim', { csr: plain.csr, ttl: '1h', not_after: '2030-01-01T00:00:00Z' }, /Either ttl or not_after/],
      ['sign-verbatim', { csr: plain.csr, cert_metadata: 'e30=' }, /cert_metadata needs a role/],
      ['sign-verbatim/nometa', { csr: plain.csr, cert_metadata: 'e30=' }, /no_store_metadata/],
      ['sign-verbatim/nometa', { csr: plain.csr, cert_metadata: 'not base64!' }, /base64/],
    ];
    for (const [path, body, message] of cases) {
      const r = await v('POST', `${mount}/${path}`, { body });
      assert.equal(r.status, 400, `${path} ${JSON.stringify(body).slice(0, 80)}: ${r.text}`);
      assert.match(r.contentType, /^application\/json/);
      assert.equal(r.json.errors.length, 1);
      assert.match(r.json.errors[0], message);
    }
    assert.deepEqual(await storedSerials(v, mount), stored);
    assert.equal((await v('LIST', `${mount}/cert-metadata`)).status, 404, 'no metadata either');
  });
});
