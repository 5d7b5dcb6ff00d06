/**
 * Key parameters, export and parsing for the key types Vault's PKI engine supports
 * (reference 16.10 and 16.12), plus a cache of parsed KeyObjects so the signing hot path
 * never re-parses a PEM (re-parsing costs about 15x the signature itself). Generation is
 * in key-generation.ts.
 */
import { createPrivateKey, createPublicKey, hash } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { DomainError } from '../../shared/errors.js';
import { TAG, decodeBitString, decodeOid, decodeUnsignedBytes, parseDer } from './der.js';
import type { DerElement } from './der.js';
import type { GeneratedKey, KeyDescription, KeyType } from './key-generation.js';
import { pemDecodeAll, pemEncode } from './pem.js';

export const RSA_BITS = [2048, 3072, 4096, 8192] as const;
export const EC_BITS = [224, 256, 384, 521] as const;

const CURVE_BY_BITS: Readonly<Record<number, string>> = {
  224: 'secp224r1',
  256: 'prime256v1',
  384: 'secp384r1',
  521: 'secp521r1',
};
const BITS_BY_CURVE: Readonly<Record<string, number>> = {
  secp224r1: 224,
  'P-224': 224,
  prime256v1: 256,
  'P-256': 256,
  secp384r1: 384,
  'P-384': 384,
  secp521r1: 521,
  'P-521': 521,
};

export function curveForBits(bits: number): string {
  const c = CURVE_BY_BITS[bits];
  if (!c) throw new DomainError('invalid', `unsupported bit length for EC key: ${bits}`);
  return c;
}

/**
 * Resolves and validates `key_type`/`key_bits` as Vault does: 0 means the type's default
 * (2048 for RSA, 256 for EC); Ed25519 ignores bits. `any` is only valid on roles that sign
 * CSRs, so it resolves to bits 0 and is refused where a key must be generated.
 */
export function resolveKeyParams(
  keyType: string,
  keyBits: number,
  opts: { allowAny?: boolean } = {},
): { type: KeyType | 'any'; bits: number } {
  switch (keyType) {
    case 'rsa': {
      const bits = keyBits === 0 ? 2048 : keyBits;
      if (bits < 2048) throw new DomainError('invalid', 'RSA keys < 2048 bits are unsafe and not supported');
      if (!(RSA_BITS as readonly number[]).includes(bits))
        throw new DomainError('invalid', `unsupported bit length for RSA key: ${bits}`);
      return { type: 'rsa', bits };
    }
    case 'ec': {
      const bits = keyBits === 0 ? 256 : keyBits;
      if (!(EC_BITS as readonly number[]).includes(bits))
        throw new DomainError('invalid', `unsupported bit length for EC key: ${bits}`);
      return { type: 'ec', bits };
    }
    case 'ed25519':
      return { type: 'ed25519', bits: 0 };
    case 'any':
      if (!opts.allowAny)
        throw new DomainError('invalid', `role key type "any" not allowed for issuing certificates, only signing`);
      return { type: 'any', bits: 0 };
    default:
      throw new DomainError('invalid', `unknown key type "${keyType}"`);
  }
}

/**
 * Whether a CSR key satisfies a role's key_type/key_bits (reference 4.3): returns the
 * Vault error text when it does not.
 */
export function checkKeyAgainstRole(key: KeyDescription, roleType: string, roleBits: number): string | undefined {
  if (roleType !== 'any' && roleType !== key.type) return `role requires keys of type ${roleType}`;
  if (key.type === 'rsa') {
    const min = Math.max(2048, roleType === 'rsa' ? roleBits : 0);
    if (key.bits < min) return `role requires a minimum of a ${min}-bit key, but CSR's key is ${key.bits} bits`;
  } else if (key.type === 'ec') {
    const min = roleType === 'ec' ? roleBits : 224;
    if (key.bits < min) return `role requires a minimum of a ${min}-bit key, but CSR's key is ${key.bits} bits`;
  }
  return undefined;
}

