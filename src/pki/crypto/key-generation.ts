/**
 * Key generation that yields the encodings the engine needs (SPKI, the private key in
 * Vault's container, PKCS#8) without going through OpenSSL's encoders, and KeyObjects
 * only on demand.
 *
 * Two reasons. Speed: OpenSSL's SPKI encoder alone costs about 100 µs, more than signing
 * the certificate, while an EC key from ECDH plus our own DER takes about 60 µs in all.
 * Safety: in Node 20 a KeyObject made by generateKeyPair(Sync) shares a lock with its
 * generation job; a failing JWK export of such a key (P-224) deadlocks the thread when the
 * garbage collector finalises the job meanwhile, and other key reads take the same lock.
 * KeyObjects handed out here are always imported afresh from DER, so they never share it.
 */
import { createECDH, createPrivateKey, createPublicKey, generateKeyPair as generateKeyPairCb, generateKeyPairSync, randomBytes } from 'node:crypto';
import type { ECDH, KeyObject } from 'node:crypto';
import { promisify } from 'node:util';
import { bitString, explicit, integer, nullValue, octetString, oid, sequence } from './der.js';

const generateKeyPairAsync = promisify(generateKeyPairCb);

export type KeyType = 'rsa' | 'ec' | 'ed25519';

export interface KeyDescription {
  type: KeyType;
  /** RSA modulus bits, EC curve bits (224/256/384/521), 0 for Ed25519 as Vault stores it. */
  bits: number;
  /** OpenSSL curve name for EC keys. */
  curve?: string;
}

const EC_CURVES: Readonly<Record<number, { name: string; oid: string; size: number }>> = {
  224: { name: 'secp224r1', oid: '1.3.132.0.33', size: 28 },
  256: { name: 'prime256v1', oid: '1.2.840.10045.3.1.7', size: 32 },
  384: { name: 'secp384r1', oid: '1.3.132.0.34', size: 48 },
  521: { name: 'secp521r1', oid: '1.3.132.0.35', size: 66 },
};
const EC_PUBLIC_KEY = '1.2.840.10045.2.1';
const ED25519 = '1.3.101.112';

/** A freshly generated key pair. */
export interface GeneratedKey {
  description: KeyDescription;
  /** SubjectPublicKeyInfo DER. */
  spki: Buffer;
  /** Private key in Vault's default container: PKCS#1, SEC1, or PKCS#8 for Ed25519. */
  privateDer: Buffer;
  /** PEM label of `privateDer`. */
  privateLabel: 'RSA PRIVATE KEY' | 'EC PRIVATE KEY' | 'PRIVATE KEY';
  /** PKCS#8 PrivateKeyInfo DER. */
  pkcs8: Buffer;
  /** Parsed private key, imported on first use (the issue path never needs it). */
  readonly privateKey: KeyObject;
  /** Parsed public key, derived on first use. */
  readonly publicKey: KeyObject;
}

function withLazyKeys(k: Omit<GeneratedKey, 'privateKey' | 'publicKey'>): GeneratedKey {
  let priv: KeyObject | undefined;
  let pub: KeyObject | undefined;
  return {
    ...k,
    get privateKey() {
      priv ??= createPrivateKey({ key: k.pkcs8, format: 'der', type: 'pkcs8' });
      return priv;
    },
    get publicKey() {
      pub ??= createPublicKey(this.privateKey);
      return pub;
    },
  };
}

export function ecCurve(bits: number): { name: string; oid: string; size: number } | undefined {
  return EC_CURVES[bits];
}

function leftPad(b: Buffer, size: number): Buffer {
  return b.length >= size ? b : Buffer.concat([Buffer.alloc(size - b.length), b]);
}

/**
 * One ECDH object per curve: generateKeys() replaces its key pair with a new one each call,
 * and reusing the object saves setting the curve up again (about 40% of a P-256 generation).
 * The process is single-threaded, so nothing else reads the object between the generation
 * and the two reads that follow it.
 */
const ecdhByCurve = new Map<string, ECDH>();

