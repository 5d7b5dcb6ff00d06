import assert from 'node:assert/strict';
import { createHmac, generateKeyPairSync, sign } from 'node:crypto';
import { describe, it } from 'node:test';
import {
  AcmeError,
  DEFAULT_ACME_CONFIG,
  checkRevocationReason,
  challengeTypesFor,
  csrMatchesOrder,
  directoryIssuance,
  directoryPrefix,
  normalizeIdentifiers,
  orderStatusAt,
  parseDirectoryPolicy,
  renewalWindow,
  validateAcmeConfig,
} from './acme.js';
import type { AcmeConfig } from './acme.js';
import {
  jwkKey,
  jwkThumbprint,
  jwsSignatureValid,
  mintNonce,
  readNonce,
  parseJws,
  readEabBinding,
} from './acme-jws.js';

const acmeType = (fn: () => unknown): string => {
  try {
    fn();
  } catch (err) {
    if (err instanceof AcmeError) return err.acmeType;
    throw err;
  }
  return 'none';
};

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');

describe('ACME rules', () => {
  it('directory policies and prefixes', () => {
    assert.deepEqual(parseDirectoryPolicy('role:web'), { kind: 'role', role: 'web' });
    assert.deepEqual(parseDirectoryPolicy('external-policy:p'), { kind: 'external-policy', policy: 'p' });
    assert.deepEqual(parseDirectoryPolicy('external-policy'), { kind: 'external-policy', policy: '' });
    for (const bad of ['role:', 'roles:web', '', 'verbatim']) assert.equal(parseDirectoryPolicy(bad), undefined);
    assert.equal(directoryPrefix({ issuerRef: undefined, role: undefined }), 'acme/');
    assert.equal(directoryPrefix({ issuerRef: 'r', role: 'w' }), 'issuer/r/roles/w/acme/');
  });

  it("Vault's directory table: which issuer and which policy", () => {
    const c = (p: Partial<AcmeConfig>): AcmeConfig => ({ ...DEFAULT_ACME_CONFIG, ...p });
    const none = { issuerRef: undefined, role: undefined };
    assert.deepEqual(directoryIssuance(c({}), none), { kind: 'sign-verbatim', issuerRef: 'default' });
    assert.deepEqual(directoryIssuance(c({}), { issuerRef: 'i', role: undefined }), {
      kind: 'sign-verbatim',
      issuerRef: 'i',
    });
    assert.deepEqual(directoryIssuance(c({ defaultDirectoryPolicy: 'role:web' }), none), {
      kind: 'role',
      role: 'web',
      issuerRef: undefined,
    });
    assert.deepEqual(directoryIssuance(c({}), { issuerRef: 'i', role: 'w' }), {
      kind: 'role',
      role: 'w',
      issuerRef: 'i',
    });
    assert.equal(
      acmeType(() => directoryIssuance(c({ defaultDirectoryPolicy: 'forbid' }), none)),
      'unauthorized',
    );
    assert.equal(
      acmeType(() => directoryIssuance(c({ allowedRoles: ['a'] }), { issuerRef: undefined, role: 'b' })),
      'unauthorized',
    );
    assert.equal(
      acmeType(() => directoryIssuance(c({ allowedIssuers: ['a'] }), { issuerRef: 'b', role: undefined })),
      'unauthorized',
    );
  });

  it('config checks', () => {
    validateAcmeConfig({ ...DEFAULT_ACME_CONFIG, dnsResolver: '127.0.0.1:53' });
    validateAcmeConfig({ ...DEFAULT_ACME_CONFIG, dnsResolver: '[::1]:5353' });
    for (const bad of [
      { dnsResolver: 'dns.example:53' },
      { dnsResolver: '127.0.0.1' },
      { eabPolicy: 'x' as never },
      { defaultDirectoryPolicy: 'role:x', allowedRoles: ['y'] },
      { maxTtl: -1 },
    ])
      assert.throws(() => validateAcmeConfig({ ...DEFAULT_ACME_CONFIG, ...bad }), JSON.stringify(bad));
  });

  it('identifiers: normalised, deduplicated, typed refusals', () => {
    assert.deepEqual(
      normalizeIdentifiers([
        { type: 'dns', value: 'WWW.Example.COM.' },
        { type: 'dns', value: 'www.example.com' },
        { type: 'ip', value: '2001:DB8:0:0::1' },
        { type: 'dns', value: '*.example.com' },
      ]),
      [
        { type: 'dns', value: 'www.example.com' },
        { type: 'ip', value: '2001:db8::1' },
        { type: 'dns', value: '*.example.com' },
      ],
    );
    const cases: [unknown, string][] = [
      [[], 'malformed'],
      [[{ type: 'dns' }], 'malformed'],
      [[{ type: 'email', value: 'a@b.c' }], 'unsupportedIdentifier'],
      [[{ type: 'dns', value: '-bad.example.com' }], 'rejectedIdentifier'],
      [[{ type: 'dns', value: 'a.*.example.com' }], 'rejectedIdentifier'],
      [[{ type: 'dns', value: '10.0.0.1' }], 'rejectedIdentifier'],
      [[{ type: 'ip', value: 'example.com' }], 'rejectedIdentifier'],
    ];
    for (const [raw, type] of cases)
      assert.equal(
        acmeType(() => normalizeIdentifiers(raw)),
        type,
        JSON.stringify(raw),
      );
    assert.deepEqual(challengeTypesFor({ type: 'dns', value: '*.a.b' }), ['dns-01']);
    assert.deepEqual(challengeTypesFor({ type: 'ip', value: '10.0.0.1' }), ['http-01', 'tls-alpn-01']);
  });

  it('a finalize CSR names exactly the order identifiers', () => {
    const order = {
      identifiers: [
        { type: 'dns' as const, value: 'a.example.com' },
        { type: 'ip' as const, value: '10.0.0.1' },
      ],
    };
    const csr = (p: Partial<Parameters<typeof csrMatchesOrder>[1]>) => ({
      commonName: '',
      dns: ['a.example.com'],
      ips: ['10.0.0.1'],
      otherNames: 0,
      ...p,
    });
    assert.equal(csrMatchesOrder(order, csr({})), undefined);
    assert.equal(csrMatchesOrder(order, csr({ commonName: 'A.example.com', dns: ['A.EXAMPLE.com'] })), undefined);
    assert.match(csrMatchesOrder(order, csr({ dns: [] })) ?? '', /lacks a\.example\.com/);
    assert.match(csrMatchesOrder(order, csr({ dns: ['a.example.com', 'b.example.com'] })) ?? '', /b\.example\.com/);
    assert.match(csrMatchesOrder(order, csr({ commonName: 'c.example.com' })) ?? '', /common name/);
    assert.match(csrMatchesOrder(order, csr({ otherNames: 1 })) ?? '', /other than/);
  });

  it('statuses: expiry', () => {
    const now = new Date('2026-01-02T00:00:00Z');
    assert.equal(orderStatusAt({ status: 'pending', expiresAt: new Date('2026-01-01T00:00:00Z') }, now), 'invalid');
    assert.equal(orderStatusAt({ status: 'valid', expiresAt: new Date('2026-01-01T00:00:00Z') }, now), 'valid');
  });

  it('revocation reasons and renewal windows', () => {
    assert.equal(checkRevocationReason(undefined), 0);
    assert.equal(checkRevocationReason(4), 4);
    for (const bad of [7, 8, 11, -1, 1.5, '1'])
      assert.equal(
        acmeType(() => checkRevocationReason(bad)),
        'badRevocationReason',
      );
    const nb = new Date('2026-01-01T00:00:00Z');
    const na = new Date('2026-04-01T00:00:00Z');
    const w = renewalWindow(nb, na, false, nb);
    const life = na.getTime() - nb.getTime();
    assert.equal(w.start.getTime(), nb.getTime() + Math.floor((life * 2) / 3));
    assert.equal(w.end.getTime(), nb.getTime() + Math.floor((life * 5) / 6));
    const now = new Date('2026-02-01T00:00:00Z');
    assert.ok(renewalWindow(nb, na, true, now).end <= now);
  });
});