/**
 * Type and size of a private or public KeyObject; throws `invalid` for unsupported kinds.
 * Do not call it on a key taken straight from generateKeyPair(Sync) (see key-generation.ts).
 */
export function describeKey(key: KeyObject): KeyDescription {
  const t = key.asymmetricKeyType;
  const d = key.asymmetricKeyDetails ?? {};
  if (t === 'rsa') return { type: 'rsa', bits: d.modulusLength ?? 0 };
  if (t === 'ec') {
    const bits = BITS_BY_CURVE[d.namedCurve ?? ''];
    if (!bits) throw new DomainError('invalid', `unsupported EC curve ${d.namedCurve ?? 'unknown'}`);
    return { type: 'ec', bits, curve: d.namedCurve! };
  }
  if (t === 'ed25519') return { type: 'ed25519', bits: 0 };
  throw new DomainError('invalid', `unsupported key algorithm ${t ?? 'unknown'}`);
}

export type PrivateKeyFormat = 'der' | 'pem' | 'pkcs8' | '';

/**
 * The private key as Vault returns it: PKCS#1 `RSA PRIVATE KEY`, SEC1 `EC PRIVATE KEY`,
 * PKCS#8 `PRIVATE KEY` for Ed25519 or when `private_key_format=pkcs8`; `format=der` gives
 * base64 of the same DER.
 */
export function exportPrivateKey(
  key: KeyObject | GeneratedKey,
  opts: { format: 'pem' | 'der'; privateKeyFormat?: PrivateKeyFormat },
): string {
  const der = exportPrivateKeyDer(key, opts.privateKeyFormat === 'pkcs8');
  if (opts.format === 'der') return der.der.toString('base64');
  return pemEncode(der.label, der.der).trimEnd();
}

export function exportPrivateKeyDer(key: KeyObject | GeneratedKey, pkcs8: boolean): { label: string; der: Buffer } {
  if ('pkcs8' in key)
    return pkcs8 ? { label: 'PRIVATE KEY', der: key.pkcs8 } : { label: key.privateLabel, der: key.privateDer };
  const t = key.asymmetricKeyType;
  if (pkcs8 || t === 'ed25519') return { label: 'PRIVATE KEY', der: key.export({ type: 'pkcs8', format: 'der' }) };
  if (t === 'rsa') return { label: 'RSA PRIVATE KEY', der: key.export({ type: 'pkcs1', format: 'der' }) };
  if (t === 'ec') return { label: 'EC PRIVATE KEY', der: key.export({ type: 'sec1', format: 'der' }) };
  throw new DomainError('invalid', `unsupported key algorithm ${t ?? 'unknown'}`);
}

/**
 * SubjectPublicKeyInfo DER of a private or public key (OpenSSL's encoder, about 100 µs;
 * generated keys carry their SPKI already, see key-generation.ts).
 */
export function spkiDer(key: KeyObject): Buffer {
  const pub = key.type === 'private' ? createPublicKey(key) : key;
  return pub.export({ type: 'spki', format: 'der' });
}

/** RFC 5280 4.2.1.2 method 1: SHA-1 of the subjectPublicKey bits, as Vault computes the SKID. */
export function subjectKeyIdFromSpki(spki: Buffer): Buffer {
  const r = parseDer(spki).children();
  r.expect(TAG.SEQUENCE, 'AlgorithmIdentifier');
  const { bytes } = decodeBitString(r.expect(TAG.BIT_STRING, 'subjectPublicKey'));
  // The one-shot form: about half the cost of a Hash object, on every issued certificate.
  return hash('sha1', bytes, 'buffer');
}

const PRIVATE_LABELS: Readonly<Record<string, 'pkcs1' | 'sec1' | 'pkcs8'>> = {
  'RSA PRIVATE KEY': 'pkcs1',
  'EC PRIVATE KEY': 'sec1',
  'PRIVATE KEY': 'pkcs8',
};