/** EC key via ECDH (same key pair generation), with SEC1, SPKI and PKCS#8 encoded here. */
export function generateEcKey(bits: number): GeneratedKey {
  const curve = EC_CURVES[bits];
  if (!curve) throw new RangeError(`unsupported EC key size ${bits}`);
  let ecdh = ecdhByCurve.get(curve.name);
  if (!ecdh) {
    ecdh = createECDH(curve.name);
    ecdhByCurve.set(curve.name, ecdh);
  }
  ecdh.generateKeys();
  const d = leftPad(ecdh.getPrivateKey(), curve.size);
  const q = ecdh.getPublicKey();
  const algorithm = sequence(oid(EC_PUBLIC_KEY), oid(curve.oid));
  const point = bitString(q);
  return withLazyKeys({
    description: { type: 'ec', bits, curve: curve.name },
    spki: sequence(algorithm, point),
    privateDer: sequence(integer(1), octetString(d), explicit(0, oid(curve.oid)), explicit(1, point)),
    privateLabel: 'EC PRIVATE KEY',
    // As OpenSSL writes it: the curve in the outer AlgorithmIdentifier only.
    pkcs8: sequence(integer(0), algorithm, octetString(sequence(integer(1), octetString(d), explicit(1, point)))),
  });
}

/** Ed25519 from a random 32-byte seed (RFC 8410); the public key is derived by node:crypto. */
export function generateEd25519Key(): GeneratedKey {
  const pkcs8 = sequence(integer(0), sequence(oid(ED25519)), octetString(octetString(randomBytes(32))));
  const priv = createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' });
  const pub = createPublicKey(priv);
  const x = Buffer.from(pub.export({ format: 'jwk' }).x!, 'base64url');
  const k = withLazyKeys({
    description: { type: 'ed25519', bits: 0 }, spki: sequence(sequence(oid(ED25519)), bitString(x)),
    privateDer: pkcs8, privateLabel: 'PRIVATE KEY', pkcs8,
  });
  return Object.defineProperties(k, { privateKey: { value: priv }, publicKey: { value: pub } });
}

const RSA_ALGORITHM = sequence(oid('1.2.840.113549.1.1.1'), nullValue());

/** RSA on the libuv thread pool; only DER leaves the generation job. */
export async function generateRsaKey(bits: number): Promise<GeneratedKey> {
  const { publicKey, privateKey } = await generateKeyPairAsync('rsa', {
    modulusLength: bits, publicExponent: 0x10001,
    publicKeyEncoding: { type: 'spki', format: 'der' }, privateKeyEncoding: { type: 'pkcs1', format: 'der' },
  });
  return rsaKey(bits, publicKey, privateKey);
}

/** Any supported key; RSA runs on the thread pool so the event loop stays free. */
export async function generateKey(type: KeyType, bits: number): Promise<GeneratedKey> {
  if (type === 'rsa') return generateRsaKey(bits);
  return generateKeySync(type, bits);
}

/** Synchronous generation: fine for EC and Ed25519 (well under a millisecond); RSA blocks the thread. */
export function generateKeySync(type: KeyType, bits: number): GeneratedKey {
  if (type === 'ec') return generateEcKey(bits);
  if (type === 'ed25519') return generateEd25519Key();
  const { publicKey, privateKey } = generateKeyPairSync('rsa', {
    modulusLength: bits, publicExponent: 0x10001,
    publicKeyEncoding: { type: 'spki', format: 'der' }, privateKeyEncoding: { type: 'pkcs1', format: 'der' },
  });
  return rsaKey(bits, publicKey, privateKey);
}

function rsaKey(bits: number, spki: Buffer, pkcs1: Buffer): GeneratedKey {
  return withLazyKeys({
    description: { type: 'rsa', bits }, spki, privateDer: pkcs1, privateLabel: 'RSA PRIVATE KEY',
    pkcs8: sequence(integer(0), RSA_ALGORITHM, octetString(pkcs1)),
  });
}