describe('ACME JWS', () => {
  it('RFC 7638 section 3.1 thumbprint example', () => {
    const jwk = {
      kty: 'RSA',
      n:
        '0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECP' +
        'ebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY' +
        '368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4' +
        'lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw',
      e: 'AQAB',
      alg: 'RS256',
      kid: '2011-04-29',
    };
    assert.equal(jwkThumbprint(jwk), 'NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs');
  });

  it('header rules: exactly one of jwk and kid, a nonce, a url, a supported algorithm', () => {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const jwk = publicKey.export({ format: 'jwk' }) as Record<string, unknown>;
    const make = (header: Record<string, unknown>, postAsGet = false) => {
      const p = b64(header);
      const body = postAsGet ? '' : b64({});
      const sig = sign('sha256', Buffer.from(`${p}.${body}`), { key: privateKey, dsaEncoding: 'ieee-p1363' });
      return { protected: p, payload: body, signature: sig.toString('base64url') };
    };
    const good = parseJws(make({ alg: 'ES256', nonce: 'n', url: 'u', jwk }));
    assert.ok(jwsSignatureValid(good, jwkKey(jwk, 'ES256')));
    assert.equal(parseJws(make({ alg: 'ES256', nonce: 'n', url: 'u', kid: 'k' }, true)).payload, undefined);
    const tampered = { ...make({ alg: 'ES256', nonce: 'n', url: 'u', jwk }), payload: b64({ x: 1 }) };
    assert.equal(jwsSignatureValid(parseJws(tampered), jwkKey(jwk, 'ES256')), false);
    const cases: [unknown, string][] = [
      [make({ alg: 'ES256', nonce: 'n', url: 'u', jwk, kid: 'k' }), 'malformed'],
      [make({ alg: 'ES256', nonce: 'n', url: 'u' }), 'malformed'],
      [make({ alg: 'ES256', url: 'u', jwk }), 'badNonce'],
      [make({ alg: 'ES256', nonce: 'n', jwk }), 'unauthorized'],
      [make({ alg: 'HS256', nonce: 'n', url: 'u', jwk }), 'badSignatureAlgorithm'],
      [make({ alg: 'none', nonce: 'n', url: 'u', jwk }), 'badSignatureAlgorithm'],
      [make({ alg: 'ES256', nonce: 'n', url: 'u', jwk, b64: false }), 'malformed'],
      [{ ...make({ alg: 'ES256', nonce: 'n', url: 'u', jwk }), header: {} }, 'malformed'],
      [{ ...make({ alg: 'ES256', nonce: 'n', url: 'u', jwk }), protected: '!!' }, 'malformed'],
      ['a string', 'malformed'],
    ];
    for (const [body, type] of cases)
      assert.equal(
        acmeType(() => parseJws(body)),
        type,
        JSON.stringify(body),
      );
    // The key must fit the algorithm.
    assert.equal(
      acmeType(() => jwkKey(jwk, 'ES384')),
      'badPublicKey',
    );
    const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).publicKey.export({ format: 'jwk' });
    assert.equal(
      acmeType(() => jwkKey(rsa as Record<string, unknown>, 'RS256')),
      'badPublicKey',
    );
  });

  it('nonces: made and checked with one key, refused with another or when altered', () => {
    const key = Buffer.alloc(32, 1);
    const at = new Date('2026-01-01T00:15:00Z');
    const n = mintNonce(key, at);
    assert.match(n, /^[A-Za-z0-9_-]{48}$/);
    assert.deepEqual(readNonce(key, n)?.expiresAt, at);
    assert.equal(readNonce(Buffer.alloc(32, 2), n), undefined);
    assert.equal(readNonce(key, `${n.slice(0, 47)}${n[47] === 'A' ? 'B' : 'A'}`), undefined);
    assert.equal(readNonce(key, 'short'), undefined);
    const numbered = mintNonce(key, at, 2 ** 40 + 7);
    assert.deepEqual(readNonce(key, numbered), { expiresAt: at, seq: 2 ** 40 + 7 });
  });

  it('external account binding: MAC, url and the bound key are checked', () => {
    const { publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const jwk = publicKey.export({ format: 'jwk' }) as Record<string, unknown>;
    const macKey = Buffer.alloc(32, 7);
    const binding = (header: Record<string, unknown>, bound = jwk) => {
      const p = b64(header);
      const body = b64(bound);
      return {
        protected: p,
        payload: body,
        signature: createHmac('sha256', macKey).update(`${p}.${body}`).digest('base64url'),
      };
    };
    const r = readEabBinding(binding({ alg: 'HS256', kid: 'k1', url: 'https://x/new-account' }), {
      url: 'https://x/new-account',
      accountJwk: jwk,
    });
    assert.equal(r.kid, 'k1');
    assert.equal(r.verify(macKey), true);
    assert.equal(r.verify(Buffer.alloc(32)), false);
    const expect = { url: 'https://x/new-account', accountJwk: jwk };
    assert.equal(
      acmeType(() => readEabBinding(binding({ alg: 'HS256', kid: 'k', url: 'https://y' }), expect)),
      'unauthorized',
    );
    assert.equal(
      acmeType(() => readEabBinding(binding({ alg: 'RS256', kid: 'k', url: expect.url }), expect)),
      'badSignatureAlgorithm',
    );
    const other = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ format: 'jwk' });
    assert.equal(
      acmeType(() => readEabBinding(binding({ alg: 'HS256', kid: 'k', url: expect.url }, other as never), expect)),
      'unauthorized',
    );
  });
});
