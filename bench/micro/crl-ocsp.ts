/**
 * In-process micro-benchmark of revocation output, one core, no HTTP or database:
 *
 *   crl  — a full CRL rebuild (EC P-256 issuer, random 20-byte serials, a reason on most
 *          entries): the lean builder at 10,000 and 100,000 entries, @peculiar/x509 at
 *          1,000 / 5,000 / 10,000 (its time grows faster than linearly, so 100,000 is not run);
 *   ocsp — parse a request and answer it: signed per request (nonce), and from the cache
 *          (no nonce), for EC P-256 and RSA 2048 issuers.
 *
 *   npx tsc -p . && node dist/bench/micro/crl-ocsp.js crl [rounds]
 *   npx tsc -p . && node dist/bench/micro/crl-ocsp.js ocsp [seconds-per-case]
 */
import '../../src/pki/crypto/reflect-metadata.js';
import * as px from '@peculiar/x509';
import { createHash, webcrypto } from 'node:crypto';
import { cpus } from 'node:os';
import { buildCertificate, selfSignedIssuerContext } from '../../src/pki/crypto/cert-builder.js';
import type { IssuerContext } from '../../src/pki/crypto/cert-builder.js';
import { buildCrl } from '../../src/pki/crypto/crl.js';
import type { RevokedEntry } from '../../src/pki/crypto/crl.js';
import { generateKeySync } from '../../src/pki/crypto/key-generation.js';
import type { GeneratedKey, KeyType } from '../../src/pki/crypto/key-generation.js';
import { encodeSubject } from '../../src/pki/crypto/names.js';
import { OcspResponder, parseOcspRequest } from '../../src/pki/crypto/ocsp.js';
import { OcspCache, answerOcspRequest } from '../../src/pki/crypto/ocsp-answer.js';
import { randomSerial, serialToHex } from '../../src/pki/crypto/serial.js';
import {
  NULL_DER,
  TAG,
  decodeBitString,
  explicit,
  integer,
  octetString,
  oid,
  parseDer,
  sequence,
} from '../../src/pki/crypto/der.js';

const MODE = process.argv[2] ?? 'crl';
const ARG = Number(process.argv[3] ?? 0);
const NOW = new Date('2026-03-01T00:00:00Z');
px.cryptoProvider.set(webcrypto as unknown as Parameters<typeof px.cryptoProvider.set>[0]);

function makeCa(type: KeyType, bits: number): { key: GeneratedKey; ctx: IssuerContext; der: Buffer } {
  const key = generateKeySync(type, bits);
  const subject = encodeSubject({ commonName: 'Bench Root', organization: ['Strongroom'] });
  const ctx = selfSignedIssuerContext({ subjectDer: subject, privateKey: key.privateKey });
  const cert = buildCertificate(ctx, {
    subject,
    spki: key.spki,
    notBefore: NOW,
    notAfter: new Date('2036-01-01T00:00:00Z'),
    basicConstraints: { ca: true },
    keyUsage: ['CertSign', 'CRLSign'],
  });
  return { key, ctx, der: cert.der };
}

function entries(n: number): RevokedEntry[] {
  const out: RevokedEntry[] = [];
  for (let i = 0; i < n; i++)
    out.push({ serial: serialToHex(randomSerial()), revocationDate: NOW.getTime() - i * 1000, reason: i % 4 });
  return out;
}

