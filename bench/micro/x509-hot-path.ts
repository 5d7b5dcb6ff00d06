/**
 * In-process micro-benchmark of the certificate hot paths, one core, no HTTP:
 *   1. build + sign an EC P-256 leaf (subject, SANs, KU, EKU, SKI/AKI, AIA, CRL DP), PEM out;
 *   2. parse + verify a P-256 CSR, then build + sign the leaf for it;
 * each with @peculiar/x509 and with the lean codec in src/pki/crypto, plus the bare
 * node:crypto signature rate as the ceiling.
 *
 *   npx tsc -p . && node dist/bench/micro/x509-hot-path.js [seconds-per-case]
 */
import '../../src/pki/crypto/reflect-metadata.js';
import * as px from '@peculiar/x509';
import { createPrivateKey, sign, webcrypto } from 'node:crypto';
import { cpus } from 'node:os';
import { buildCertificate, createIssuerContext, selfSignedIssuerContext } from '../../src/pki/crypto/cert-builder.js';
import type { CertificateTemplate, IssuerContext } from '../../src/pki/crypto/cert-builder.js';
import { buildCsr, parseCsr } from '../../src/pki/crypto/csr.js';
import { generateKeySync } from '../../src/pki/crypto/key-generation.js';
import { exportPrivateKey } from '../../src/pki/crypto/keys.js';
import { encodeName, encodeSubject } from '../../src/pki/crypto/names.js';

const SECONDS = Number(process.argv[2] ?? 2);
const ROUNDS = Number(process.argv[3] ?? 3);
type CryptoKey = webcrypto.CryptoKey;
const subtle = webcrypto.subtle;
px.cryptoProvider.set(webcrypto as unknown as Parameters<typeof px.cryptoProvider.set>[0]);

const URLS = {
  issuingCertificates: ['http://127.0.0.1:8200/v1/pki/ca'],
  ocspServers: ['http://127.0.0.1:8200/v1/pki/ocsp'],
  crlDistributionPoints: ['http://127.0.0.1:8200/v1/pki/crl'],
};
const NOT_BEFORE = new Date('2026-01-01T00:00:00Z');
const NOT_AFTER = new Date('2026-02-01T00:00:00Z');

type Case = { name: string; fn: () => unknown };
type Rate = { wall: number; cpu: number };

/**
 * One timed run after a warm-up: operations per wall-clock second and per CPU-second of
 * the process (all threads). On a shared machine the CPU figure is the stable one.
 */
async function run(fn: () => unknown, seconds: number): Promise<Rate> {
  for (let i = 0; i < 200; i++) await fn();
  const cpu0 = process.cpuUsage();
  const start = performance.now();
  const end = start + seconds * 1000;
  let n = 0;
  while (performance.now() < end) {
    for (let i = 0; i < 50; i++) await fn();
    n += 50;
  }
  const wall = (performance.now() - start) / 1000;
  const used = process.cpuUsage(cpu0);
  return { wall: n / wall, cpu: n / ((used.user + used.system) / 1e6) };
}

/** Runs the cases interleaved for ROUNDS rounds and keeps each case's best round. */
async function measureAll(cases: Case[]): Promise<{ name: string; perSecond: number; perCpuSecond: number }[]> {
  const rounds = cases.map(() => [] as Rate[]);
  for (let r = 0; r < ROUNDS; r++) for (const [i, c] of cases.entries()) rounds[i]!.push(await run(c.fn, SECONDS));
  console.log(`${'case'.padEnd(50)} ${'ops/s'.padStart(8)} ${'ops/CPU-s'.padStart(10)}`);
  return cases.map((c, i) => {
    const perSecond = Math.max(...rounds[i]!.map((x) => x.wall));
    const perCpuSecond = Math.max(...rounds[i]!.map((x) => x.cpu));
    console.log(`${c.name.padEnd(50)} ${perSecond.toFixed(0).padStart(8)} ${perCpuSecond.toFixed(0).padStart(10)}`);
    return { name: c.name, perSecond: Math.round(perSecond), perCpuSecond: Math.round(perCpuSecond) };
  });
}

