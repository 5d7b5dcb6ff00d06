import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, generateKeyPairSync } from 'node:crypto';
import {
  CertIdMatcher,
  MAX_REUSE_MS,
  NO_NEXT_UPDATE_REUSE_MS,
  answerDates,
  answerWindow,
  cacheHeaders,
  chooseResponder,
  ocspSettings,
  ocspSignatureOptions,
  reuseUntil,
} from './ocsp.js';
import type { ResponderCandidate } from './ocsp.js';
import { TAG, decodeBitString, parseDer } from '../crypto/der.js';

const c = (issuerId: string, hasKey = true, ocspSigning = true): ResponderCandidate => ({
  issuerId,
  hasKey,
  ocspSigning,
});

test('chooseResponder: the recorded issuer, else the first that may sign; unauthorized or unknown otherwise', () => {
  const a = c('a');
  const b = c('b');
  const noKey = c('k', false);
  const noUsage = c('u', true, false);
  const cases: Array<[string, ResponderCandidate[], string | undefined, ResponderCandidate | undefined, unknown]> = [
    ['first usable match', [noKey, a, b], undefined, undefined, { kind: 'issuer', candidate: a }],
    ['recorded issuer wins', [a, b], 'b', undefined, { kind: 'issuer', candidate: b }],
    ['recorded issuer that may not sign is skipped', [noUsage, a], 'u', undefined, { kind: 'issuer', candidate: a }],
    ['matches that may not sign', [noKey, noUsage], undefined, a, { kind: 'unauthorized' }],
    ['no match: unknown from the default', [], undefined, a, { kind: 'unknown', candidate: a }],
    ['no match, default without key', [], undefined, noKey, { kind: 'unauthorized' }],
    ['no match, default without ocsp-signing', [], undefined, noUsage, { kind: 'unauthorized' }],
    ['no match, no default', [], undefined, undefined, { kind: 'unauthorized' }],
  ];
  for (const [label, matching, recorded, def, want] of cases) {
    assert.deepEqual(chooseResponder(matching, { recordedIssuerId: recorded, defaultIssuer: def }), want, label);
  }
});

test('ocspSettings: ocsp_disable and ocsp_expiry of config/crl', () => {
  assert.deepEqual(ocspSettings({ ocspDisable: false, ocspExpiry: '12h' }), { disabled: false, expirySeconds: 43200 });
  assert.deepEqual(ocspSettings({ ocspDisable: true, ocspExpiry: '0' }), { disabled: true, expirySeconds: 0 });
  assert.deepEqual(ocspSettings({ ocspDisable: false, ocspExpiry: '90' }), { disabled: false, expirySeconds: 90 });
});

test('answerWindow: nextUpdate is thisUpdate + ocsp_expiry, none for 0', () => {
  const now = new Date('2026-03-01T00:00:00Z');
  assert.deepEqual(answerWindow(now, { disabled: false, expirySeconds: 3600 }), {
    thisUpdate: now,
    nextUpdate: new Date('2026-03-01T01:00:00Z'),
  });
  assert.deepEqual(answerWindow(now, { disabled: false, expirySeconds: 0 }), {
    thisUpdate: now,
    nextUpdate: undefined,
  });
});

test('reuseUntil: half the validity, at most an hour; a minute without nextUpdate', () => {
  const t = new Date('2026-03-01T00:00:00Z');
  const at = (s: number) => new Date(t.getTime() + s * 1000);
  assert.equal(reuseUntil(t, at(600)), t.getTime() + 300_000);
  assert.equal(reuseUntil(t, at(12 * 3600)), t.getTime() + MAX_REUSE_MS);
  assert.equal(reuseUntil(t, undefined), t.getTime() + NO_NEXT_UPDATE_REUSE_MS);
});

test('cacheHeaders: cacheable until nextUpdate without a nonce; never with one or without nextUpdate', () => {
  const nowMs = Date.parse('2026-03-01T00:10:00Z');
  const thisUpdate = new Date('2026-03-01T00:00:00Z');
  const dates = answerDates(thisUpdate, new Date('2026-03-01T12:00:00Z'));
  assert.deepEqual(cacheHeaders({ nowMs, dates, hasNonce: false }), {
    'cache-control': `max-age=${12 * 3600 - 600}, public, no-transform, must-revalidate`,
    'last-modified': 'Sun, 01 Mar 2026 00:00:00 GMT',
    expires: 'Sun, 01 Mar 2026 12:00:00 GMT',
  });
  assert.deepEqual(cacheHeaders({ nowMs, dates, hasNonce: true }), { 'cache-control': 'no-cache, no-store' });
  assert.deepEqual(cacheHeaders({ nowMs, dates: answerDates(thisUpdate, undefined), hasNonce: false }), {
    'cache-control': 'no-cache, no-store',
  });
});

test('ocspSignatureOptions: the hash of revocation_signature_algorithm; PSS signs as PKCS#1 v1.5', () => {
  for (const [alg, bits] of [
    ['', 0],
    ['SHA256WithRSA', 256],
    ['SHA384WithRSAPSS', 384],
    ['ECDSAWithSHA512', 512],
    ['PureEd25519', 0],
  ] as const) {
    assert.deepEqual(ocspSignatureOptions(alg), { signatureBits: bits }, alg);
  }
});

test('CertIdMatcher: name and key hashes under the CertID hash algorithm', () => {
  const { publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const spki = publicKey.export({ type: 'spki', format: 'der' });
  const name = Buffer.from('3012311030' + '0e06035504030c0754657374204341', 'hex');
  const r = parseDer(spki).children();
  r.expect(TAG.SEQUENCE, 'alg');
  const keyBits = decodeBitString(r.expect(TAG.BIT_STRING, 'key')).bytes;
  const m = new CertIdMatcher(name, spki);
  for (const hash of ['sha1', 'sha256', 'sha384', 'sha512'] as const) {
    const id = {
      hash,
      issuerNameHash: createHash(hash).update(name).digest(),
      issuerKeyHash: createHash(hash).update(keyBits).digest(),
    };
    assert.ok(m.matches(id), hash);
    assert.ok(
      !m.matches({ ...id, issuerKeyHash: createHash(hash).update(spki).digest() }),
      `${hash}: hash of the whole SPKI`,
    );
    assert.ok(!m.matches({ ...id, issuerNameHash: createHash(hash).update('other').digest() }), `${hash}: other name`);
  }
  assert.ok(!m.matches({ hash: undefined, issuerNameHash: Buffer.alloc(20), issuerKeyHash: Buffer.alloc(20) }));
});
