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
import {
  createECDH,
  createPrivateKey,
  createPublicKey,
  generateKeyPair as generateKeyPairCb,
  generateKeyPairSync,
  randomBytes,
} from 'node:crypto';
import type { ECDH, KeyObject } from 'node:crypto';
import { promisify } from 'node:util';
import { bitString, explicit, integer, nullValue, octetString, oid, sequence } from './der.js';
import type { NativeEcdsa } from './native-ecdsa.js';

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

/** A generated key whose KeyObjects are imported on first use (the issue path never needs them). */
class Generated implements GeneratedKey {
  #priv: KeyObject | undefined;
  #pub: KeyObject | undefined;
  readonly description: KeyDescription;
  readonly spki: Buffer;
  readonly privateDer: Buffer;
  readonly privateLabel: GeneratedKey['privateLabel'];
  readonly pkcs8: Buffer;

  constructor(k: Omit<GeneratedKey, 'privateKey' | 'publicKey'>) {
    this.description = k.description;
    this.spki = k.spki;
    this.privateDer = k.privateDer;
    this.privateLabel = k.privateLabel;
    this.pkcs8 = k.pkcs8;
  }

  get privateKey(): KeyObject {
    this.#priv ??= createPrivateKey({ key: this.pkcs8, format: 'der', type: 'pkcs8' });
    return this.#priv;
  }

  get publicKey(): KeyObject {
    this.#pub ??= createPublicKey(this.privateKey);
    return this.#pub;
  }
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

/**
 * The DER of an EC key's SPKI, SEC1 and PKCS#8 forms, made once per curve with marker
 * bytes where the private scalar and the public point go: every length is fixed by the
 * curve (the scalar is padded to the curve size, the point is uncompressed), so a key's
 * encodings are these templates with its bytes copied in.
 */
interface EcTemplate {
  spki: Buffer;
  sec1: Buffer;
  pkcs8: Buffer;
  /** Where the scalar (`d`) and the point (`q`) start in each template. */
  at: { spkiQ: number; sec1D: number; sec1Q: number; pkcs8D: number; pkcs8Q: number };
}

const ecTemplates = new Map<number, EcTemplate>();

function ecTemplate(bits: number, curve: { oid: string; size: number }): EcTemplate {
  let t = ecTemplates.get(bits);
  if (t) return t;
  const d = Buffer.alloc(curve.size, 0xd5);
  const q = Buffer.alloc(1 + 2 * curve.size, 0x9a);
  q[0] = 0x04;
  const algorithm = sequence(oid(EC_PUBLIC_KEY), oid(curve.oid));
  const point = bitString(q);
  const spki = sequence(algorithm, point);
  const sec1 = sequence(integer(1), octetString(d), explicit(0, oid(curve.oid)), explicit(1, point));
  // As OpenSSL writes it: the curve in the outer AlgorithmIdentifier only.
  const pkcs8 = sequence(integer(0), algorithm, octetString(sequence(integer(1), octetString(d), explicit(1, point))));
  t = {
    spki,
    sec1,
    pkcs8,
    at: {
      spkiQ: spki.indexOf(q),
      sec1D: sec1.indexOf(d),
      sec1Q: sec1.indexOf(q),
      pkcs8D: pkcs8.indexOf(d),
      pkcs8Q: pkcs8.indexOf(q),
    },
  };
  if (Object.values(t.at).some((i) => i < 0))
    throw new Error(`EC key template for ${bits} bits has no room for the key`);
  ecTemplates.set(bits, t);
  return t;
}

/** Copies `parts` (bytes, at offset) into a copy of `template`. */
function fill(template: Buffer, parts: readonly (readonly [Buffer, number])[]): Buffer {
  const out = Buffer.from(template);
  for (const [bytes, at] of parts) bytes.copy(out, at);
  return out;
}

/**
 * An EC key from its private scalar `d` (big-endian, at most the curve size) and its
 * uncompressed public point `q`, with SEC1, SPKI and PKCS#8 encoded from the curve's templates.
 */
export function ecKeyFromParts(bits: number, d: Buffer, q: Buffer): GeneratedKey {
  const curve = EC_CURVES[bits];
  if (!curve) throw new RangeError(`unsupported EC key size ${bits}`);
  if (q.length !== 1 + 2 * curve.size || q[0] !== 0x04 || d.length > curve.size)
    throw new RangeError('malformed EC key parts');
  const t = ecTemplate(bits, curve);
  const dd = leftPad(d, curve.size);
  return new Generated({
    description: { type: 'ec', bits, curve: curve.name },
    spki: fill(t.spki, [[q, t.at.spkiQ]]),
    privateDer: fill(t.sec1, [
      [dd, t.at.sec1D],
      [q, t.at.sec1Q],
    ]),
    privateLabel: 'EC PRIVATE KEY',
    pkcs8: fill(t.pkcs8, [
      [dd, t.at.pkcs8D],
      [q, t.at.pkcs8Q],
    ]),
  });
}

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
  return ecKeyFromParts(bits, ecdh.getPrivateKey(), ecdh.getPublicKey());
}