async function main(): Promise<void> {
  console.log(
    `node ${process.version}, ${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, ${ROUNDS} rounds x ${SECONDS}s per ` +
      `case, sequential on one thread, best round shown\n`,
  );

  // One CA key and certificate, shared by both implementations.
  const ca = generateKeySync('ec', 256);
  const caSubject = encodeSubject({ commonName: 'Bench Root', organization: ['Strongroom'] });
  const caCert = buildCertificate(selfSignedIssuerContext({ subjectDer: caSubject, privateKey: ca.privateKey }), {
    subject: caSubject,
    spki: ca.spki,
    notBefore: NOT_BEFORE,
    notAfter: new Date('2036-01-01T00:00:00Z'),
    basicConstraints: { ca: true },
    keyUsage: ['CertSign', 'CRLSign'],
  });
  const issuer: IssuerContext = createIssuerContext({
    nameDer: caSubject,
    keyId: caCert.subjectKeyId,
    privateKey: ca.privateKey,
    urls: URLS,
  });

  const leafKey = generateKeySync('ec', 256);
  const leafSpki = leafKey.spki;
  const csrPem = buildCsr({
    subjectDer: encodeName([{ type: 'CN', value: 'svc.example.com' }]),
    privateKey: leafKey.privateKey,
  }).pem;

  // The same key material as WebCrypto keys for @peculiar/x509.
  const algo = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const caPriv = await subtle.importKey('pkcs8', ca.pkcs8, algo, false, ['sign']);
  const pxCa = new px.X509Certificate(caCert.der);
  const leafPub = await subtle.importKey('spki', leafSpki, algo, true, ['verify']);

  const template = (spki: Buffer, cn: string): CertificateTemplate => ({
    subject: encodeSubject({ commonName: cn }),
    spki,
    notBefore: NOT_BEFORE,
    notAfter: NOT_AFTER,
    keyUsage: ['DigitalSignature', 'KeyAgreement', 'KeyEncipherment'],
    extKeyUsage: ['ServerAuth', 'ClientAuth'],
    subjectAltNames: [
      { type: 'dns', value: cn },
      { type: 'ip', value: '127.0.0.1' },
    ],
  });

  const caSki = caCert.subjectKeyId.toString('hex');
  const pxLeaf = async (publicKey: CryptoKey, cn: string): Promise<string> => {
    const cert = await px.X509CertificateGenerator.create({
      serialNumber: webcrypto
        .getRandomValues(Buffer.alloc(20))
        .toString('hex')
        .replace(/^[89a-f]/, '1'),
      issuer: pxCa.subject,
      subject: `CN=${cn}`,
      notBefore: NOT_BEFORE,
      notAfter: NOT_AFTER,
      publicKey,
      signingKey: caPriv,
      signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
      extensions: [
        new px.KeyUsagesExtension(
          px.KeyUsageFlags.digitalSignature | px.KeyUsageFlags.keyAgreement | px.KeyUsageFlags.keyEncipherment,
          true,
        ),
        new px.ExtendedKeyUsageExtension([px.ExtendedKeyUsage.serverAuth, px.ExtendedKeyUsage.clientAuth]),
        await px.SubjectKeyIdentifierExtension.create(publicKey),
        new px.AuthorityKeyIdentifierExtension(caSki),
        new px.AuthorityInfoAccessExtension({ ocsp: URLS.ocspServers, caIssuers: URLS.issuingCertificates }),
        new px.SubjectAlternativeNameExtension([
          { type: 'dns', value: cn },
          { type: 'ip', value: '127.0.0.1' },
        ]),
        new px.CRLDistributionPointsExtension(URLS.crlDistributionPoints),
      ],
    });
    return cert.toString('pem');
  };

  const digestKey = createPrivateKey(exportPrivateKey(ca.privateKey, { format: 'pem' }));
  const caPem = exportPrivateKey(ca.privateKey, { format: 'pem' });
  const tbsLike = Buffer.alloc(400, 1);
  const results = await measureAll([
    { name: 'node:crypto P-256 sign, cached KeyObject', fn: () => sign('sha256', tbsLike, digestKey) },
    { name: 'node:crypto P-256 sign, PEM parsed per call', fn: () => sign('sha256', tbsLike, caPem) },
    { name: '@peculiar/x509: build + sign P-256 leaf', fn: () => pxLeaf(leafPub, 'svc.example.com') },
    {
      name: 'lean codec: build + sign P-256 leaf',
      fn: () => buildCertificate(issuer, template(leafSpki, 'svc.example.com')).pem,
    },
    {
      name: 'lean codec: issue = P-256 keygen + leaf + key PEM',
      fn: () => {
        const k = generateKeySync('ec', 256);
        return [
          buildCertificate(issuer, template(k.spki, 'svc.example.com')).pem,
          exportPrivateKey(k, { format: 'pem' }),
        ];
      },
    },
    {
      name: '@peculiar/x509: parse + verify CSR, sign leaf',
      fn: async () => {
        const csr = new px.Pkcs10CertificateRequest(csrPem);
        if (!(await csr.verify())) throw new Error('bad csr');
        return pxLeaf(await csr.publicKey.export(algo, ['verify']), csr.subjectName.getField('CN')[0] ?? 'x');
      },
    },
    {
      name: 'lean codec: parse + verify CSR, sign leaf',
      fn: () => {
        const csr = parseCsr(csrPem);
        return buildCertificate(issuer, template(csr.spkiDer, 'svc.example.com')).pem;
      },
    },
  ]);
  console.log('\n' + JSON.stringify(results));
}

await main();
