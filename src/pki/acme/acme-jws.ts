/**
 * The JWS of ACME requests (RFC 8555 section 6.2, RFC 7515 flattened JSON serialization):
 * parsing, the protected header's rules, JWK keys and thumbprints (RFC 7638), signature
 * checks, the external account binding's MAC, and the server's nonces. Protocol code of the
 * ACME edge; node:crypto does the cryptography (docs/decisions/0026-acme-server.md).
 */
import { createHash, createHmac, createPublicKey, randomBytes, timingSafeEqual, verify } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { acmeError } from './acme.js';

/** Account key algorithms accepted (RFC 8555 section 6.2: ES256 and EdDSA at least; RS256 for older clients). */
export const JWS_ALGORITHMS = ['RS256', 'ES256', 'ES384', 'ES512', 'EdDSA'] as const;
export type JwsAlgorithm = (typeof JWS_ALGORITHMS)[number];

const EAB_ALGORITHMS: Record<string, string> = { HS256: 'sha256', HS384: 'sha384', HS512: 'sha512' };

export interface ParsedJws {
  protectedB64: string;
  payloadB64: string;
  signature: Buffer;
  header: {
    alg: JwsAlgorithm;
    nonce: string;
    url: string;
    jwk: Record<string, unknown> | undefined;
    kid: string | undefined;
  };
  /** The decoded payload: undefined for POST-as-GET (empty payload). */
  payload: unknown;
}

const B64URL = /^[A-Za-z0-9_-]*$/;

function b64url(value: unknown, what: string): Buffer {
  if (typeof value !== 'string' || !B64URL.test(value)) throw acmeError('malformed', `${what} is not base64url`);
  return Buffer.from(value, 'base64url');
}

