import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { X509Certificate } from 'node:crypto';
import './reflect-metadata.js';
import * as px from '@peculiar/x509';
import { buildCertificate, createIssuerContext, selfSignedIssuerContext } from './cert-builder.js';
import type { IssuerContext } from './cert-builder.js';
import { isSelfSigned, parseCertificate, verifyCertificateSignature } from './cert-parser.js';
import { generateKeySync } from './key-generation.js';
import type { KeyType } from './key-generation.js';
import { spkiDer, subjectKeyIdFromSpki } from './keys.js';
import { encodeName, encodeSubject } from './names.js';
import { colonHex } from '../keys/key.js';

const dir = mkdtempSync(join(tmpdir(), 'cert-builder-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
let fileNo = 0;

function file(content: string | Buffer): string {
  const p = join(dir, `f${fileNo++}`);
  writeFileSync(p, content);
  return p;
}

function openssl(args: string[], input?: string | Buffer): { status: number | null; out: string } {
  const r = spawnSync('openssl', args, { input, encoding: 'utf8' });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

function text(pem: string): string {
  const r = openssl(['x509', '-noout', '-text'], pem);
  assert.equal(r.status, 0, r.out);
  return r.out;
}

function verify(caPem: string, leafPem: string, extra: string[] = []): { status: number | null; out: string } {
  return openssl(['verify', '-CAfile', file(caPem), ...extra, file(leafPem)]);
}

const NOW = new Date('2026-03-01T12:00:00.500Z');
const YEAR = 365 * 86400_000;

function makeRoot(type: KeyType, bits: number, opts: { usePss?: boolean; signatureBits?: number } = {}) {
  const key = generateKeySync(type, bits);
  const subjectDer = encodeSubject({
    commonName: `Root ${type} ${bits}`,
    organization: ['Example Org'],
    country: ['US'],
  });
  const self = selfSignedIssuerContext({ subjectDer, privateKey: key.privateKey });
  const root = buildCertificate(self, {
    subject: subjectDer,
    spki: spkiDer(key.publicKey),
    notBefore: new Date(NOW.getTime() - 60_000),
    notAfter: new Date(NOW.getTime() + 10 * YEAR),
    basicConstraints: { ca: true },
    keyUsage: ['CertSign', 'CRLSign'],
    ...opts,
  });
  const ctx = createIssuerContext({
    nameDer: subjectDer,
    keyId: root.subjectKeyId,
    privateKey: key.privateKey,
    urls: {
      issuingCertificates: ['http://ca.example/v1/pki/ca'],
      ocspServers: ['http://ca.example/v1/pki/ocsp'],
      crlDistributionPoints: ['http://ca.example/v1/pki/crl'],
    },
  });
  return { key, root, ctx };
}

function leaf(ctx: IssuerContext, opts: { usePss?: boolean; signatureBits?: number } = {}) {
  const k = generateKeySync('ec', 256);
  return buildCertificate(ctx, {
    subject: encodeSubject({ commonName: 'www.example.com', organization: ['Example Org'], ou: ['Web', 'Ops'] }),
    spki: spkiDer(k.publicKey),
    notBefore: new Date(NOW.getTime() - 30_000),
    notAfter: new Date(NOW.getTime() + 30 * 86400_000),
    keyUsage: ['DigitalSignature', 'KeyAgreement', 'KeyEncipherment'],
    extKeyUsage: ['ServerAuth', 'ClientAuth', '1.3.6.1.4.1.99999.1'],
    subjectAltNames: [
      { type: 'dns', value: 'www.example.com' },
      { type: 'dns', value: 'api.example.com' },
      { type: 'ip', value: '192.0.2.7' },
      { type: 'ip', value: '2001:db8::1' },
      { type: 'uri', value: 'spiffe://example.com/web' },
      { type: 'email', value: 'ops@example.com' },
      { type: 'otherName', oid: '1.3.6.1.4.1.311.20.2.3', value: 'devops@example.com', raw: Buffer.alloc(0) },
    ],
    ...opts,
  });
}

const at = ['-attime', String(Math.floor(NOW.getTime() / 1000))];

test('EC P-256 root and leaf: openssl shows every extension and verifies the chain', () => {
  const { root, ctx } = makeRoot('ec', 256);
  const rootText = text(root.pem);
  assert.match(rootText, /CA:TRUE/);
  assert.match(rootText, /Certificate Sign, CRL Sign/);
  assert.match(rootText, /Signature Algorithm: ecdsa-with-SHA256/);
  assert.equal(verify(root.pem, root.pem, at).status, 0);

  const cert = leaf(ctx);
  const t = text(cert.pem);
  assert.match(
    t,
    new RegExp(
      String.raw`DNS:www\.example\.com, DNS:api\.example\.com, IP Address:192\.0\.2\.7, IP Address:2001:DB8:0:0:` +
        String.raw`0:0:0:1, URI:spiffe:\/\/example\.com\/web, email:ops@example\.com, othername: ` +
        String.raw`(UPN|msUPN|1\.3\.6\.1\.4\.1\.311\.20\.2\.3)[:=:]+ ?devops@example\.com`,
    ),
  );
  assert.match(t, /X509v3 Key Usage: critical\s+Digital Signature, Key Encipherment, Key Agreement/);
  assert.match(t, /TLS Web Server Authentication, TLS Web Client Authentication, 1\.3\.6\.1\.4\.1\.99999\.1/);
  assert.match(t, /OCSP - URI:http:\/\/ca\.example\/v1\/pki\/ocsp/);
  assert.match(t, /CA Issuers - URI:http:\/\/ca\.example\/v1\/pki\/ca/);
  assert.match(t, /X509v3 CRL Distribution Points:\s+Full Name:\s+URI:http:\/\/ca\.example\/v1\/pki\/crl/);
  assert.doesNotMatch(t, /Basic Constraints/);
  assert.match(
    t,
    new RegExp(
      String.raw`Subject: O = Example Org, OU = Ops \+ OU = Web, CN = www\.example\.com|Subject: O = Example ` +
        String.raw`Org, OU = Web \+ OU = Ops, CN = www\.example\.com`,
    ),
  );
  assert.match(t, /Not Before: Mar {2}1 11:59:30 2026 GMT/);
  assert.equal(verify(root.pem, cert.pem, at).status, 0);

  // SKI is SHA-1 of the key bits; AKI is the root's SKI.
  const x = new X509Certificate(cert.der);
  assert.equal(x.serialNumber.toLowerCase().replace(/^0+/, ''), cert.serialHex.replace(/^0+/, ''));
  // Key ids keep their leading zero bytes (a serial's formatting would drop them: 1 SKI in 256 starts with 00).
  const skiHex = colonHex(cert.subjectKeyId.toString('hex')).toUpperCase();
  assert.match(t, new RegExp(`Subject Key Identifier:\\s+${skiHex}`));
  assert.match(
    t,
    new RegExp(`Authority Key Identifier:\\s+(keyid:)?${colonHex(root.subjectKeyId.toString('hex')).toUpperCase()}`),
  );
  assert.equal(cert.serial.length <= 20 && (cert.serial[0]! & 0x80) === 0, true);
});

test('a leaf signed by another key fails openssl verify', () => {
  const { root } = makeRoot('ec', 256);
  const other = makeRoot('ec', 256);
  // Same issuer name and key id as `root`, but signed with a different key.
  const forged = createIssuerContext({
    nameDer: parseCertificate(root.der).subject.der,
    keyId: root.subjectKeyId,
    privateKey: other.key.privateKey,
  });
  const r = verify(root.pem, leaf(forged).pem, at);
  assert.notEqual(r.status, 0);
  assert.match(r.out, /signature failure|certificate signature failure/i);
});

for (const [type, bits, alg] of [
  ['ec', 384, 'ecdsa-with-SHA384'],
  ['ec', 521, 'ecdsa-with-SHA512'],
  ['ec', 224, 'ecdsa-with-SHA256'],
  ['ed25519', 0, 'ED25519'],
] as const) {
  test(`${type} ${bits} issuer signs with ${alg}`, () => {
    const { root, ctx } = makeRoot(type, bits);
    const cert = leaf(ctx);
    assert.match(text(cert.pem), new RegExp(`Signature Algorithm: ${alg}`));
    assert.equal(verify(root.pem, cert.pem, at).status, 0);
  });
}

test('RSA issuer: PKCS#1 v1.5 by signature_bits, and PSS', () => {
  const { root, ctx, key } = makeRoot('rsa', 2048);
  assert.match(text(root.pem), /Signature Algorithm: sha256WithRSAEncryption/);
  const c384 = leaf(ctx, { signatureBits: 384 });
  assert.match(text(c384.pem), /Signature Algorithm: sha384WithRSAEncryption/);
  assert.equal(c384.signatureAlgorithm, 'SHA384WithRSA');
  assert.equal(verify(root.pem, c384.pem, at).status, 0);
  for (const bitsUsed of [256, 512]) {
    const pss = leaf(ctx, { usePss: true, signatureBits: bitsUsed });
    const t = text(pss.pem);
    assert.match(t, /Signature Algorithm: rsassaPss/);
    assert.match(t, new RegExp(`Hash Algorithm: sha${bitsUsed}`));
    assert.match(t, new RegExp(`Salt Length: 0x${(bitsUsed / 8).toString(16).toUpperCase()}`));
    assert.equal(verify(root.pem, pss.pem, at).status, 0);
    assert.equal(verifyCertificateSignature(parseCertificate(pss.pem), key.publicKey), true);
  }
});

test('intermediate CA with pathLen, name constraints and policies chains under the root', () => {
  const { root, ctx } = makeRoot('ec', 256);
  const ik = generateKeySync('ec', 384);
  const iSubject = encodeName([{ type: 'CN', value: 'Intermediate' }]);
  const inter = buildCertificate(ctx, {
    subject: iSubject,
    spki: spkiDer(ik.publicKey),
    notBefore: NOW,
    notAfter: new Date(NOW.getTime() + YEAR),
    basicConstraints: { ca: true, pathLen: 0 },
    keyUsage: ['CertSign', 'CRLSign', 'DigitalSignature'],
    nameConstraints: { permittedDnsDomains: ['example.com'], excludedIpRanges: ['10.0.0.0/8'] },
    policies: [{ oid: '2.23.140.1.2.1', cps: 'https://ca.example/cps', notice: 'hello' }],
  });
  const t = text(inter.pem);
  assert.match(t, /CA:TRUE, pathlen:0/);
  assert.match(
    t,
    /Name Constraints: critical\s+Permitted:\s+DNS:example\.com\s+Excluded:\s+IP:10\.0\.0\.0\/255\.0\.0\.0/,
  );
  assert.match(
    t,
    /Policy: 2\.23\.140\.1\.2\.1\s+CPS: https:\/\/ca\.example\/cps\s+User Notice:\s+Explicit Text: hello/,
  );
  const ictx = createIssuerContext({ nameDer: iSubject, keyId: inter.subjectKeyId, privateKey: ik.privateKey });
  const l = buildCertificate(ictx, {
    subject: encodeName([{ type: 'CN', value: 'svc.example.com' }]),
    spki: spkiDer(generateKeySync('ec', 256).publicKey),
    notBefore: NOW,
    notAfter: new Date(NOW.getTime() + 86400_000),
    subjectAltNames: [{ type: 'dns', value: 'svc.example.com' }],
    basicConstraints: { ca: false },
  });
  assert.match(text(l.pem), /Signature Algorithm: ecdsa-with-SHA384[\s\S]*CA:FALSE/);
  const r = openssl(['verify', '-CAfile', file(root.pem), '-untrusted', file(inter.pem), ...at, file(l.pem)]);
  assert.equal(r.status, 0, r.out);
});

test('validity: UTCTime through 2049, GeneralizedTime from 2050, up to 9999-12-31T23:59:59Z', () => {
  const { ctx } = makeRoot('ec', 256);
  const k = spkiDer(generateKeySync('ec', 256).publicKey);
  const c = buildCertificate(ctx, {
    subject: encodeName([{ type: 'CN', value: 'long' }]),
    spki: k,
    notBefore: new Date('2049-12-31T23:59:59Z'),
    notAfter: new Date('9999-12-31T23:59:59Z'),
  });
  const t = text(c.pem);
  assert.match(t, /Not Before: Dec 31 23:59:59 2049 GMT/);
  assert.match(t, /Not After : Dec 31 23:59:59 9999 GMT/);
  const asn = openssl(['asn1parse', '-inform', 'DER'], c.der).out;
  assert.match(asn, /UTCTIME\s+:491231235959Z/);
  assert.match(asn, /GENERALIZEDTIME\s+:99991231235959Z/);
  const p = parseCertificate(c.der);
  assert.equal(p.notAfter.toISOString(), '9999-12-31T23:59:59.000Z');
  const c2 = buildCertificate(ctx, {
    subject: Buffer.from([0x30, 0]),
    spki: k,
    notBefore: NOW,
    notAfter: new Date('2050-01-01T00:00:00Z'),
    subjectAltNames: [{ type: 'dns', value: 'x.example' }],
  });
  assert.match(openssl(['asn1parse', '-inform', 'DER'], c2.der).out, /GENERALIZEDTIME\s+:20500101000000Z/);
  // An empty subject makes the SAN extension critical.
  assert.match(text(c2.pem), /Subject Alternative Name: critical/);
});

test('our parser and @peculiar/x509 agree on a built certificate', () => {
  const { root, ctx, key } = makeRoot('ec', 256);
  const cert = leaf(ctx);
  const ours = parseCertificate(cert.pem);
  const theirs = new px.X509Certificate(cert.der);
  assert.equal(ours.serialHex, theirs.serialNumber.toLowerCase().replace(/^(00)+/, ''));
  assert.equal(ours.subject.rdns.flat().find((a) => a.type === 'CN')?.value, 'www.example.com');
  assert.deepEqual(ours.extensions.keyUsage, ['DigitalSignature', 'KeyEncipherment', 'KeyAgreement']);
  assert.deepEqual(ours.extensions.extKeyUsage, ['1.3.6.1.5.5.7.3.1', '1.3.6.1.5.5.7.3.2', '1.3.6.1.4.1.99999.1']);
  assert.deepEqual(
    ours.extensions.subjectAltNames?.map((n) => ('value' in n ? n.value : n.type)),
    [
      'www.example.com',
      'api.example.com',
      '192.0.2.7',
      '2001:db8::1',
      'spiffe://example.com/web',
      'ops@example.com',
      'devops@example.com',
    ],
  );
  assert.deepEqual(ours.extensions.ocspServers, ['http://ca.example/v1/pki/ocsp']);
  assert.deepEqual(ours.extensions.issuingCertificates, ['http://ca.example/v1/pki/ca']);
  assert.deepEqual(ours.extensions.crlDistributionPoints, ['http://ca.example/v1/pki/crl']);
  assert.deepEqual(ours.extensions.authorityKeyId, root.subjectKeyId);
  assert.deepEqual(ours.extensions.subjectKeyId, subjectKeyIdFromSpki(ours.spkiDer));
  assert.deepEqual(ours.issuer.der, parseCertificate(root.der).subject.der);
  assert.equal(verifyCertificateSignature(ours, key.publicKey), true);
  assert.equal(verifyCertificateSignature(ours, generateKeySync('ec', 256).publicKey), false);
  assert.equal(isSelfSigned(parseCertificate(root.pem)), true);
  assert.equal(isSelfSigned(ours), false);
  assert.equal(new X509Certificate(cert.der).verify(new X509Certificate(root.der).publicKey), true);
});
