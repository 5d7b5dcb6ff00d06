import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { describeWithServer } from '../support/test-server.js';
import { openssl, verifyChain, x509Text } from './pki-issuers-openssl.js';
import { SERIAL, makeServerClient, mountWithRoot, opensslCsr, role, storedSerials } from './pki-issue-helpers.js';
import type { Vault } from './pki-issue-helpers.js';
import { intermediateMount } from './pki-privileged-helpers.js';

// CSRs are made once per file by openssl, independently of the server's code.
const P256 = opensslCsr('EC:P-256', '/CN=csr.example.com/O=Ignored', 'DNS:csr-alt.example.com,IP:10.9.9.9');
const ED = opensslCsr('ED25519', '/CN=ed.example.com');
const RSA1024 = opensslCsr('RSA:1024', '/CN=small.example.com');
const RSA2048 = opensslCsr('RSA:2048', '/CN=rsa.example.com');
const RSA_PSS = opensslCsr('RSA-PSS:2048', '/CN=pss.example.com');
const ED448 = opensslCsr('ED448', '/CN=ed448.example.com');
const K256 = opensslCsr('EC:secp256k1', '/CN=k256.example.com');

/** The same CSR with one byte of its signature flipped. */
function tamperedCsr(pem: string): string {
  const der = Buffer.from(pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), 'base64');
  der[der.length - 5]! ^= 0x01;
  const b64 = der.toString('base64').replace(/(.{64})/g, '$1\n');
  return `-----BEGIN CERTIFICATE REQUEST-----\n${b64}\n-----END CERTIFICATE REQUEST-----`;
}