async function crlMode(rounds: number): Promise<void> {
  const ca = makeCa('ec', 256);
  const algo = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const pxKey = await webcrypto.subtle.importKey('pkcs8', ca.key.pkcs8, algo, false, ['sign']);
  const ours = async (list: RevokedEntry[]): Promise<number> =>
    buildCrl(ca.ctx, {
      thisUpdate: NOW,
      nextUpdate: new Date(NOW.getTime() + 86400_000),
      crlNumber: 1,
      entries: list,
    }).der.length;
  const theirs = async (list: RevokedEntry[]): Promise<number> => {
    const crl = await px.X509CrlGenerator.create({
      issuer: 'CN=Bench Root, O=Strongroom',
      thisUpdate: NOW,
      nextUpdate: new Date(NOW.getTime() + 86400_000),
      signingKey: pxKey,
      signingAlgorithm: algo,
      entries: list.map((e) => ({
        serialNumber: e.serial,
        revocationDate: new Date(e.revocationDate),
        reason: e.reason || undefined,
      })),
      extensions: [new px.Extension('2.5.29.20', false, Buffer.from([0x02, 0x01, 0x01]))],
    });
    return crl.rawData.byteLength;
  };
  const cases: [string, number, (l: RevokedEntry[]) => Promise<number>][] = [
    ['lean codec', 10_000, ours],
    ['lean codec', 100_000, ours],
    ['@peculiar/x509', 1_000, theirs],
    ['@peculiar/x509', 5_000, theirs],
    ['@peculiar/x509', 10_000, theirs],
  ];
  await ours(entries(1000)); // warm-up
  for (const [name, n, fn] of cases) {
    const list = entries(n);
    const times: number[] = [];
    let size = 0;
    for (let r = 0; r < rounds; r++) {
      const t0 = performance.now();
      size = await fn(list);
      times.push(performance.now() - t0);
    }
    console.log(
      `${name.padEnd(16)} ${String(n).padStart(7)} entries: best ${Math.min(...times)
        .toFixed(0)
        .padStart(6)} ms   rounds: ${times.map((t) => t.toFixed(0)).join(', ')} ms   (${size} bytes)`,
    );
  }
}

/** An OCSPRequest for one serial of `ca` with a SHA-1 CertID, optionally with a 16-byte nonce, as openssl writes it. */
function request(ca: { ctx: IssuerContext; key: GeneratedKey }, serial: Buffer, nonce: boolean): Buffer {
  const r = parseDer(ca.key.spki).children();
  r.expect(TAG.SEQUENCE);
  const keyBits = decodeBitString(r.expect(TAG.BIT_STRING)).bytes;
  const certId = sequence(
    sequence(oid('1.3.14.3.2.26'), NULL_DER),
    octetString(createHash('sha1').update(ca.ctx.nameDer).digest()),
    octetString(createHash('sha1').update(keyBits).digest()),
    integer(serial),
  );
  const tbs = [sequence(sequence(certId))];
  if (nonce)
    tbs.push(
      explicit(
        2,
        sequence(
          sequence(oid('1.3.6.1.5.5.7.48.1.2'), octetString(octetString(webcrypto.getRandomValues(Buffer.alloc(16))))),
        ),
      ),
    );
  return sequence(sequence(...tbs));
}

async function ocspMode(seconds: number): Promise<void> {
  for (const [type, bits] of [
    ['ec', 256],
    ['rsa', 2048],
  ] as const) {
    const ca = makeCa(type, bits);
    const responder = new OcspResponder({ issuer: ca.ctx, issuerSpki: ca.key.spki, issuerCertificateDer: ca.der });
    const serials = Array.from({ length: 1000 }, () => randomSerial());
    const withNonce = serials.map((s) => request(ca, s, true));
    const plain = serials.map((s) => request(ca, s, false));
    const cache = new OcspCache();
    const ctx = (c?: OcspCache) => ({
      findResponder: () => responder,
      status: () => ({ status: 'good' as const }),
      now: NOW,
      nextUpdateMs: 12 * 3600_000,
      cache: c,
    });
    for (const [name, reqs, c] of [
      ['nonce (signed per request)', withNonce, undefined],
      ['no nonce, cached', plain, cache],
    ] as const) {
      let n = 0;
      const end = performance.now() + seconds * 1000;
      const t0 = performance.now();
      while (performance.now() < end) {
        for (let i = 0; i < 100; i++) await answerOcspRequest(parseOcspRequest(reqs[(n + i) % reqs.length]!), ctx(c));
        n += 100;
      }
      const perSecond = n / ((performance.now() - t0) / 1000);
      console.log(`OCSP ${type} ${bits}, ${name.padEnd(28)} ${perSecond.toFixed(0).padStart(8)} answers/s`);
    }
  }
}

console.log(`node ${process.version}, ${cpus().length} x ${cpus()[0]?.model ?? 'cpu'}, one thread\n`);
if (MODE === 'crl') await crlMode(ARG || 3);
else if (MODE === 'ocsp') await ocspMode(ARG || 2);
else throw new Error(`unknown mode ${MODE} (crl or ocsp)`);
