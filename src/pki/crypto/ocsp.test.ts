import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildCertificate, createIssuerContext, selfSignedIssuerContext } from './cert-builder.js';
import type { IssuerContext } from './cert-builder.js';
import { generateKeySync } from './key-generation.js';
import type { GeneratedKey, KeyType } from './key-generation.js';
import { encodeSubject } from './names.js';
import {
  OCSP_STATUS,
  OcspRequestError,
  OcspResponder,
  decodeOcspGetRequest,
  ocspErrorResponse,
  parseOcspRequest,
} from './ocsp.js';
import type { OcspCertId, OcspCertStatus, OcspRequest } from './ocsp.js';
import { OcspCache, answerOcspRequest } from './ocsp-answer.js';
import type { OcspAnswerContext } from './ocsp-answer.js';

const dir = mkdtempSync(join(tmpdir(), 'ocsp-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
let fileNo = 0;
function file(content: string | Buffer): string {
  const p = join(dir, `f${fileNo++}`);
  writeFileSync(p, content);
  return p;
}

function openssl(args: string[]): { status: number | null; out: string } {
  const r = spawnSync('openssl', args, { encoding: 'utf8' });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

// OCSP validity is checked against the wall clock by openssl, so answers use the real time.
const NOW = new Date(Math.floor(Date.now() / 1000) * 1000);
const DAY = 86400_000;

interface Ca {
  key: GeneratedKey;
  pem: string;
  pemFile: string;
  der: Buffer;
  ctx: IssuerContext;
  responder: OcspResponder;
}

function makeCa(type: KeyType, bits: number, opts: { usePss?: boolean; name?: string } = {}): Ca {
  const key = generateKeySync(type, bits);
  const subjectDer = encodeSubject({
    commonName: opts.name ?? `OCSP Root ${type} ${bits}`,
    organization: ['Example Org'],
  });
  const ctx = selfSignedIssuerContext({ subjectDer, privateKey: key.privateKey });
  const cert = buildCertificate(ctx, {
    subject: subjectDer,
    spki: key.spki,
    notBefore: new Date(NOW.getTime() - DAY),
    notAfter: new Date(NOW.getTime() + 3650 * DAY),
    basicConstraints: { ca: true },
    keyUsage: ['CertSign', 'CRLSign'],
    usePss: opts.usePss,
  });
  const responder = new OcspResponder({
    issuer: ctx,
    issuerSpki: key.spki,
    issuerCertificateDer: cert.der,
    usePss: opts.usePss,
  });
  return { key, pem: cert.pem, pemFile: file(cert.pem), der: cert.der, ctx, responder };
}

/** An OCSPRequest written by openssl for the given serials. */
function opensslRequest(ca: Ca, serials: string[], extra: string[] = []): Buffer {
  const out = join(dir, `req${fileNo++}.der`);
  // Options first: openssl wants a CertID digest before -serial.
  const r = openssl([
    'ocsp',
    ...extra,
    '-issuer',
    ca.pemFile,
    ...serials.flatMap((s) => ['-serial', `0x${s}`]),
    '-reqout',
    out,
  ]);
  assert.equal(r.status, 0, r.out);
  return readFileSync(out);
}

/** openssl's per-serial status lines (nonce check off: the response answers another request). */
function opensslStatus(ca: Ca, resp: Buffer, serials: string[], extra: string[] = []): string {
  const r = openssl([
    'ocsp',
    ...extra,
    '-respin',
    file(resp),
    '-VAfile',
    ca.pemFile,
    '-issuer',
    ca.pemFile,
    ...serials.flatMap((s) => ['-serial', `0x${s}`]),
    '-no_nonce',
  ]);
  assert.equal(r.status, 0, r.out);
  assert.match(r.out, /Response verify OK/);
  return r.out;
}

/** Verifies the response against the original request, including its nonce. */
function opensslVerifyAgainst(ca: Ca, req: Buffer, resp: Buffer): { status: number | null; out: string } {
  return openssl(['ocsp', '-reqin', file(req), '-respin', file(resp), '-VAfile', ca.pemFile]);
}

const REVOKED_AT = new Date('2026-02-01T10:20:30Z');

function statusTable(revoked: Record<string, number | undefined>, known: string[]): (id: OcspCertId) => OcspCertStatus {
  return (id) => {
    if (id.serialHex in revoked)
      return { status: 'revoked', revocationTime: REVOKED_AT, reason: revoked[id.serialHex] };
    return known.includes(id.serialHex) ? { status: 'good' } : { status: 'unknown' };
  };
}

function context(
  ca: Ca,
  status: OcspAnswerContext['status'],
  extra: Partial<OcspAnswerContext> = {},
): OcspAnswerContext {
  return {
    findResponder: (id) => (ca.responder.matches(id) ? ca.responder : undefined),
    status,
    now: NOW,
    nextUpdateMs: 12 * 3600_000,
    ...extra,
  };
}

for (const [label, type, bits, usePss, alg] of [
  ['EC P-256', 'ec', 256, false, 'ecdsa-with-SHA256'],
  ['RSA PKCS#1', 'rsa', 2048, false, 'sha256WithRSAEncryption'],
  ['RSA PSS', 'rsa', 2048, true, 'rsassaPss'],
  ['Ed25519', 'ed25519', 0, false, 'ED25519'],
] as const) {
  test(`${label} CA: good, revoked (time and reason) and unknown answers verify in openssl, nonce echoed`, async () => {
    const ca = makeCa(type, bits, { usePss });
    const req = opensslRequest(ca, ['1234', '0abc', '99']);
    const parsed = parseOcspRequest(req);
    assert.deepEqual(
      parsed.certIds.map((c) => [c.hash, c.serialHex]),
      [
        ['sha1', '1234'],
        ['sha1', '0abc'],
        ['sha1', '99'],
      ],
    );
    assert.ok(parsed.nonce && parsed.nonceExtension);
    const resp = await answerOcspRequest(parsed, context(ca, statusTable({ '0abc': 1 }, ['1234'])));

    const v = opensslVerifyAgainst(ca, req, resp);
    assert.equal(v.status, 0, v.out);
    assert.match(v.out, /Response verify OK/);
    assert.doesNotMatch(v.out, /Nonce|WARNING/);

    const out = opensslStatus(ca, resp, ['1234', '0abc', '99'], ['-resp_text']);
    assert.match(out, new RegExp(`Signature Algorithm: ${alg}`));
    assert.match(out, /0x1234: good/);
    assert.match(
      out,
      new RegExp(
        String.raw`0x0abc: revoked\s+This Update: .*\s+Next Update: .*\s+Reason: keyCompromise\s+Revocation Time: ` +
          String.raw`Feb {2}1 10:20:30 2026 GMT`,
      ),
    );
    assert.match(out, /0x99: unknown/);
    assert.match(out, /OCSP Nonce:/);
  });
}

test('the nonce check fails when the response does not echo it', async () => {
  const ca = makeCa('ec', 256);
  const req = opensslRequest(ca, ['01']);
  const withoutNonce = { ...parseOcspRequest(req), nonce: undefined, nonceExtension: undefined };
  const resp = await answerOcspRequest(
    withoutNonce,
    context(ca, () => ({ status: 'good' })),
  );
  assert.match(opensslVerifyAgainst(ca, req, resp).out, /WARNING: no nonce in response/);

  const other = parseOcspRequest(opensslRequest(ca, ['01']));
  const wrong = await answerOcspRequest(
    other,
    context(ca, () => ({ status: 'good' })),
  );
  assert.match(opensslVerifyAgainst(ca, req, wrong).out, /Nonce Verify error/);
});

test('SHA-256 CertIDs match the issuer; CertIDs of another CA do not', async () => {
  const ca = makeCa('ec', 256);
  const other = makeCa('ec', 256, { name: 'Other Root' });
  const req = parseOcspRequest(opensslRequest(ca, ['42'], ['-sha256', '-no_nonce']));
  assert.equal(req.certIds[0]!.hash, 'sha256');
  assert.equal(req.certIds[0]!.issuerKeyHash.length, 32);
  assert.equal(ca.responder.matches(req.certIds[0]!), true);
  assert.equal(other.responder.matches(req.certIds[0]!), false);
  const resp = await answerOcspRequest(
    req,
    context(ca, () => ({ status: 'good' })),
  );
  assert.match(opensslStatus(ca, resp, ['42'], ['-sha256']), /0x42: good/);

  // Same issuer name, different key: the key hash tells them apart.
  const sameName = makeCa('ec', 256, { name: `OCSP Root ec 256` });
  assert.equal(sameName.responder.matches(req.certIds[0]!), false);
});

test('no matching CA: unknown from the default responder, else unauthorized', async () => {
  const ca = makeCa('ec', 256);
  const foreign = makeCa('ec', 256, { name: 'Foreign Root' });
  const req = parseOcspRequest(opensslRequest(foreign, ['77'], ['-no_nonce']));
  let asked = 0;
  const status = (): OcspCertStatus => {
    asked++;
    return { status: 'good' };
  };
  const unknown = await answerOcspRequest(req, context(ca, status, { defaultResponder: ca.responder }));
  // Signed by `ca`, about a certificate of `foreign`: verify with ca as the trusted responder.
  const r = openssl([
    'ocsp',
    '-respin',
    file(unknown),
    '-VAfile',
    ca.pemFile,
    '-issuer',
    foreign.pemFile,
    '-serial',
    '0x77',
    '-no_nonce',
  ]);
  assert.match(r.out, /0x77: unknown/);
  assert.match(r.out, /Response verify OK/);
  assert.equal(asked, 0);

  const unauthorized = await answerOcspRequest(req, context(ca, status));
  assert.deepEqual(unauthorized, ocspErrorResponse(OCSP_STATUS.unauthorized));
  assert.match(openssl(['ocsp', '-respin', file(unauthorized), '-resp_text', '-noverify']).out, /unauthorized \(6\)/);
});

test('malformed requests throw OcspRequestError and are answered malformedRequest', () => {
  const ca = makeCa('ec', 256);
  const good = opensslRequest(ca, ['01']);
  const bad: Buffer[] = [
    Buffer.alloc(0),
    Buffer.from('not an ocsp request'),
    good.subarray(0, good.length - 3),
    Buffer.concat([good, Buffer.from([0x00])]),
    Buffer.from('3006300430023000', 'hex'), // a CertID that is empty
    Buffer.from('300430023000', 'hex'), // empty requestList
    Buffer.alloc(4096, 0x30),
  ];
  for (const b of bad) {
    assert.throws(
      () => parseOcspRequest(b),
      (e: unknown) => e instanceof OcspRequestError && e.ocspStatus === 1 && e.kind === 'invalid',
      b.toString('hex').slice(0, 40),
    );
  }
  const texts: Record<number, RegExp> = {
    1: /malformedrequest \(1\)/,
    2: /internalerror \(2\)/,
    3: /trylater \(3\)/,
    6: /unauthorized \(6\)/,
  };
  for (const s of [1, 2, 3, 6] as const) {
    const r = openssl(['ocsp', '-respin', file(ocspErrorResponse(s)), '-resp_text', '-noverify']);
    assert.match(r.out, texts[s]!);
  }
});

test('GET form: URL-escaped standard base64 and URL-safe base64 without padding decode to the request', () => {
  const ca = makeCa('ec', 256);
  const der = opensslRequest(ca, ['fe', 'ff01']);
  assert.deepEqual(decodeOcspGetRequest(encodeURIComponent(der.toString('base64'))), der);
  assert.deepEqual(decodeOcspGetRequest(der.toString('base64url')), der);
  assert.deepEqual(decodeOcspGetRequest(der.toString('base64')), der);
  assert.deepEqual(
    parseOcspRequest(decodeOcspGetRequest(der.toString('base64url'))).certIds.map((c) => c.serialHex),
    ['fe', 'ff01'],
  );
  for (const bad of ['', '%zz', 'a', '!!!!']) assert.throws(() => decodeOcspGetRequest(bad), OcspRequestError);
});

test('cache: answers without nonce served whole, with one reuse the SingleResponse; revocation clears', async () => {
  const ca = makeCa('ec', 256);
  const cache = new OcspCache();
  const revoked: Record<string, number | undefined> = {};
  let lookups = 0;
  const status = (id: OcspCertId): OcspCertStatus => {
    lookups++;
    return statusTable(revoked, ['abcd'])(id);
  };
  const plain = parseOcspRequest(opensslRequest(ca, ['abcd'], ['-no_nonce']));
  const ctx = context(ca, status, { cache, cacheForMs: 60_000 });
  const first = await answerOcspRequest(plain, ctx);
  const second = await answerOcspRequest(plain, { ...ctx, now: new Date(NOW.getTime() + 30_000) });
  assert.equal(second, first);
  assert.equal(lookups, 1);

  const nonceReq = opensslRequest(ca, ['abcd']);
  const withNonce = await answerOcspRequest(parseOcspRequest(nonceReq), ctx);
  assert.equal(lookups, 1);
  assert.notDeepEqual(withNonce, first);
  assert.equal(opensslVerifyAgainst(ca, nonceReq, withNonce).status, 0);
  assert.doesNotMatch(opensslVerifyAgainst(ca, nonceReq, withNonce).out, /Nonce|WARNING/);

  revoked.abcd = 4;
  cache.invalidateSerial('abcd');
  const after = await answerOcspRequest(plain, ctx);
  assert.equal(lookups, 2);
  assert.match(opensslStatus(ca, after, ['abcd']), /0xabcd: revoked[\s\S]*Reason: superseded/);

  // Entries expire: a minute later the status is looked up again.
  await answerOcspRequest(plain, { ...ctx, now: new Date(NOW.getTime() + 61_000) });
  assert.equal(lookups, 3);
});

test('answers pre-computed with certIdFor are served without a status lookup', async () => {
  const ca = makeCa('ec', 256);
  const cache = new OcspCache();
  for (const [serial, hash] of [
    ['00c0ffee', 'sha1'],
    ['c0ffee', 'sha256'],
  ] as const) {
    const id = ca.responder.certIdFor(serial, hash);
    assert.equal(ca.responder.matches(id), true);
    cache.set(id, NOW.getTime() + 60_000, {
      single: ca.responder.singleResponse(
        id,
        { status: 'revoked', revocationTime: REVOKED_AT, reason: 5 },
        { thisUpdate: NOW },
      ),
    });
  }
  let lookups = 0;
  const ctx = context(
    ca,
    () => {
      lookups++;
      return { status: 'good' };
    },
    { cache },
  );
  for (const digest of [[], ['-sha256']]) {
    const req = opensslRequest(ca, ['c0ffee'], digest);
    const resp = await answerOcspRequest(parseOcspRequest(req), ctx);
    assert.equal(opensslVerifyAgainst(ca, req, resp).status, 0);
    assert.match(opensslStatus(ca, resp, ['c0ffee'], digest), /0xc0ffee: revoked[\s\S]*Reason: cessationOfOperation/);
  }
  assert.equal(lookups, 0);
});

test('responder certificate on request, byName responder ID, and a delegated responder', async () => {
  const ca = makeCa('ec', 256);
  const req: OcspRequest = parseOcspRequest(opensslRequest(ca, ['5150'], ['-no_nonce']));
  const status = (): OcspCertStatus => ({ status: 'good' });

  const withCert = await answerOcspRequest(req, context(ca, status, { includeCertificate: true }));
  const r = openssl([
    'ocsp',
    '-respin',
    file(withCert),
    '-CAfile',
    ca.pemFile,
    '-issuer',
    ca.pemFile,
    '-serial',
    '0x5150',
    '-no_nonce',
    '-resp_text',
  ]);
  assert.match(r.out, /Response verify OK/);
  assert.match(r.out, /Certificate:[\s\S]*Subject: O ?= ?Example Org, CN ?= ?OCSP Root ec 256/);
  assert.doesNotMatch((await answerOcspRequest(req, context(ca, status))).toString('latin1'), /OCSP Root ec 256/);

  const byName = new OcspResponder({ issuer: ca.ctx, issuerSpki: ca.key.spki, responderId: 'byName' });
  const named = await answerOcspRequest(req, { ...context(ca, status), findResponder: () => byName });
  assert.match(
    opensslStatus(ca, named, ['5150'], ['-resp_text']),
    /Responder Id: O = Example Org, CN = OCSP Root ec 256/,
  );

  // Delegated: a certificate with the OCSPSigning EKU issued by the CA signs instead of it.
  const dkey = generateKeySync('ec', 256);
  const dsubject = encodeSubject({ commonName: 'OCSP Responder' });
  const dcert = buildCertificate(ca.ctx, {
    subject: dsubject,
    spki: dkey.spki,
    notBefore: new Date(NOW.getTime() - DAY),
    notAfter: new Date(NOW.getTime() + DAY),
    keyUsage: ['DigitalSignature'],
    extKeyUsage: ['OCSPSigning'],
  });
  const dctx = createIssuerContext({ nameDer: dsubject, keyId: dcert.subjectKeyId, privateKey: dkey.privateKey });
  const delegated = new OcspResponder({
    issuer: ca.ctx,
    issuerSpki: ca.key.spki,
    signer: { context: dctx, spki: dkey.spki, certificateDer: dcert.der },
  });
  const dresp = await answerOcspRequest(req, {
    ...context(ca, status),
    findResponder: () => delegated,
    includeCertificate: true,
  });
  const d = openssl([
    'ocsp',
    '-respin',
    file(dresp),
    '-CAfile',
    ca.pemFile,
    '-issuer',
    ca.pemFile,
    '-serial',
    '0x5150',
    '-no_nonce',
    '-resp_text',
  ]);
  assert.match(d.out, /Response verify OK/);
  assert.match(d.out, /0x5150: good/);
  assert.match(d.out, /Subject: CN ?= ?OCSP Responder/);
});