describeWithServer('pki sign', (server) => {
  let v: Vault;
  before(async () => {
    v = makeServerClient(server);
  });

  it('signs a P-256 CSR taking CN and SANs from it; drops other CSR subject fields; stores it', async () => {
    const { mount, rootPem } = await mountWithRoot(v);
    await role(v, mount, 'web', { allowed_domains: 'example.com', allow_subdomains: true, key_type: 'ec' });
    const r = await v('POST', `${mount}/sign/web`, {
      body: { csr: P256.csr, common_name: 'other.example.com', alt_names: 'x.example.com' },
    });
    assert.equal(r.status, 200, r.text);
    const d = r.json.data;
    assert.deepEqual(Object.keys(d).sort(), ['ca_chain', 'certificate', 'expiration', 'issuing_ca', 'serial_number']);
    assert.match(d.serial_number, SERIAL);
    assert.match(r.json.lease_id, new RegExp(`^${mount}/sign/web/[1-9A-Za-z]{24}$`));
    assert.equal(r.json.renewable, false);
    const text = x509Text(d.certificate);
    assert.match(text, /Subject: CN=csr\.example\.com\n/);
    assert.match(
      text,
      new RegExp(
        String.raw`DNS:csr-alt\.example\.com, DNS:csr\.example\.com, IP Address:10\.9\.9\.9|DNS:csr\.example\.com,` +
          String.raw` DNS:csr-alt\.example\.com, IP Address:10\.9\.9\.9`,
      ),
    );
    assert.doesNotMatch(text, /x\.example\.com/);
    assert.ok(r.json.warnings.some((w: string) => /use_csr_common_name/.test(w)));
    assert.ok(r.json.warnings.some((w: string) => /use_csr_sans/.test(w)));
    assert.match(verifyChain(d.certificate, [rootPem]), /OK/);
    assert.equal(
      openssl(['x509', '-noout', '-pubkey'], d.certificate),
      openssl(['req', '-noout', '-pubkey'], P256.csr),
    );
    assert.ok((await storedSerials(v, mount)).includes(d.serial_number));
  });

  it('uses the request names when use_csr_common_name and use_csr_sans are off', async () => {
    const { mount } = await mountWithRoot(v);
    await role(v, mount, 'own', {
      allowed_domains: 'example.com',
      allow_subdomains: true,
      key_type: 'ec',
      use_csr_common_name: false,
      use_csr_sans: false,
    });
    const r = await v('POST', `${mount}/sign/own`, {
      body: { csr: P256.csr, common_name: 'req.example.com', alt_names: 'alt.example.com', ip_sans: '10.1.1.1' },
    });
    assert.equal(r.status, 200, r.text);
    const text = x509Text(r.json.data.certificate);
    assert.match(text, /Subject: CN=req\.example\.com/);
    assert.match(text, /DNS:req\.example\.com, DNS:alt\.example\.com, IP Address:10\.1\.1\.1/);
    assert.doesNotMatch(text, /csr-alt/);
  });

  it('root pem_bundle is the cert alone; issuer/:ref/sign/:role uses that issuer; lease = validity', async () => {
    const { mount, rootPem } = await mountWithRoot(v, { issuerName: 'main' });
    await role(v, mount, 'l', { allow_any_name: true, key_type: 'ec', ttl: '30m' });
    const r = await v('POST', `${mount}/issuer/main/sign/l`, { body: { csr: P256.csr, format: 'pem_bundle' } });
    assert.equal(r.status, 200, r.text);
    const blocks = (r.json.data.certificate as string).split(/(?=-----BEGIN )/).map((b) => b.trim());
    assert.equal(blocks.length, 1, 'a self-signed root issuer is not part of the bundle');
    assert.match(blocks[0]!, /^-----BEGIN CERTIFICATE-----/);
    assert.match(verifyChain(blocks[0]!, [rootPem]), /OK/);
    assert.equal(openssl(['x509', '-noout', '-pubkey'], blocks[0]!), openssl(['req', '-noout', '-pubkey'], P256.csr));
    assert.deepEqual(r.json.data.ca_chain, [rootPem], 'ca_chain is unchanged by the format');
    assert.match(r.json.lease_id, new RegExp(`^${mount}/issuer/main/sign/l/`));
    assert.ok(r.json.lease_duration > 1790 && r.json.lease_duration <= 1800);
    assert.equal(r.json.data.private_key, undefined);
  });

  it('pem_bundle from an intermediate issuer holds the certificate and the intermediate, never the root', async () => {
    const { mount: rootMount, rootPem } = await mountWithRoot(v);
    const int = await intermediateMount(v, rootMount);
    await role(v, int.mount, 'l', { allow_any_name: true, key_type: 'ec', ttl: '30m' });
    for (const extra of [{}, { remove_roots_from_chain: true }]) {
      const r = await v('POST', `${int.mount}/sign/l`, { body: { csr: P256.csr, format: 'pem_bundle', ...extra } });
      assert.equal(r.status, 200, r.text);
      const blocks = (r.json.data.certificate as string).split(/(?=-----BEGIN )/).map((b) => b.trim());
      assert.equal(blocks.length, 2, r.json.data.certificate);
      assert.equal(blocks[1], int.certificate);
      assert.ok(!blocks.includes(rootPem));
      assert.equal(r.json.data.issuing_ca, int.certificate);
      assert.match(verifyChain(blocks[0]!, [rootPem], [blocks[1]!]), /OK/);
      assert.match(
        openssl(['x509', '-noout', '-subject', '-nameopt', 'RFC2253'], blocks[1]!),
        new RegExp(`CN=Intermediate ${int.mount}`),
      );
    }
  });

  it('takes every shared parameter (der, ttl, not_after, signature_bits, use_pss, SANs, user ids, ...)', async () => {
    const { mount, rootPem } = await mountWithRoot(v, { keyType: 'rsa', keyBits: 2048 });
    await role(v, mount, 'p', {
      allowed_domains: 'example.com',
      allow_subdomains: true,
      key_type: 'ec',
      use_csr_common_name: false,
      use_csr_sans: false,
      allowed_uri_sans: 'spiffe://example.com/*',
      allowed_other_sans: '*',
      allowed_user_ids: 'svc-*',
      max_ttl: '10h',
    });
    const sign = async (body: Record<string, unknown>) => {
      const r = await v('POST', `${mount}/sign/p`, {
        body: { csr: P256.csr, common_name: 'p.example.com', ...body },
      });
      assert.equal(r.status, 200, `${JSON.stringify(body)}: ${r.text}`);
      return r.json;
    };
    const now = Date.now() / 1000;

    let r = await sign({
      format: 'der',
      ttl: '2h',
      signature_bits: 384,
      remove_roots_from_chain: true,
      private_key_format: 'pkcs8',
    });
    const der = Buffer.from(r.data.certificate, 'base64');
    const pem = openssl(['x509', '-inform', 'DER'], der).trim();
    let text = x509Text(pem);
    assert.match(text, /Signature Algorithm: sha384WithRSAEncryption/);
    assert.deepEqual(
      Buffer.from(r.data.issuing_ca, 'base64'),
      Buffer.from(rootPem.replace(/-----[^-]+-----|\s/g, ''), 'base64'),
    );
    assert.equal(r.data.ca_chain, undefined, 'the only chain member is the root');
    assert.equal(r.data.private_key, undefined);
    assert.ok(Math.abs(r.data.expiration - (now + 7200)) < 5);
    assert.match(verifyChain(pem, [rootPem]), /OK/);

    const notAfter = new Date((Math.floor(now) + 5 * 3600) * 1000).toISOString().replace('.000', '');
    r = await sign({
      not_after: notAfter,
      use_pss: true,
      exclude_cn_from_sans: true,
      alt_names: 'a.example.com',
      ip_sans: '10.2.2.2',
      uri_sans: 'spiffe://example.com/p',
      other_sans: '1.2.3.4;UTF8:x',
      user_ids: 'svc-9',
    });
    text = x509Text(r.data.certificate);
    assert.equal(r.data.expiration, Date.parse(notAfter) / 1000);
    assert.match(text, /Signature Algorithm: rsassaPss/);
    assert.match(text, /Subject: CN=p\.example\.com,UID=svc-9|Subject: UID=svc-9,CN=p\.example\.com/);
    assert.match(
      text,
      /DNS:a\.example\.com, IP Address:10\.2\.2\.2, URI:spiffe:\/\/example\.com\/p, othername: 1\.2\.3\.4[:;]+\s*x/,
    );
    assert.doesNotMatch(text, /DNS:p\.example\.com/);
    assert.match(verifyChain(r.data.certificate, [rootPem]), /OK/);

    const meta = Buffer.from('signed by a test').toString('base64');
    r = await sign({ cert_metadata: meta });
    const m = await v('GET', `${mount}/cert-metadata/${r.data.serial_number}`);
    assert.equal(m.status, 200, m.text);
    assert.equal(m.json.data.cert_metadata, meta);

    const before = await storedSerials(v, mount);
    for (const [body, re] of [
      [{ ttl: '11h' }, /role's max_ttl/],
      [{ format: 'p7b' }, /unknown format "p7b"/],
      [{ signature_bits: 1 }, /unsupported hash signature algorithm: 1/],
      [{ user_ids: 'root' }, /user_id root is not allowed/],
      [{ alt_names: 'a.evil.org' }, /subject alternate name a\.evil\.org not allowed/],
    ] as const) {
      const bad = await v('POST', `${mount}/sign/p`, {
        body: { csr: P256.csr, common_name: 'p.example.com', ...body },
      });
      assert.equal(bad.status, 400, JSON.stringify(body));
      assert.match(bad.json.errors[0], re);
    }
    assert.deepEqual(await storedSerials(v, mount), before);
  });

  it('checks the CSR key against the role: type, size, any', async () => {
    const { mount, rootPem } = await mountWithRoot(v);
    await role(v, mount, 'rsa', { allow_any_name: true, key_type: 'rsa', key_bits: 3072 });
    await role(v, mount, 'ec', { allow_any_name: true, key_type: 'ec' });
    await role(v, mount, 'any', { allow_any_name: true, key_type: 'any' });
    let r = await v('POST', `${mount}/sign/ec`, { body: { csr: RSA2048.csr } });
    assert.equal(r.status, 400);
    assert.deepEqual(r.json.errors, ['role requires keys of type ec']);
    r = await v('POST', `${mount}/sign/rsa`, { body: { csr: RSA2048.csr } });
    assert.equal(r.status, 400);
    assert.match(r.json.errors[0], /role requires a minimum of a 3072-bit key, but CSR's key is 2048 bits/);
    r = await v('POST', `${mount}/sign/any`, { body: { csr: RSA1024.csr } });
    assert.equal(r.status, 400);
    assert.match(r.json.errors[0], /minimum of a 2048-bit key, but CSR's key is 1024 bits/);
    for (const csr of [ED.csr, RSA2048.csr, P256.csr]) {
      r = await v('POST', `${mount}/sign/any`, { body: { csr } });
      assert.equal(r.status, 200, r.text);
      assert.match(verifyChain(r.json.data.certificate, [rootPem]), /OK/);
    }
  });

  it('refuses broken, forged and empty CSRs and names outside the role with a 400, storing nothing', async () => {
    const { mount } = await mountWithRoot(v);
    await role(v, mount, 'web', { allowed_domains: 'example.com', allow_bare_domains: true, key_type: 'any' });
    const before = await storedSerials(v, mount);
    const other = opensslCsr('EC:P-256', '/CN=evil.org');
    const cases: [Record<string, unknown>, RegExp][] = [
      [{}, /"csr" is empty/],
      [
        { csr: '-----BEGIN CERTIFICATE REQUEST-----\nnot base64 !!\n-----END CERTIFICATE REQUEST-----' },
        /csr|base64|parsed/i,
      ],
      [
        {
          csr: '-----BEGIN CERTIFICATE REQUEST-----\nMIIBCgYJKoZIhvcNAQcCoIH8MIH5\n-----END CERTIFICATE REQUEST-----',
        },
        /certificate request could not be parsed/,
      ],
      [{ csr: tamperedCsr(P256.csr) }, /request signature invalid/],
      [{ csr: other.csr }, /common name evil\.org not allowed by this role/],
      [{ csr: P256.csr, ttl: '1x' }, /field "ttl"/],
      [{ csr: RSA_PSS.csr }, /unsupported|unknown|algorithm/i],
      [{ csr: ED448.csr }, /unsupported key algorithm ed448/],
      [{ csr: K256.csr }, /unsupported EC curve secp256k1/],
    ];
    for (const [body, re] of cases) {
      const r = await v('POST', `${mount}/sign/web`, { body });
      assert.equal(r.status, 400, `${JSON.stringify(body).slice(0, 80)}: ${r.text}`);
      assert.match(r.json.errors[0], re);
    }
    assert.deepEqual(await storedSerials(v, mount), before);
  });
});
