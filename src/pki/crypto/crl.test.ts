import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { webcrypto } from 'node:crypto';
import './reflect-metadata.js';
import * as px from '@peculiar/x509';
import { buildCertificate, selfSignedIssuerContext } from './cert-builder.js';
import type { IssuerContext } from './cert-builder.js';
import { buildCrl, crlToPem, encodeRevokedEntries } from './crl.js';
import { parseCrl, verifyCrlSignature } from './crl-parser.js';
import type { RevokedEntry } from './crl.js';
import { generateKeySync } from './key-generation.js';
import type { GeneratedKey, KeyType } from './key-generation.js';
import { generalizedTime } from './der.js';
import { encodeSubject } from './names.js';
import { pemEncode } from './pem.js';
import { randomSerial, serialToHex } from './serial.js';

const dir = mkdtempSync(join(tmpdir(), 'crl-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
let fileNo = 0;
function file(content: string | Buffer): string {
  const p = join(dir, `f${fileNo++}`);
  writeFileSync(p, content);
  return p;
}

function openssl(args: string[]): { status: number | null; out: string } {
  const r = spawnSync('openssl', args, { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

const NOW = new Date('2026-03-01T12:00:00.700Z');
const DAY = 86400_000;

interface Ca {
  key: GeneratedKey;
  pem: string;
  ctx: IssuerContext;
}

function makeCa(type: KeyType, bits: number, opts: { usePss?: boolean; deltaUrls?: string[] } = {}): Ca {
  const key = generateKeySync(type, bits);
  const subjectDer = encodeSubject({ commonName: `CRL Root ${type} ${bits}`, organization: ['Example Org'] });
  const ctx = selfSignedIssuerContext({
    subjectDer,
    privateKey: key.privateKey,
    urls: { deltaCrlDistributionPoints: opts.deltaUrls ?? [] },
  });
  const cert = buildCertificate(ctx, {
    subject: subjectDer,
    spki: key.spki,
    notBefore: new Date(NOW.getTime() - DAY),
    notAfter: new Date(NOW.getTime() + 3650 * DAY),
    basicConstraints: { ca: true },
    keyUsage: ['CertSign', 'CRLSign'],
    usePss: opts.usePss,
  });
  return { key, pem: cert.pem, ctx };
}

function verifyCrl(ca: Ca, der: Buffer): { status: number | null; out: string } {
  return openssl(['crl', '-in', file(crlToPem(der)), '-noout', '-verify', '-CAfile', file(ca.pem)]);
}

function crlText(der: Buffer): string {
  const r = openssl(['crl', '-in', file(der), '-inform', 'DER', '-noout', '-text']);
  assert.equal(r.status, 0, r.out);
  return r.out;
}

const ENTRIES: RevokedEntry[] = [
  { serial: '1a2b3c', revocationDate: new Date('2026-02-01T10:00:00Z'), reason: 1 },
  { serial: '00:ff:01', revocationDate: Date.parse('2026-02-02T11:30:15Z') },
  { serial: '8', revocationDate: '2026-02-03T00:00:00.000Z', reason: 4 },
  { serial: '7fffffffffffffffffffffffffffffffffffffff', revocationDate: new Date('2051-06-01T00:00:00Z'), reason: 6 },
];

for (const [label, type, bits, usePss, alg] of [
  ['EC P-256', 'ec', 256, false, 'ecdsa-with-SHA256'],
  ['RSA PKCS#1', 'rsa', 2048, false, 'sha256WithRSAEncryption'],
  ['RSA PSS', 'rsa', 2048, true, 'rsassaPss'],
  ['Ed25519', 'ed25519', 0, false, 'ED25519'],
] as const) {
  test(`${label} issuer: openssl verifies the CRL and shows its entries, number and reasons`, () => {
    const ca = makeCa(type, bits, { usePss });
    const crl = buildCrl(ca.ctx, {
      thisUpdate: NOW,
      nextUpdate: new Date(NOW.getTime() + 3 * DAY),
      crlNumber: 42,
      entries: ENTRIES,
      usePss,
    });
    const v = verifyCrl(ca, crl.der);
    assert.equal(v.status, 0, v.out);
    assert.match(v.out, /verify OK/);
    const t = crlText(crl.der);
    assert.match(t, new RegExp(`Signature Algorithm: ${alg}`));
    assert.match(t, /Version 2 \(0x1\)/);
    assert.match(t, /Last Update: Mar {2}1 12:00:00 2026 GMT/);
    assert.match(t, /Next Update: Mar {2}4 12:00:00 2026 GMT/);
    assert.match(t, /X509v3 CRL Number:\s+42/);
    assert.match(
      t,
      new RegExp(
        String.raw`Serial Number: 1A2B3C\s+Revocation Date: Feb {2}1 10:00:00 2026 GMT\s+CRL entry extensions:` +
          String.raw`\s+X509v3 CRL Reason Code:\s+Key Compromise`,
      ),
    );
    assert.match(t, /Serial Number: FF01\s+Revocation Date: Feb {2}2 11:30:15 2026 GMT\s+Serial Number: 08/);
    assert.match(
      t,
      new RegExp(
        String.raw`Serial Number: 08\s+Revocation Date: Feb {2}3 00:00:00 2026 GMT\s+CRL entry extensions:` +
          String.raw`\s+X509v3 CRL Reason Code:\s+Superseded`,
      ),
    );
    assert.match(
      t,
      new RegExp(
        String.raw`Serial Number: 7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF\s+Revocation Date: Jun {2}1 00:00:00 ` +
          String.raw`2051 GMT\s+CRL entry extensions:\s+X509v3 CRL Reason Code:\s+Certificate Hold`,
      ),
    );
    assert.doesNotMatch(t, /Delta CRL Indicator/);
    assert.equal(
      crl.signatureAlgorithm,
      type === 'ec'
        ? 'ECDSAWithSHA256'
        : type === 'ed25519'
          ? 'PureEd25519'
          : usePss
            ? 'SHA256WithRSAPSS'
            : 'SHA256WithRSA',
    );
  });
}

test('a CRL signed by another key fails openssl verification', () => {
  const ca = makeCa('ec', 256);
  const other = makeCa('ec', 256);
  const forged = selfSignedIssuerContext({
    subjectDer: ca.ctx.nameDer,
    privateKey: other.key.privateKey,
    keyId: ca.ctx.keyId,
  });
  const crl = buildCrl(forged, {
    thisUpdate: NOW,
    nextUpdate: new Date(NOW.getTime() + DAY),
    crlNumber: 1,
    entries: ENTRIES,
  });
  const v = verifyCrl(ca, crl.der);
  assert.match(v.out, /verify fail|signature failure/i);
  assert.equal(verifyCrlSignature(parseCrl(crl.der), ca.key.publicKey), false);
  assert.equal(verifyCrlSignature(parseCrl(crl.der), other.key.publicKey), true);
});

test('delta CRL carries a critical Delta CRL Indicator; complete CRL carries Freshest CRL and IDP', () => {
  const ca = makeCa('ec', 256, { deltaUrls: ['http://ca.example/v1/pki/crl/delta'] });
  const full = buildCrl(ca.ctx, {
    thisUpdate: NOW,
    nextUpdate: new Date(NOW.getTime() + DAY),
    crlNumber: 7,
    entries: ENTRIES.slice(0, 1),
    issuingDistributionPoint: { urls: ['http://ca.example/v1/pki/crl'], onlyContainsUserCerts: true },
  });
  const ft = crlText(full.der);
  assert.match(ft, /X509v3 Freshest CRL:\s+Full Name:\s+URI:http:\/\/ca\.example\/v1\/pki\/crl\/delta/);
  assert.match(
    ft,
    new RegExp(
      String.raw`X509v3 Issuing Distribution Point: critical\s+Full Name:\s+URI:http:` +
        String.raw`\/\/ca\.example\/v1\/pki\/crl\s+Only User Certificates`,
    ),
  );
  assert.equal(verifyCrl(ca, full.der).status, 0);

  const delta = buildCrl(ca.ctx, {
    thisUpdate: NOW,
    nextUpdate: new Date(NOW.getTime() + DAY),
    crlNumber: 8,
    deltaBaseCrlNumber: 7,
    entries: [{ serial: '0a', revocationDate: NOW, reason: 8 }],
  });
  const dt = crlText(delta.der);
  assert.match(dt, /X509v3 Delta CRL Indicator: critical\s+7/);
  assert.match(dt, /X509v3 CRL Number:\s+8/);
  assert.match(dt, /Remove From CRL/);
  assert.doesNotMatch(dt, /Freshest CRL/);
  const v = verifyCrl(ca, delta.der);
  assert.equal(v.status, 0, v.out);
  const parsed = parseCrl(delta.der);
  assert.equal(parsed.deltaBaseCrlNumber, 7n);
  assert.equal(parsed.crlNumber, 8n);
  assert.equal(delta.deltaBaseCrlNumber, 7n);
});

test('entry extensions and extra CRL extensions are written; a duplicate CRL Number is skipped', () => {
  const ca = makeCa('ec', 256);
  const invalidity = { oid: '2.5.29.24', critical: false, value: generalizedTime(new Date('2026-01-15T08:00:00Z')) };
  const crl = buildCrl(ca.ctx, {
    thisUpdate: NOW,
    nextUpdate: new Date(NOW.getTime() + DAY),
    crlNumber: 3,
    entries: [
      { serial: '0101', revocationDate: NOW, reason: 1, extensions: [invalidity] },
      { serial: '0202', revocationDate: NOW, extensions: [invalidity] },
      // An extension with a long OID, beyond the size estimate of its entry.
      {
        serial: '0303',
        revocationDate: NOW,
        extensions: [{ oid: `1.3.6.1.4.1.${'99999.'.repeat(20)}1`, critical: false, value: Buffer.from([0x05, 0x00]) }],
      },
    ],
    extraExtensions: [
      { oid: '2.5.29.20', critical: false, value: Buffer.from([0x02, 0x01, 0x63]) },
      { oid: '1.3.6.1.4.1.99999.7', critical: false, value: Buffer.from([0x05, 0x00]) },
    ],
  });
  const t = crlText(crl.der);
  assert.match(
    t,
    new RegExp(
      String.raw`Serial Number: 0101\s+Revocation Date: .*\s+CRL entry extensions:\s+X509v3 CRL Reason Code:` +
        String.raw`\s+Key Compromise\s+Invalidity Date:\s+Jan 15 08:00:00 2026 GMT`,
    ),
  );
  assert.match(
    t,
    /Serial Number: 0202\s+Revocation Date: .*\s+CRL entry extensions:\s+Invalidity Date:\s+Jan 15 08:00:00 2026 GMT/,
  );
  assert.match(t, /X509v3 CRL Number:\s+3\s/);
  assert.equal(t.match(/CRL Number/g)?.length, 1);
  assert.match(t, /1\.3\.6\.1\.4\.1\.99999\.7:/);
  assert.equal(verifyCrl(ca, crl.der).status, 0);
  assert.match(t, /Serial Number: 0303\s+Revocation Date: .*\s+CRL entry extensions:\s+1\.3\.6\.1\.4\.1\.99999\.99999/);
  assert.deepEqual(
    parseCrl(crl.der).entries.map((e) => e.reason),
    [1, undefined, undefined],
  );
  // Alone, so no other entry's slack covers its size estimate.
  const longOid = { oid: `1.3.6.1.4.1.${'99999.'.repeat(40)}1`, critical: true, value: Buffer.from([0x05, 0x00]) };
  const alone = buildCrl(ca.ctx, {
    thisUpdate: NOW,
    nextUpdate: new Date(NOW.getTime() + DAY),
    crlNumber: 4,
    entries: [{ serial: '04', revocationDate: NOW, extensions: [longOid] }],
  });
  assert.equal(parseCrl(alone.der).entries[0]!.serialHex, '04');
  assert.match(
    crlText(alone.der),
    /Serial Number: 04\s+Revocation Date: .*\s+CRL entry extensions:\s+1\.3\.6\.1\.4\.1\.99999\.99999.*: critical/,
  );
});

test('an empty CRL has no revokedCertificates list', () => {
  const ca = makeCa('ec', 256);
  const crl = buildCrl(ca.ctx, {
    thisUpdate: NOW,
    nextUpdate: new Date(NOW.getTime() + DAY),
    crlNumber: 0,
    entries: [],
  });
  assert.match(crlText(crl.der), /No Revoked Certificates/);
  assert.equal(verifyCrl(ca, crl.der).status, 0);
  const p = parseCrl(crlToPem(crl.der));
  assert.equal(p.entries.length, 0);
  assert.equal(p.crlNumber, 0n);
});

test('parser reads our CRL and one made by @peculiar/x509', async () => {
  const ca = makeCa('ec', 256);
  const crl = buildCrl(ca.ctx, {
    thisUpdate: NOW,
    nextUpdate: new Date(NOW.getTime() + DAY),
    crlNumber: 123456789012n,
    entries: ENTRIES,
  });
  const p = parseCrl(crl.der);
  assert.equal(p.version, 2);
  assert.equal(p.crlNumber, 123456789012n);
  assert.equal(p.deltaBaseCrlNumber, undefined);
  assert.deepEqual(p.authorityKeyId, ca.ctx.keyId);
  assert.equal(p.thisUpdate.toISOString(), '2026-03-01T12:00:00.000Z');
  assert.deepEqual(
    p.entries.map((e) => [e.serialHex, e.revocationDate.toISOString(), e.reason]),
    [
      ['1a2b3c', '2026-02-01T10:00:00.000Z', 1],
      ['ff01', '2026-02-02T11:30:15.000Z', undefined],
      ['08', '2026-02-03T00:00:00.000Z', 4],
      ['7fffffffffffffffffffffffffffffffffffffff', '2051-06-01T00:00:00.000Z', 6],
    ],
  );
  assert.equal(verifyCrlSignature(p, ca.key.publicKey), true);
  assert.equal(parseCrl(crl.der, { entries: false }).entries.length, 0);

  px.cryptoProvider.set(webcrypto as unknown as Parameters<typeof px.cryptoProvider.set>[0]);
  const alg = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const keys = (await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const theirs = await px.X509CrlGenerator.create({
    issuer: 'CN=Peculiar',
    thisUpdate: NOW,
    nextUpdate: new Date(NOW.getTime() + DAY),
    signingKey: keys.privateKey,
    signingAlgorithm: alg,
    entries: [
      {
        serialNumber: '0badc0de',
        revocationDate: new Date('2026-01-05T00:00:00Z'),
        reason: px.X509CrlReason.keyCompromise,
      },
    ],
    extensions: [new px.Extension('2.5.29.20', false, Buffer.from([0x02, 0x01, 0x05]))],
  });
  const tp = parseCrl(pemEncode('X509 CRL', Buffer.from(theirs.rawData)));
  assert.equal(tp.crlNumber, 5n);
  assert.deepEqual(
    tp.entries.map((e) => [e.serialHex, e.revocationDate.toISOString(), e.reason]),
    [['0badc0de', '2026-01-05T00:00:00.000Z', 1]],
  );
});

test('invalid input is refused', () => {
  const ca = makeCa('ec', 256);
  const base = { thisUpdate: NOW, nextUpdate: new Date(NOW.getTime() + DAY), crlNumber: 1 };
  assert.throws(
    () => buildCrl(ca.ctx, { ...base, entries: [{ serial: '01', revocationDate: NOW, reason: 7 }] }),
    /reason/,
  );
  assert.throws(() => buildCrl(ca.ctx, { ...base, entries: [{ serial: 'xyz', revocationDate: NOW }] }), /serial/);
  assert.throws(() => buildCrl(ca.ctx, { ...base, entries: [{ serial: '01', revocationDate: Number.NaN }] }), /date/);
  assert.throws(
    () => buildCrl(ca.ctx, { ...base, nextUpdate: new Date(NOW.getTime() - DAY), entries: [] }),
    /nextUpdate/,
  );
  assert.throws(() => buildCrl(ca.ctx, { ...base, crlNumber: -1, entries: [] }), /negative/);
  assert.throws(
    () => parseCrl(Buffer.from([0x30, 0x03, 0x02, 0x01, 0x01])),
    (e: Error) => /unable to parse CRL/.test(e.message),
  );
});

test('100,000 entries: built, verified by openssl and read back', (t) => {
  const ca = makeCa('ec', 256);
  const entries: RevokedEntry[] = [];
  const start = Date.parse('2026-01-01T00:00:00Z');
  for (let i = 0; i < 100_000; i++)
    entries.push({
      serial: serialToHex(randomSerial()),
      revocationDate: start + i * 7_000,
      reason: i % 11 === 7 ? 0 : i % 11,
    });
  const t0 = performance.now();
  const crl = buildCrl(ca.ctx, { thisUpdate: NOW, nextUpdate: new Date(NOW.getTime() + DAY), crlNumber: 99, entries });
  t.diagnostic(
    `100,000-entry CRL built and signed in ${(performance.now() - t0).toFixed(0)} ms (${crl.der.length} bytes)`,
  );
  const v = verifyCrl(ca, crl.der);
  assert.equal(v.status, 0, v.out);
  const text = crlText(crl.der);
  assert.equal(text.match(/Serial Number: /g)?.length, 100_000);
  const p = parseCrl(crl.der);
  assert.equal(p.entries.length, 100_000);
  for (const i of [0, 1, 4_567, 99_999]) {
    assert.equal(p.entries[i]!.serialHex, entries[i]!.serial);
    assert.equal(p.entries[i]!.revocationDate.getTime(), entries[i]!.revocationDate);
    assert.equal(p.entries[i]!.reason, entries[i]!.reason || undefined);
  }
});

test('stored ISO revocation times encode exactly like the same instants given as numbers', () => {
  const times = [
    '1950-01-01T00:00:00.000Z',
    '2026-11-22T07:24:18.957Z',
    '2049-12-31T23:59:59.999Z',
    '2050-01-01T00:00:00.000Z',
    '1949-12-31T23:59:59Z',
    '2030-06-15T12:00:00Z',
  ];
  for (const t of times) {
    const asText = encodeRevokedEntries([{ serial: '0a1b', revocationDate: t }]);
    const asNumber = encodeRevokedEntries([{ serial: '0a1b', revocationDate: Date.parse(t) }]);
    assert.deepEqual(asText, asNumber, t);
  }
});
