import { createPublicKey, verify } from 'node:crypto';
import type { JsonWebKey, KeyObject } from 'node:crypto';
import { invalid } from '../../../shared/errors.js';

/**
 * Compact JWS tokens (RFC 7515) as a login presents them: parsing, and signature checks
 * with RS*, PS*, ES256/ES384 and EdDSA keys.
 */
export interface ParsedJwt {
  header: { alg: string; kid?: string; typ?: string };
  claims: Record<string, unknown>;
  signingInput: Buffer;
  signature: Buffer;
}

/** Largest token accepted: GitHub's and Kubernetes' tokens are a few kilobytes. */
const MAX_JWT_CHARS = 64 * 1024;

export function parseJwt(token: string): ParsedJwt {
  if (token.length > MAX_JWT_CHARS) throw invalid('error validating token: token too large');
  const parts = token.trim().split('.');
  if (parts.length !== 3 || parts.some((p) => !/^[A-Za-z0-9_-]*$/.test(p)))
    throw invalid('error validating token: malformed JWT');
  const [h, c, s] = parts as [string, string, string];
  const header = decodeJson(h);
  const claims = decodeJson(c);
  if (typeof header['alg'] !== 'string') throw invalid('error validating token: malformed JWT');
  return {
    header: header as ParsedJwt['header'],
    claims,
    signingInput: Buffer.from(`${h}.${c}`),
    signature: Buffer.from(s, 'base64url'),
  };
}

function decodeJson(part: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    if (typeof v === 'object' && v !== null && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    // Reported below with one message for every shape of garbage.
  }
  throw invalid('error validating token: malformed JWT');
}

/** True when `key` signed the token with its declared algorithm (which must suit the key). */
export function verifyJwt(jwt: ParsedJwt, key: KeyObject): boolean {
  const alg = jwt.header.alg;
  const type = key.asymmetricKeyType;
  try {
    if (alg === 'EdDSA') return type === 'ed25519' && verify(null, jwt.signingInput, key, jwt.signature);
    const hash = `sha${alg.slice(2)}`;
    if (/^RS(256|384|512)$/.test(alg)) return type === 'rsa' && verify(hash, jwt.signingInput, key, jwt.signature);
    if (/^PS(256|384|512)$/.test(alg))
      return (
        (type === 'rsa' || type === 'rsa-pss') &&
        verify(hash, jwt.signingInput, { key, padding: 6, saltLength: Number(alg.slice(2)) / 8 }, jwt.signature)
      );
    if (alg === 'ES256' || alg === 'ES384') {
      const curve = key.asymmetricKeyDetails?.namedCurve;
      if (type !== 'ec' || curve !== (alg === 'ES256' ? 'prime256v1' : 'secp384r1')) return false;
      return verify(hash, jwt.signingInput, { key, dsaEncoding: 'ieee-p1363' }, jwt.signature);
    }
  } catch {
    return false;
  }
  return false;
}

/** A JWK of a JWKS as a public key, or undefined for keys that cannot verify (symmetric, private parts ignored). */
export function keyFromJwk(jwk: Record<string, unknown>): KeyObject | undefined {
  if (jwk['use'] !== undefined && jwk['use'] !== 'sig') return undefined;
  const { d: _d, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, ...pub } = jwk;
  try {
    return createPublicKey({ key: pub as JsonWebKey, format: 'jwk' });
  } catch {
    return undefined;
  }
}

/** A PEM public key (or certificate) from jwt_validation_pubkeys. */
export function keyFromPem(pem: string): KeyObject {
  try {
    return createPublicKey(pem);
  } catch {
    throw invalid('error parsing public key');
  }
}