/** Parses an unencrypted private key from PEM (PKCS#1, SEC1, PKCS#8) or DER (tried in that order). */
export function parsePrivateKey(input: string | Buffer): { key: KeyObject; description: KeyDescription } {
  let key: KeyObject | undefined;
  try {
    if (typeof input === 'string' && input.includes('-----BEGIN')) {
      const block = pemDecodeAll(input).find((b) => PRIVATE_LABELS[b.label]);
      if (!block) throw new Error('no private key block');
      key = createPrivateKey({ key: block.der, format: 'der', type: PRIVATE_LABELS[block.label]! });
    } else {
      const der = typeof input === 'string' ? Buffer.from(input.trim(), 'base64') : input;
      for (const type of ['pkcs8', 'pkcs1', 'sec1'] as const) {
        try {
          key = createPrivateKey({ key: der, format: 'der', type });
          break;
        } catch {
          /* try the next container */
        }
      }
      if (!key) throw new Error('not a private key');
    }
  } catch (err) {
    throw new DomainError('invalid', `error parsing private key: ${(err as Error).message}`, { cause: err });
  }
  return { key, description: describeKey(key) };
}

/** Parses a public key from PEM (`PUBLIC KEY`, `RSA PUBLIC KEY`) or SPKI DER. */
export function parsePublicKey(input: string | Buffer): { key: KeyObject; description: KeyDescription } {
  try {
    if (typeof input === 'string' && input.includes('-----BEGIN')) {
      const block = pemDecodeAll(input).find((b) => b.label === 'PUBLIC KEY' || b.label === 'RSA PUBLIC KEY');
      if (!block) throw new Error('no public key block');
      if (block.label === 'PUBLIC KEY') return publicKeyFromSpki(block.der);
      const key = createPublicKey({ key: block.der, format: 'der', type: 'pkcs1' });
      return { key, description: describeKey(key) };
    }
    return publicKeyFromSpki(typeof input === 'string' ? Buffer.from(input.trim(), 'base64') : input);
  } catch (err) {
    if (err instanceof DomainError) throw err;
    throw new DomainError('invalid', `error parsing public key: ${(err as Error).message}`, { cause: err });
  }
}

const JWK_CURVES: Readonly<Record<string, { crv: string; bits: number; curve: string }>> = {
  '1.2.840.10045.3.1.7': { crv: 'P-256', bits: 256, curve: 'prime256v1' },
  '1.3.132.0.34': { crv: 'P-384', bits: 384, curve: 'secp384r1' },
  '1.3.132.0.35': { crv: 'P-521', bits: 521, curve: 'secp521r1' },
};

const b64url = (b: Buffer): string => b.toString('base64url');

/**
 * A public KeyObject from SubjectPublicKeyInfo DER. Common keys are imported as JWK, which
 * node:crypto builds directly (with the same on-curve check) instead of going through
 * OpenSSL's generic decoder: about 1.5x faster for P-256 and 25x for RSA and Ed25519,
 * and the key description comes from the DER rather than a native call.
 */