/**
 * `count` EC keys generated together on the libuv threadpool by the native addon `addon`,
 * or null when there is none (or it has no such curve): then generate with generateEcKey.
 */
export function generateEcKeysBatch(
  bits: number,
  count: number,
  addon: NativeEcdsa | null,
): Promise<GeneratedKey[] | null> | null {
  const curve = EC_CURVES[bits];
  if (!curve || !addon || !addon.supportsCurve(curve.name)) return null;
  return addon.generateKeysAsync(curve.name, count).then((parts) => {
    if (!parts) return null;
    const keys = parts.map(({ d, q }) => ecKeyFromParts(bits, d, q));
    // The batch's bytes are copied into each key's encodings; none stays behind.
    for (const { d } of parts) d.fill(0);
    return keys;
  });
}

/** Ed25519 from a random 32-byte seed (RFC 8410); the public key is derived by node:crypto. */
export function generateEd25519Key(): GeneratedKey {
  const pkcs8 = sequence(integer(0), sequence(oid(ED25519)), octetString(octetString(randomBytes(32))));
  const priv = createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' });
  const pub = createPublicKey(priv);
  const x = Buffer.from(pub.export({ format: 'jwk' }).x!, 'base64url');
  const k = new Generated({
    description: { type: 'ed25519', bits: 0 },
    spki: sequence(sequence(oid(ED25519)), bitString(x)),
    privateDer: pkcs8,
    privateLabel: 'PRIVATE KEY',
    pkcs8,
  });
  return Object.defineProperties(k, { privateKey: { value: priv }, publicKey: { value: pub } });
}

const RSA_ALGORITHM = sequence(oid('1.2.840.113549.1.1.1'), nullValue());

/** RSA on the libuv thread pool; only DER leaves the generation job. */
export async function generateRsaKey(bits: number): Promise<GeneratedKey> {
  const { publicKey, privateKey } = await generateKeyPairAsync('rsa', {
    modulusLength: bits,
    publicExponent: 0x10001,
    publicKeyEncoding: { type: 'spki', format: 'der' },
    privateKeyEncoding: { type: 'pkcs1', format: 'der' },
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
    modulusLength: bits,
    publicExponent: 0x10001,
    publicKeyEncoding: { type: 'spki', format: 'der' },
    privateKeyEncoding: { type: 'pkcs1', format: 'der' },
  });
  return rsaKey(bits, publicKey, privateKey);
}

function rsaKey(bits: number, spki: Buffer, pkcs1: Buffer): GeneratedKey {
  return new Generated({
    description: { type: 'rsa', bits },
    spki,
    privateDer: pkcs1,
    privateLabel: 'RSA PRIVATE KEY',
    pkcs8: sequence(integer(0), RSA_ALGORITHM, octetString(pkcs1)),
  });
}
