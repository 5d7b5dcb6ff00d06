import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { describeWithServer } from '../support/test-server.js';
import { openssl, verifyChain, x509Text } from './pki-issuers-openssl.js';
import { SERIAL, makeServerClient, mountWithRoot, pemToDer, role, storedSerials } from './pki-issue-helpers.js';
import type { Vault } from './pki-issue-helpers.js';
import {
  csrWith,
  intermediateMount,
  keyIdOf,
  tamperedCsr,
  validity,
  verifySignedAnswer,
} from './pki-privileged-helpers.js';

const RESULT_FIELDS = ['ca_chain', 'certificate', 'expiration', 'issuing_ca', 'serial_number'];

/** The wall clock in whole seconds, as certificates carry it. */
const nowSeconds = (): number => Math.floor(Date.now() / 1000);

/** A time the server took during a request lies between the seconds read just before and just after it. */
function assertWithin(t: number, from: number, to: number, what: string): void {
  assert.ok(t >= from && t <= to, `${what}: ${t} is outside [${from}, ${to}]`);
}

/** The Basic Constraints line openssl prints. */
const basicConstraints = (text: string): string =>
  /X509v3 Basic Constraints: critical\s*\n\s*(.+)/.exec(text)?.[1]?.trim() ?? '';

describeWithServer('pki sign-intermediate', (server) => {
  let v: Vault;
  // One CA CSR of each kind for the whole file; RSA keys are the slow ones.
  let ecCsr: { csr: string; key: string };
  let rsaCsr: { csr: string; key: string };
  before(async () => {
    const raw = makeServerClient(server);
    // Every intermediate this file gets signed is also checked by openssl against its chain.
    v = async (method, path, opts) => {
      const r = await raw(method, path, opts);
      if (r.status === 200 && path.endsWith('sign-intermediate'))
        assert.match(verifySignedAnswer(r.json.data), /OK/, `${path}: openssl verify`);
      return r;
    };
    ecCsr = csrWith('EC:P-256', '/CN=Requested CA/O=From CSR', [
      'subjectAltName=DNS:csr-only.example',
      'keyUsage=critical,digitalSignature,keyCertSign',
    ]);
    rsaCsr = csrWith('RSA:2048', '/CN=RSA CA');
  });

  it('signs a CA CSR with the request subject and SANs; openssl verifies the chain down to a leaf', async () => {
    const { mount, rootPem } = await mountWithRoot(v);
    const from = nowSeconds();
    const r = await v('POST', `${mount}/root/sign-intermediate`, {
      body: {
        csr: ecCsr.csr,
        common_name: 'Issuing CA 1',
        ou: 'PKI',
        organization: 'Example',
        country: 'DE',
        locality: 'Berlin',
        province: 'BE',
        street_address: 'Main 1',
        postal_code: '10115',
        serial_number: 'SN-7',
        alt_names: 'ca1.example.com',
        ip_sans: '10.1.2.3',
        uri_sans: 'spiffe://example.com/ca',
        other_sans: '1.3.6.1.4.1.311.20.2.3;UTF8:ca@example.com',
        ttl: '48h',
      },
    });
    assert.equal(r.status, 200, r.text);
    assert.match(r.contentType, /^application\/json/);
    assert.equal(r.json.lease_id, '');
    assert.equal(r.json.lease_duration, 0);
    assert.equal(r.json.renewable, false);
    const d = r.json.data;
    assert.deepEqual(Object.keys(d).sort(), RESULT_FIELDS);
    assert.match(d.serial_number, SERIAL);
    assert.equal(d.issuing_ca, rootPem);
    assert.deepEqual(d.ca_chain, [d.certificate, rootPem], 'the new certificate first, then the signer chain');
    assert.match(verifyChain(d.certificate, [rootPem]), /OK/);

    const text = x509Text(d.certificate);
    assert.match(
      text,
      /Subject: serialNumber=SN-7,CN=Issuing CA 1,OU=PKI,O=Example,postalCode=10115,street=Main 1,L=Berlin,ST=BE,C=DE/,
    );
    assert.equal(basicConstraints(text), 'CA:TRUE', 'no pathlen when the root has none');
    assert.match(text, /X509v3 Key Usage: critical\s+Certificate Sign, CRL Sign\n/);
    assert.match(text, /DNS:ca1\.example\.com, IP Address:10\.1\.2\.3, URI:spiffe:\/\/example\.com\/ca, othername:/);
    assert.doesNotMatch(text, /csr-only|From CSR/, 'CSR values are ignored without use_csr_values');
    assert.match(text, new RegExp(`X509v3 Subject Key Identifier:\\s+${keyIdOf(ecCsr.csr)}`));
    assert.match(text, new RegExp(`X509v3 Authority Key Identifier:\\s+(keyid:)?${keyIdOf(rootPem)}`));
    assert.match(text, new RegExp(`CA Issuers - URI:http://ca\\.test/v1/${mount}/ca`));
    assert.match(text, new RegExp(`URI:http://ca\\.test/v1/${mount}/crl`));
    const { notBefore, notAfter } = validity(d.certificate);
    assert.equal(notAfter, Number(d.expiration));
    assert.equal(notAfter - notBefore, 48 * 3600 + 30, 'ttl 48h from now, backdated 30 s by default');
    assertWithin(notBefore + 30, from, nowSeconds(), 'signed during the request');
    assert.ok((await storedSerials(v, mount)).includes(d.serial_number), 'signed intermediates are stored');

    // The realistic flow: an intermediate mount signs leaves that chain to the root.
    const int = await intermediateMount(v, mount);
    await role(v, int.mount, 'web', { allowed_domains: 'example.com', allow_subdomains: true, key_type: 'ec' });
    const leaf = await v('POST', `${int.mount}/issue/web`, { body: { common_name: 'www.example.com', ttl: '1h' } });
    assert.equal(leaf.status, 200, leaf.text);
    assert.match(verifyChain(leaf.json.data.certificate, [rootPem], [int.certificate]), /OK/);
  });

  it('honours max_path_length: -1 follows the signer, 0 is literal, a signer with pathlen 0 refuses', async () => {
    const { mount, rootPem } = await mountWithRoot(v);
    let r = await v('POST', `${mount}/root/rotate/internal`, {
      body: { common_name: 'Limited Root', key_type: 'ec', max_path_length: 2, ttl: '8760h', issuer_name: 'limited' },
    });
    assert.equal(r.status, 200, r.text);
    const limitedPem = r.json.data.certificate as string;
    assert.equal(basicConstraints(x509Text(limitedPem)), 'CA:TRUE, pathlen:2');
    const sign = (path: string, body: Record<string, unknown>) =>
      v('POST', `${mount}/${path}`, { body: { csr: ecCsr.csr, common_name: 'Sub CA', ...body } });

    r = await sign('issuer/limited/sign-intermediate', {});
    assert.equal(r.status, 200, r.text);
    assert.equal(basicConstraints(x509Text(r.json.data.certificate)), 'CA:TRUE, pathlen:1', 'one less than the signer');
    assert.equal(r.json.data.issuing_ca, limitedPem);
    assert.match(verifyChain(r.json.data.certificate, [limitedPem]), /OK/);

    r = await sign('issuer/limited/sign-intermediate', { max_path_length: 5 });
    assert.equal(r.status, 200, r.text);
    assert.equal(basicConstraints(x509Text(r.json.data.certificate)), 'CA:TRUE, pathlen:1');
    assert.match(r.json.warnings.join('\n'), /max_path_length 5 is not below the signing certificate's path length 2/);

    r = await sign('root/sign-intermediate', { max_path_length: 0 });
    assert.equal(r.status, 200, r.text);
    assert.equal(basicConstraints(x509Text(r.json.data.certificate)), 'CA:TRUE, pathlen:0');
    assert.match(r.json.warnings.join('\n'), /max path length of 0/);
    assert.equal(r.json.data.issuing_ca, rootPem, 'root/ uses the default issuer');

    r = await sign('root/sign-intermediate', { max_path_length: 3 });
    assert.equal(basicConstraints(x509Text(r.json.data.certificate)), 'CA:TRUE, pathlen:3');

    r = await sign('root/sign-intermediate', { max_path_length: -2 });
    assert.equal(r.status, 400);

    // A CA with pathlen 0 can sign leaves but no further CA.
    const zero = await intermediateMount(v, mount, { max_path_length: 0 });
    const before = await storedSerials(v, zero.mount);
    r = await v('POST', `${zero.mount}/root/sign-intermediate`, {
      body: { csr: ecCsr.csr, common_name: 'Too deep' },
    });
    assert.equal(r.status, 400);
    assert.deepEqual(r.json, {
      errors: ['signing certificate has a max path length of zero, and cannot issue further CA certificates'],
    });
    assert.deepEqual(await storedSerials(v, zero.mount), before, 'nothing stored');
  });

  it('adds requested key usages; use_csr_values takes subject, SANs, usages and extensions from the CSR', async () => {
    const { mount, rootPem } = await mountWithRoot(v);
    let r = await v('POST', `${mount}/root/sign-intermediate`, {
      body: { csr: ecCsr.csr, common_name: 'KU CA', key_usage: 'digitalsignature,KeyUsageCRLSign,NoSuchUsage' },
    });
    assert.equal(r.status, 200, r.text);
    assert.match(
      x509Text(r.json.data.certificate),
      /X509v3 Key Usage: critical\s+Digital Signature, Certificate Sign, CRL Sign\n/,
    );

    const csr = csrWith('EC:P-384', '/C=FR/O=CSR Org/CN=CSR Subject CA', [
      'subjectAltName=DNS:ca.csr.example,email:pki@csr.example',
      'keyUsage=critical,nonRepudiation,keyCertSign',
      'basicConstraints=critical,CA:TRUE,pathlen:9',
      'certificatePolicies=1.2.3.4.5',
    ]);
    r = await v('POST', `${mount}/root/sign-intermediate`, {
      body: {
        csr: csr.csr,
        use_csr_values: true,
        common_name: 'ignored',
        alt_names: 'ignored.example',
        key_usage: 'DigitalSignature',
        max_path_length: 1,
      },
    });
    assert.equal(r.status, 200, r.text);
    const text = x509Text(r.json.data.certificate);
    assert.match(text, /Subject: CN=CSR Subject CA,O=CSR Org,C=FR/);
    assert.match(text, /X509v3 Subject Alternative Name:\s+DNS:ca\.csr\.example, email:pki@csr\.example/);
    assert.doesNotMatch(text, /ignored/);
    assert.match(
      text,
      /X509v3 Key Usage: critical\s+Non Repudiation, Certificate Sign, CRL Sign\n/,
      'CSR usages replace the request ones, on top of the base set',
    );
    assert.match(text, /X509v3 Certificate Policies:\s+Policy: 1\.2\.3\.4\.5/);
    assert.equal(basicConstraints(text), 'CA:TRUE, pathlen:1', "the CSR's Basic Constraints are never copied");
    assert.match(verifyChain(r.json.data.certificate, [rootPem]), /OK/);
  });

  it('a host-name CN becomes a DNS SAN unless exclude_cn_from_sans; use_csr_values without CSR key usage', async () => {
    const { mount, rootPem } = await mountWithRoot(v);
    const sans = (pem: string): string =>
      /X509v3 Subject Alternative Name:\s*\n\s*(.+)/.exec(x509Text(pem))?.[1]?.trim() ?? '';
    // openssl verifies each answer against the root (the client above).
    const sign = async (body: Record<string, unknown>, csr = ecCsr.csr) => {
      const r = await v('POST', `${mount}/root/sign-intermediate`, { body: { csr, ...body } });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.data.issuing_ca, rootPem);
      return r.json.data.certificate as string;
    };
    assert.equal(sans(await sign({ common_name: 'int.example.com' })), 'DNS:int.example.com');
    assert.equal(
      sans(await sign({ common_name: 'int.example.com', alt_names: 'other.example.com' })),
      'DNS:int.example.com, DNS:other.example.com',
    );
    let pem = await sign({
      common_name: 'int.example.com',
      alt_names: 'other.example.com',
      exclude_cn_from_sans: true,
    });
    assert.equal(sans(pem), 'DNS:other.example.com');
    assert.match(x509Text(pem), /Subject: CN=int\.example\.com\n/);
    pem = await sign({ common_name: 'int.example.com', exclude_cn_from_sans: 'true' });
    assert.doesNotMatch(x509Text(pem), /Subject Alternative Name/, 'no SAN extension when nothing is left');

    const noKu = csrWith('EC:P-256', '/O=No KU Org/CN=No KU CA');
    const withCsr = async (body: Record<string, unknown>) =>
      x509Text(await sign({ use_csr_values: true, common_name: 'ignored', ...body }, noKu.csr));
    let text = await withCsr({ key_usage: 'DigitalSignature' });
    assert.match(text, /Subject: CN=No KU CA,O=No KU Org\n/);
    assert.match(
      text,
      /X509v3 Key Usage: critical\s+Digital Signature, Certificate Sign, CRL Sign\n/,
      'the CSR has none: the requested usages apply',
    );
    assert.doesNotMatch(text, /Subject Alternative Name|ignored/);
    text = await withCsr({});
    assert.match(
      text,
      /X509v3 Key Usage: critical\s+Certificate Sign, CRL Sign\n/,
      'the default set when neither names any',
    );
  });

  it('writes critical name constraints that openssl enforces on the chain', async () => {
    const { mount, rootPem } = await mountWithRoot(v);
    const int = await intermediateMount(v, mount, {
      permitted_dns_domains: '.example.com,example.com',
      excluded_dns_domains: ['bad.example.com'],
      permitted_ip_ranges: '10.0.0.0/8',
      excluded_ip_ranges: '10.9.0.0/16',
      permitted_email_addresses: 'example.com',
      excluded_email_addresses: 'evil@example.com',
      permitted_uri_domains: '.example.com',
      excluded_uri_domains: 'bad.example.com',
    });
    const text = x509Text(int.certificate);
    assert.match(
      text,
      new RegExp(
        String.raw`X509v3 Name Constraints: critical\s+Permitted:\s+DNS:\.example\.com\s+DNS:example\.com\s+IP:` +
          String.raw`10\.0\.0\.0\/255\.0\.0\.0\s+email:example\.com\s+URI:\.example\.com\s+Excluded:\s+DNS:` +
          String.raw`bad\.example\.com\s+IP:10\.9\.0\.0\/255\.255\.0\.0\s+email:evil@example\.com\s+URI:` +
          String.raw`bad\.example\.com`,
      ),
    );
    await role(v, int.mount, 'any', { allow_any_name: true, key_type: 'ec' });
    const issue = async (cn: string) => {
      const r = await v('POST', `${int.mount}/issue/any`, { body: { common_name: cn, ttl: '1h' } });
      assert.equal(r.status, 200, r.text);
      return r.json.data.certificate as string;
    };
    assert.match(verifyChain(await issue('www.example.com'), [rootPem], [int.certificate]), /OK/);
    const outside = await issue('www.other.org');
    assert.throws(() => verifyChain(outside, [rootPem], [int.certificate]), /subtree violation|name constraints/i);
    const excluded = await issue('bad.example.com');
    assert.throws(
      () => verifyChain(excluded, [rootPem], [int.certificate]),
      /excluded subtree violation|name constraints/i,
    );

    const r = await v('POST', `${mount}/root/sign-intermediate`, {
      body: { csr: ecCsr.csr, common_name: 'x', permitted_ip_ranges: '10.0.0.1' },
    });
    assert.equal(r.status, 400);
    assert.match(r.json.errors[0], /CIDR/);
  });

  it('sets skid, signature_bits and use_pss; ECDSA signers ignore signature_bits', async () => {
    const { mount: rsaMount, rootPem: rsaRoot } = await mountWithRoot(v, { keyType: 'rsa', keyBits: 2048 });
    const skid = '01:02:03:04:05:06:07:08:09:0a:0b:0c:0d:0e:0f:10:11:12:13:14';
    let r = await v('POST', `${rsaMount}/root/sign-intermediate`, {
      body: { csr: rsaCsr.csr, common_name: 'Cross', skid, signature_bits: 384 },
    });
    assert.equal(r.status, 200, r.text);
    let text = x509Text(r.json.data.certificate);
    assert.match(
      text,
      /X509v3 Subject Key Identifier:\s+01:02:03:04:05:06:07:08:09:0A:0B:0C:0D:0E:0F:10:11:12:13:14\n/,
    );
    assert.match(text, /Signature Algorithm: sha384WithRSAEncryption/);
    assert.match(verifyChain(r.json.data.certificate, [rsaRoot]), /OK/);

    r = await v('POST', `${rsaMount}/root/sign-intermediate`, {
      body: { csr: rsaCsr.csr, common_name: 'PSS', use_pss: true, signature_bits: 512, skid: '0a-0b 0c' },
    });
    assert.equal(r.status, 200, r.text);
    text = x509Text(r.json.data.certificate);
    assert.match(text, /Signature Algorithm: rsassaPss[\s\S]*Hash Algorithm: sha512/);
    assert.match(text, /X509v3 Subject Key Identifier:\s+0A:0B:0C\n/);
    assert.match(verifyChain(r.json.data.certificate, [rsaRoot]), /OK/);

    const { mount: ecMount } = await mountWithRoot(v);
    r = await v('POST', `${ecMount}/root/sign-intermediate`, {
      body: { csr: rsaCsr.csr, common_name: 'EC signed', signature_bits: 512, use_pss: true },
    });
    assert.equal(r.status, 200, r.text);
    assert.match(x509Text(r.json.data.certificate), /Signature Algorithm: ecdsa-with-SHA256/);

    for (const body of [{ skid: 'zz:01' }, { skid: 'abc' }, { signature_bits: 123 }]) {
      r = await v('POST', `${rsaMount}/root/sign-intermediate`, {
        body: { csr: rsaCsr.csr, common_name: 'bad', ...body },
      });
      assert.equal(r.status, 400, JSON.stringify(body));
    }
  });

  it('truncates notAfter to the signer; ttl within the mount max; enforce_leaf_not_after_behavior', async () => {
    const { mount, rootPem } = await mountWithRoot(v, {
      ttl: '1000h',
      mountConfig: { default_lease_ttl: '72h', max_lease_ttl: '20000h' },
    });
    const rootEnd = validity(rootPem).notAfter;
    const sign = (body: Record<string, unknown>) =>
      v('POST', `${mount}/root/sign-intermediate`, { body: { csr: ecCsr.csr, common_name: 'Validity CA', ...body } });

    let from = nowSeconds();
    let r = await sign({});
    assert.equal(r.status, 200, r.text);
    let end = validity(r.json.data.certificate).notAfter;
    assertWithin(end - 72 * 3600, from, nowSeconds(), 'mount default ttl');

    r = await sign({ ttl: '5000h' });
    assert.equal(r.status, 200, r.text);
    assert.equal(validity(r.json.data.certificate).notAfter, rootEnd, 'truncated to the root');
    assert.match(r.json.warnings.join('\n'), /truncated/);

    r = await sign({ ttl: '30000h' });
    assert.equal(r.status, 400);
    assert.match(r.json.errors[0], /ttl of 108000000s|longer than the maximum/);

    r = await sign({ ttl: '5000h', enforce_leaf_not_after_behavior: true });
    assert.equal(r.status, 400, 'new issuers start with leaf_not_after_behavior=err');
    assert.match(r.json.errors[0], /beyond the expiration of the CA certificate/);

    r = await v('PATCH', `${mount}/issuer/root`, {
      body: { leaf_not_after_behavior: 'permit' },
      headers: { 'content-type': 'application/merge-patch+json' },
    });
    assert.equal(r.status, 200, r.text);
    r = await sign({ ttl: '5000h', enforce_leaf_not_after_behavior: true });
    assert.equal(r.status, 200, r.text);
    end = validity(r.json.data.certificate).notAfter;
    assert.ok(end > rootEnd + 3000 * 3600, 'permit lets the intermediate outlive its signer');

    r = await sign({ not_after: '2031-01-02T03:04:05Z', enforce_leaf_not_after_behavior: true });
    assert.equal(r.status, 200, r.text);
    assert.equal(validity(r.json.data.certificate).notAfter, Date.parse('2031-01-02T03:04:05Z') / 1000);

    from = nowSeconds();
    r = await sign({ ttl: '1h', not_before_duration: '2h' });
    assert.equal(r.status, 200, r.text);
    const vb = validity(r.json.data.certificate);
    assertWithin(vb.notBefore + 7200, from, nowSeconds(), 'backdated by not_before_duration');
    assert.equal(vb.notAfter - vb.notBefore, 7200 + 3600, 'ttl unchanged by the backdating');

    r = await sign({ ttl: '1h', not_after: '2031-01-01T00:00:00Z' });
    assert.equal(r.status, 400);
  });

  it('answers in der and pem_bundle; the bundle carries the signer unless it is a self-signed root', async () => {
    const { mount, rootPem } = await mountWithRoot(v);
    let r = await v('POST', `${mount}/root/sign-intermediate`, {
      body: { csr: ecCsr.csr, common_name: 'DER CA', format: 'der' },
    });
    assert.equal(r.status, 200, r.text);
    const d = r.json.data;
    assert.doesNotMatch(d.certificate, /BEGIN/);
    assert.match(
      openssl(['x509', '-inform', 'DER', '-noout', '-subject'], Buffer.from(d.certificate, 'base64')),
      /CN ?= ?DER CA/,
    );
    assert.deepEqual(Buffer.from(d.issuing_ca, 'base64'), pemToDer(rootPem));
    assert.deepEqual(Buffer.from(d.ca_chain[0], 'base64'), Buffer.from(d.certificate, 'base64'));

    r = await v('POST', `${mount}/root/sign-intermediate`, {
      body: { csr: ecCsr.csr, common_name: 'Bundle CA', format: 'pem_bundle' },
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(
      (r.json.data.certificate as string).match(/BEGIN CERTIFICATE/g)?.length,
      1,
      'signed by a self-signed root: the certificate alone',
    );

    const int = await intermediateMount(v, mount);
    r = await v('POST', `${int.mount}/root/sign-intermediate`, {
      body: { csr: ecCsr.csr, common_name: 'Grandchild CA', format: 'pem_bundle' },
    });
    assert.equal(r.status, 200, r.text);
    const blocks = (r.json.data.certificate as string).split(/(?=-----BEGIN )/).map((b) => b.trim());
    assert.equal(blocks.length, 2);
    assert.equal(blocks[1], int.certificate);
    assert.match(verifyChain(blocks[0]!, [rootPem], [int.certificate]), /OK/);
    // The intermediate mount knows only its own certificate, so its chain ends there.
    assert.deepEqual(r.json.data.ca_chain, [blocks[0], int.certificate]);

    r = await v('POST', `${mount}/root/sign-intermediate`, {
      body: { csr: ecCsr.csr, common_name: 'x', format: 'p7b' },
    });
    assert.equal(r.status, 400);
  });

  it('refuses broken, tampered, empty and weak CSRs, unknown issuers, no common name (400), storing none', async () => {
    const { mount } = await mountWithRoot(v);
    const stored = await storedSerials(v, mount);
    const weak = csrWith('RSA:1024', '/CN=Weak CA');
    const noCn = csrWith('EC:P-256', '/O=No CN');
    const cases: [string, Record<string, unknown>, RegExp][] = [
      [
        'root/sign-intermediate',
        {
          csr: '-----BEGIN CERTIFICATE REQUEST-----\nMIIBbroken\n-----END CERTIFICATE REQUEST-----',
          common_name: 'x',
        },
        /csr|certificate request|base64/i,
      ],
      ['root/sign-intermediate', { csr: 'not a csr at all', common_name: 'x' }, /certificate request|csr|base64/i],
      ['root/sign-intermediate', { csr: tamperedCsr(ecCsr.csr), common_name: 'x' }, /request signature invalid/],
      ['root/sign-intermediate', { common_name: 'x' }, /"csr" is empty/],
      ['root/sign-intermediate', { csr: weak.csr, common_name: 'x' }, /2048-bit/],
      ['root/sign-intermediate', { csr: noCn.csr }, /common_name field is required/],
      [
        'issuer/no-such-issuer/sign-intermediate',
        { csr: ecCsr.csr, common_name: 'x' },
        /unable to find PKI issuer for reference: no-such-issuer/,
      ],
      ['root/sign-intermediate', { csr: ecCsr.csr, common_name: 'x', ttl: 'soon' }, /ttl/],
    ];
    for (const [path, body, message] of cases) {
      const r = await v('POST', `${mount}/${path}`, { body });
      assert.equal(r.status, 400, `${path} ${JSON.stringify(body).slice(0, 80)}: ${r.text}`);
      assert.match(r.contentType, /^application\/json/);
      assert.equal(r.json.errors.length, 1);
      assert.match(r.json.errors[0], message);
    }
    assert.deepEqual(await storedSerials(v, mount), stored);

    // The CSR's CN is the fallback when common_name is not given.
    const r = await v('POST', `${mount}/root/sign-intermediate`, { body: { csr: ecCsr.csr } });
    assert.equal(r.status, 200, r.text);
    assert.match(x509Text(r.json.data.certificate), /Subject: CN=Requested CA\n/);
  });

  it('needs update on the path in the ACL', async () => {
    const { mount } = await mountWithRoot(v);
    let r = await v('PUT', 'sys/policies/acl/signer', {
      body: { policy: `path "${mount}/issuer/+/sign-intermediate" { capabilities = ["update"] }` },
    });
    assert.equal(r.status, 204, r.text);
    r = await v('POST', 'auth/token/create', { body: { policies: ['signer'] } });
    const token = r.json.auth.client_token as string;
    r = await v('POST', `${mount}/root/sign-intermediate`, { token, body: { csr: ecCsr.csr, common_name: 'x' } });
    assert.equal(r.status, 403);
    assert.deepEqual(r.json, { errors: ['permission denied'] });
    r = await v('POST', `${mount}/issuer/default/sign-intermediate`, {
      token,
      body: { csr: ecCsr.csr, common_name: 'x' },
    });
    assert.equal(r.status, 200, r.text);
  });
});