export function publicKeyFromSpki(spki: Buffer): { key: KeyObject; description: KeyDescription } {
  const { algOid, params, unusedBits, bytes } = readSpki(spki);
  if (unusedBits === 0) {
    if (algOid === '1.2.840.113549.1.1.1') {
      const rsa = parseDer(bytes).children();
      const n = decodeUnsignedBytes(rsa.expect(TAG.INTEGER, 'modulus'));
      const e = decodeUnsignedBytes(rsa.expect(TAG.INTEGER, 'publicExponent'));
      rsa.done('RSAPublicKey');
      const bits = n.length * 8 - Math.clz32(n[0]!) + 24;
      const key = createPublicKey({ key: { kty: 'RSA', n: b64url(n), e: b64url(e) }, format: 'jwk' });
      return { key, description: { type: 'rsa', bits } };
    }
    if (algOid === '1.2.840.10045.2.1' && params?.tag === TAG.OID) {
      const c = JWK_CURVES[decodeOid(params)];
      const size = c ? Math.ceil(c.bits / 8) : 0;
      if (c && bytes.length === 1 + 2 * size && bytes[0] === 4) {
        const jwk = {
          kty: 'EC',
          crv: c.crv,
          x: b64url(bytes.subarray(1, 1 + size)),
          y: b64url(bytes.subarray(1 + size)),
        };
        return {
          key: createPublicKey({ key: jwk, format: 'jwk' }),
          description: { type: 'ec', bits: c.bits, curve: c.curve },
        };
      }
    }
    if (algOid === '1.3.101.112' && bytes.length === 32 && !params) {
      const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: b64url(bytes) }, format: 'jwk' });
      return { key, description: { type: 'ed25519', bits: 0 } };
    }
  }
  // Everything else (P-224, compressed points, other algorithms) through OpenSSL's decoder.
  const key = createPublicKey({ key: spki, format: 'der', type: 'spki' });
  return { key, description: describeKey(key) };
}

function readSpki(spki: Buffer): { algOid: string; params: DerElement | undefined; unusedBits: number; bytes: Buffer } {
  const r = parseDer(spki).children();
  const alg = r.expect(TAG.SEQUENCE, 'AlgorithmIdentifier').children();
  const algOid = decodeOid(alg.expect(TAG.OID, 'algorithm'));
  const params = alg.hasMore() ? alg.next() : undefined;
  const { unusedBits, bytes } = decodeBitString(r.expect(TAG.BIT_STRING, 'subjectPublicKey'));
  r.done('SubjectPublicKeyInfo');
  return { algOid, params, unusedBits, bytes };
}

/**
 * For an EC key on P-256, P-384 or P-521: the curve and the encoded point (compressed or
 * not), read from the DER without importing the key. The point itself is not checked here;
 * whoever uses it must (the native verifier does). Undefined for every other key.
 */
export function ecPublicPoint(
  spki: Buffer,
): { description: KeyDescription & { curve: string }; point: Buffer } | undefined {
  const { algOid, params, unusedBits, bytes } = readSpki(spki);
  if (algOid !== '1.2.840.10045.2.1' || params?.tag !== TAG.OID || unusedBits !== 0) return undefined;
  const c = JWK_CURVES[decodeOid(params)];
  return c ? { description: { type: 'ec', bits: c.bits, curve: c.curve }, point: bytes } : undefined;
}

/** Whether two keys (private or public) share the same public key. */
export function samePublicKey(a: KeyObject, b: KeyObject): boolean {
  return spkiDer(a).equals(spkiDer(b));
}

/**
 * Parsed private keys by key id. Keys are immutable once stored, so an entry can never go
 * stale; the cache is bounded so a mount with many keys cannot grow it without limit.
 */
export class KeyObjectCache {
  readonly #entries = new Map<string, KeyObject>();
  constructor(private readonly maxEntries = 256) {}

  /** The cached KeyObject for `keyId`, parsing `pem` only on a miss. */
  get(keyId: string, pem: string | (() => string)): KeyObject {
    const hit = this.#entries.get(keyId);
    if (hit) {
      this.#entries.delete(keyId);
      this.#entries.set(keyId, hit);
      return hit;
    }
    const key = parsePrivateKey(typeof pem === 'function' ? pem() : pem).key;
    this.#entries.set(keyId, key);
    if (this.#entries.size > this.maxEntries) this.#entries.delete(this.#entries.keys().next().value!);
    return key;
  }
  /** Drops a key (after deletion). */
  delete(keyId: string): void {
    this.#entries.delete(keyId);
  }
  get size(): number {
    return this.#entries.size;
  }
}