function jsonOf(buf: Buffer, what: string): unknown {
  try {
    return JSON.parse(buf.toString('utf8'));
  } catch {
    throw acmeError('malformed', `${what} is not JSON`);
  }
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Reads a flattened JWS and its protected header (RFC 8555 section 6.2): one signature,
 * no unprotected header, `alg` one of ours, `nonce`, `url`, and exactly one of `jwk`/`kid`.
 */
export function parseJws(body: unknown, opts: { inner?: boolean } = {}): ParsedJws {
  if (!isRecord(body)) throw acmeError('malformed', 'the request body must be a JWS in flattened JSON serialization');
  if ('signatures' in body) throw acmeError('malformed', 'a JWS with several signatures is not accepted');
  if ('header' in body) throw acmeError('malformed', 'the JWS must not have an unprotected header');
  for (const k of ['protected', 'payload', 'signature'])
    if (typeof body[k] !== 'string') throw acmeError('malformed', `the JWS lacks "${k}"`);
  const protectedB64 = body.protected as string;
  const payloadB64 = body.payload as string;
  const header = jsonOf(b64url(protectedB64, 'the protected header'), 'the protected header');
  if (!isRecord(header)) throw acmeError('malformed', 'the protected header must be a JSON object');
  const { alg, nonce, url, jwk, kid } = header;
  if (typeof alg !== 'string' || !(JWS_ALGORITHMS as readonly string[]).includes(alg))
    throw acmeError('badSignatureAlgorithm', `the JWS algorithm ${JSON.stringify(alg)} is not supported`);
  if (header.b64 === false || Array.isArray(header.crit))
    throw acmeError('malformed', 'unencoded payloads and critical header parameters are not accepted');
  if (typeof url !== 'string' || url === '') throw acmeError('unauthorized', 'the protected header lacks "url"');
  // The inner JWS of a key change carries no nonce (RFC 8555 section 7.3.5).
  if (opts.inner ? nonce !== undefined : typeof nonce !== 'string' || nonce === '')
    throw acmeError(
      opts.inner ? 'malformed' : 'badNonce',
      `the protected header ${opts.inner ? 'has' : 'lacks'} "nonce"`,
    );
  if ((jwk === undefined) === (kid === undefined))
    throw acmeError('malformed', 'the protected header must have exactly one of "jwk" and "kid"');
  if (jwk !== undefined && !isRecord(jwk)) throw acmeError('malformed', '"jwk" must be a JSON object');
  if (kid !== undefined && typeof kid !== 'string') throw acmeError('malformed', '"kid" must be a string');
  const payloadBytes = b64url(payloadB64, 'the payload');
  return {
    protectedB64,
    payloadB64,
    signature: b64url(body.signature, 'the signature'),
    header: {
      alg: alg as JwsAlgorithm,
      nonce: (nonce as string | undefined) ?? '',
      url,
      jwk: jwk as Record<string, unknown> | undefined,
      kid,
    },
    payload: payloadB64 === '' ? undefined : jsonOf(payloadBytes, 'the payload'),
  };
}

/** The JWK members that identify a key, per key type (RFC 7638 section 3.2). */
function thumbprintMembers(jwk: Record<string, unknown>): Record<string, unknown> {
  switch (jwk.kty) {
    case 'RSA':
      return { e: jwk.e, kty: 'RSA', n: jwk.n };
    case 'EC':
      return { crv: jwk.crv, kty: 'EC', x: jwk.x, y: jwk.y };
    case 'OKP':
      return { crv: jwk.crv, kty: 'OKP', x: jwk.x };
    default:
      throw acmeError('badPublicKey', `key type ${JSON.stringify(jwk.kty)} is not supported`);
  }
}

/** The public part of a JWK, as stored for an account. */
export function publicJwk(jwk: Record<string, unknown>): Record<string, unknown> {
  return thumbprintMembers(jwk);
}

/** RFC 7638 thumbprint, base64url of SHA-256 over the required members in lexicographic order. */
export function jwkThumbprint(jwk: Record<string, unknown>): string {
  return createHash('sha256')
    .update(JSON.stringify(thumbprintMembers(jwk)))
    .digest('base64url');
}

const CURVE_OF: Record<string, string> = { ES256: 'P-256', ES384: 'P-384', ES512: 'P-521' };

/** A JWK as a KeyObject, checked against the algorithm it signs with. */
export function jwkKey(jwk: Record<string, unknown>, alg: JwsAlgorithm): KeyObject {
  const members = thumbprintMembers(jwk);
  for (const [k, v] of Object.entries(members))
    if (typeof v !== 'string' || v === '') throw acmeError('badPublicKey', `the JWK lacks "${k}"`);
  if (alg === 'RS256' && jwk.kty !== 'RSA') throw acmeError('badPublicKey', 'RS256 needs an RSA key');
  if (alg in CURVE_OF && (jwk.kty !== 'EC' || jwk.crv !== CURVE_OF[alg]))
    throw acmeError('badPublicKey', `${alg} needs an EC key on ${CURVE_OF[alg]}`);
  if (alg === 'EdDSA' && (jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519'))
    throw acmeError('badPublicKey', 'EdDSA needs an Ed25519 key');
  let key: KeyObject;
  try {
    key = createPublicKey({ key: members as never, format: 'jwk' });
  } catch {
    throw acmeError('badPublicKey', 'the JWK is not a valid public key');
  }
  if (jwk.kty === 'RSA') {
    const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
    if (bits < 2048 || bits > 8192)
      throw acmeError('badPublicKey', `RSA keys need 2048 to 8192 bits, this has ${bits}`);
  }
  return key;
}

const HASH_OF: Record<JwsAlgorithm, string | null> = {
  RS256: 'sha256',
  ES256: 'sha256',
  ES384: 'sha384',
  ES512: 'sha512',
  EdDSA: null,
};

/** Whether the JWS signature holds for `key` (ECDSA signatures are r||s, RFC 7518 section 3.4). */
export function jwsSignatureValid(jws: ParsedJws, key: KeyObject): boolean {
  const input = Buffer.from(`${jws.protectedB64}.${jws.payloadB64}`, 'ascii');
  try {
    return verify(HASH_OF[jws.header.alg], input, { key, dsaEncoding: 'ieee-p1363' }, jws.signature);
  } catch {
    return false;
  }
}

/**
 * The external account binding of a newAccount request (RFC 8555 section 7.3.4): a JWS
 * MACed with the EAB key, whose payload is the account key and whose `url` is the
 * newAccount URL. Returns its key id; `macKey` gives the key (undefined: unknown id).
 */
export function readEabBinding(
  binding: unknown,
  expect: { url: string; accountJwk: Record<string, unknown> },
): { kid: string; verify(macKey: Buffer): boolean } {
  if (!isRecord(binding) || typeof binding.protected !== 'string' || typeof binding.payload !== 'string')
    throw acmeError('malformed', 'externalAccountBinding must be a flattened JWS');
  const header = jsonOf(b64url(binding.protected, 'the binding header'), 'the binding header');
  if (!isRecord(header)) throw acmeError('malformed', 'the binding header must be a JSON object');
  const hash = typeof header.alg === 'string' ? EAB_ALGORITHMS[header.alg] : undefined;
  if (!hash) throw acmeError('badSignatureAlgorithm', 'the binding must be MACed with HS256, HS384 or HS512');
  if (typeof header.kid !== 'string' || header.kid === '') throw acmeError('malformed', 'the binding lacks "kid"');
  if ('nonce' in header) throw acmeError('malformed', 'the binding must not carry a nonce');
  if (header.url !== expect.url) throw acmeError('unauthorized', 'the binding url is not the newAccount URL');
  const bound = jsonOf(b64url(binding.payload, 'the binding payload'), 'the binding payload');
  if (!isRecord(bound) || jwkThumbprint(bound) !== jwkThumbprint(expect.accountJwk))
    throw acmeError('unauthorized', 'the binding does not bind the account key');
  const signature = b64url(binding.signature, 'the binding signature');
  const input = `${binding.protected}.${binding.payload}`;
  return {
    kid: header.kid,
    verify: (macKey) => {
      const mac = createHmac(hash, macKey).update(input).digest();
      return mac.length === signature.length && timingSafeEqual(mac, signature);
    },
  };
}

// ---------------------------------------------------------------------------------------
// Nonces: self-authenticating (any node sharing the key can check them), single use
// through the database table of used nonces.

const NONCE_RANDOM = 16;
const NONCE_MAC = 16;

/** Random bytes drawn 4 KiB at a time: one call into the CSPRNG per 256 nonces. */
let pool = Buffer.alloc(0);
let poolAt = 0;
function random16(into: Buffer): void {
  if (poolAt + NONCE_RANDOM > pool.length) {
    pool = randomBytes(4096);
    poolAt = 0;
  }
  pool.copy(into, 0, poolAt, poolAt + NONCE_RANDOM);
  // Each slice is used once.
  pool.fill(0, poolAt, poolAt + NONCE_RANDOM);
  poolAt += NONCE_RANDOM;
}

/**
 * base64url(random(16) | expiry seconds (u32) | HMAC-SHA256(first 20 bytes)[0..16]). With
 * `seq`, the first 6 random bytes carry that number instead (a store that tracks nonces by
 * their sequence number).
 */
export function mintNonce(key: Buffer, expiresAt: Date, seq?: number): string {
  const body = Buffer.alloc(NONCE_RANDOM + 4);
  random16(body);
  if (seq !== undefined) body.writeUIntBE(seq, 0, 6);
  body.writeUInt32BE(Math.floor(expiresAt.getTime() / 1000), NONCE_RANDOM);
  const mac = createHmac('sha256', key).update(body).digest().subarray(0, NONCE_MAC);
  return Buffer.concat([body, mac]).toString('base64url');
}

/** A nonce this server made with `key`: its expiry and sequence number; undefined when not ours. */
export function readNonce(key: Buffer, nonce: string): { expiresAt: Date; seq: number } | undefined {
  if (nonce.length !== 48 || !B64URL.test(nonce)) return undefined;
  const raw = Buffer.from(nonce, 'base64url');
  const body = raw.subarray(0, NONCE_RANDOM + 4);
  const mac = createHmac('sha256', key).update(body).digest().subarray(0, NONCE_MAC);
  if (!timingSafeEqual(mac, raw.subarray(NONCE_RANDOM + 4))) return undefined;
  return { expiresAt: new Date(body.readUInt32BE(NONCE_RANDOM) * 1000), seq: body.readUIntBE(0, 6) };
}

/** The key authorization of a challenge (RFC 8555 section 8.1). */
export function keyAuthorization(token: string, thumbprint: string): string {
  return `${token}.${thumbprint}`;
}
