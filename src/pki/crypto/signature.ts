/**
 * Signature algorithms: choosing one for an issuer key the way Vault does (reference
 * 16.10), its AlgorithmIdentifier DER, signing with node:crypto, and verifying the
 * algorithms found in CSRs and certificates.
 */
import { constants, sign as cryptoSign, verify as cryptoVerify } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { DomainError } from '../../shared/errors.js';
import { NULL_DER, TAG, decodeOid, decodeSmallInt, explicit, integer, oid, sequence } from './der.js';
import type { DerElement } from './der.js';
import type { KeyDescription } from './key-generation.js';

export type HashName = 'sha1' | 'sha256' | 'sha384' | 'sha512';

export interface SignatureAlgorithm {
  /** Go-style name, as Vault reports it (e.g. `SHA256WithRSA`, `ECDSAWithSHA384`, `PureEd25519`). */
  name: string;
  /** Encoded AlgorithmIdentifier, to place in the TBS and outer structure. */
  identifier: Buffer;
  /** ECDSA with this hash, when it is ECDSA (what the native addon can sign). */
  ecdsaHash: HashName | null;
  /** Signs `data` with the issuer's private key. */
  sign(data: Buffer, key: KeyObject): Buffer;
  /** The same signature made on the libuv threadpool, leaving the event loop free. */
  signAsync(data: Buffer, key: KeyObject): Promise<Buffer>;
}

type SignKey = KeyObject | { key: KeyObject; padding: number; saltLength: number };

/** One-shot signature on the threadpool (the callback form of crypto.sign). */
function signOnPool(hash: HashName | null, data: Buffer, key: SignKey): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    cryptoSign(hash, data, key, (err, sig) => (err ? reject(err) : resolve(sig)));
  });
}

function algorithm(
  name: string,
  identifier: Buffer,
  hash: HashName | null,
  key: (k: KeyObject) => SignKey,
  ecdsa = false,
): SignatureAlgorithm {
  return {
    name,
    identifier,
    ecdsaHash: ecdsa ? hash : null,
    sign: (data, k) => cryptoSign(hash, data, key(k)),
    signAsync: (data, k) => signOnPool(hash, data, key(k)),
  };
}

const HASH_OID: Readonly<Record<HashName, string>> = {
  sha1: '1.3.14.3.2.26',
  sha256: '2.16.840.1.101.3.4.2.1',
  sha384: '2.16.840.1.101.3.4.2.2',
  sha512: '2.16.840.1.101.3.4.2.3',
};
const HASH_BY_OID = new Map(Object.entries(HASH_OID).map(([h, o]) => [o, h as HashName]));
const HASH_LEN: Readonly<Record<HashName, number>> = { sha1: 20, sha256: 32, sha384: 48, sha512: 64 };

const RSA_PKCS1_OID: Readonly<Record<HashName, string>> = {
  sha1: '1.2.840.113549.1.1.5',
  sha256: '1.2.840.113549.1.1.11',
  sha384: '1.2.840.113549.1.1.12',
  sha512: '1.2.840.113549.1.1.13',
};
const ECDSA_OID: Readonly<Record<HashName, string>> = {
  sha1: '1.2.840.10045.4.1',
  sha256: '1.2.840.10045.4.3.2',
  sha384: '1.2.840.10045.4.3.3',
  sha512: '1.2.840.10045.4.3.4',
};
const RSA_PSS_OID = '1.2.840.113549.1.1.10';
const MGF1_OID = '1.2.840.113549.1.1.8';
const ED25519_OID = '1.3.101.112';

const hashBits = (h: HashName): string => h.slice(3);

function hashForBits(signatureBits: number): HashName {
  switch (signatureBits) {
    case 0:
    case 256:
      return 'sha256';
    case 384:
      return 'sha384';
    case 512:
      return 'sha512';
    default:
      throw new DomainError('invalid', `unsupported hash signature algorithm: ${signatureBits}`);
  }
}

/** RSASSA-PSS-params with salt length = hash length and MGF1 over the same hash, as Go writes them. */
function pssIdentifier(h: HashName): Buffer {
  const hashAlg = sequence(oid(HASH_OID[h]), NULL_DER);
  return sequence(
    oid(RSA_PSS_OID),
    sequence(explicit(0, hashAlg), explicit(1, sequence(oid(MGF1_OID), hashAlg)), explicit(2, integer(HASH_LEN[h]))),
  );
}

const cache = new Map<string, SignatureAlgorithm>();

/**
 * The algorithm an issuer key signs with: RSA by `signatureBits` (0 = SHA-256), PSS when
 * `usePss`; ECDSA hash follows the curve (P-224/P-256 SHA-256, P-384 SHA-384, P-521
 * SHA-512) and ignores `signatureBits`; Ed25519 is pure.
 */
export function chooseSignatureAlgorithm(
  key: KeyDescription,
  opts: { signatureBits?: number; usePss?: boolean } = {},
): SignatureAlgorithm {
  const bits = opts.signatureBits ?? 0;
  const pss = opts.usePss ?? false;
  const cacheKey = key.type === 'rsa' ? `rsa:${bits}:${pss}` : key.type === 'ec' ? `ec:${key.bits}` : 'ed25519';
  const hit = cache.get(cacheKey);
  if (hit) return hit;
  let alg: SignatureAlgorithm;
  const plain = (k: KeyObject): SignKey => k;
  if (key.type === 'rsa') {
    const h = hashForBits(bits);
    alg = pss
      ? algorithm(`SHA${hashBits(h)}WithRSAPSS`, pssIdentifier(h), h, (k) => ({
          key: k,
          padding: constants.RSA_PKCS1_PSS_PADDING,
          saltLength: HASH_LEN[h],
        }))
      : algorithm(`SHA${hashBits(h)}WithRSA`, sequence(oid(RSA_PKCS1_OID[h]), NULL_DER), h, plain);
  } else if (key.type === 'ec') {
    const h: HashName = key.bits === 384 ? 'sha384' : key.bits === 521 ? 'sha512' : 'sha256';
    alg = algorithm(`ECDSAWithSHA${hashBits(h)}`, sequence(oid(ECDSA_OID[h])), h, plain, true);
  } else {
    alg = algorithm('PureEd25519', sequence(oid(ED25519_OID)), null, plain);
  }
  cache.set(cacheKey, alg);
  return alg;
}

/** What a parsed AlgorithmIdentifier asks a verifier to do. */
export interface VerifyParams {
  name: string;
  kind: 'rsa' | 'rsa-pss' | 'ecdsa' | 'ed25519';
  hash: HashName | null;
  saltLength?: number;
}

const BY_OID = new Map<string, VerifyParams>();
for (const h of Object.keys(HASH_OID) as HashName[]) {
  BY_OID.set(RSA_PKCS1_OID[h], { name: `SHA${h === 'sha1' ? '1' : hashBits(h)}WithRSA`, kind: 'rsa', hash: h });
  BY_OID.set(ECDSA_OID[h], { name: `ECDSAWithSHA${h === 'sha1' ? '1' : hashBits(h)}`, kind: 'ecdsa', hash: h });
}
BY_OID.set(ED25519_OID, { name: 'PureEd25519', kind: 'ed25519', hash: null });

function hashOfAlgId(el: DerElement): HashName {
  const o = decodeOid(el.children().expect(TAG.OID, 'hash algorithm'));
  const h = HASH_BY_OID.get(o);
  if (!h) throw new DomainError('invalid', `unsupported hash algorithm ${o}`);
  return h;
}

/** Interprets a signature AlgorithmIdentifier element. */
export function parseSignatureAlgorithm(el: DerElement): VerifyParams {
  const r = el.children();
  const algOid = decodeOid(r.expect(TAG.OID, 'signature algorithm'));
  const known = BY_OID.get(algOid);
  if (known) return known;
  if (algOid !== RSA_PSS_OID) throw new DomainError('invalid', `unsupported signature algorithm ${algOid}`);
  // RFC 4055 defaults are SHA-1 / MGF1-SHA-1 / salt 20.
  let hash: HashName = 'sha1';
  let saltLength = 20;
  const params = r.optional(TAG.SEQUENCE);
  if (params) {
    const p = params.children();
    const h = p.optional(0xa0);
    if (h) hash = hashOfAlgId(h.children().next());
    const mgf = p.optional(0xa1);
    if (mgf) {
      const m = mgf.children().next().children();
      if (decodeOid(m.expect(TAG.OID)) !== MGF1_OID)
        throw new DomainError('invalid', 'unsupported PSS mask generation function');
      if (hashOfAlgId(m.next()) !== hash)
        throw new DomainError('invalid', 'PSS MGF1 hash differs from the message hash');
    }
    const salt = p.optional(0xa2);
    if (salt) saltLength = decodeSmallInt(salt.children().next());
  }
  return { name: `SHA${hash === 'sha1' ? '1' : hashBits(hash)}WithRSAPSS`, kind: 'rsa-pss', hash, saltLength };
}

/** The key argument node:crypto needs for `params`, or undefined when the key type cannot match. */
function verifyKey(
  params: VerifyParams,
  publicKey: KeyObject,
): KeyObject | { key: KeyObject; padding: number; saltLength: number } | undefined {
  const t = publicKey.asymmetricKeyType;
  switch (params.kind) {
    case 'rsa':
      return t === 'rsa' ? publicKey : undefined;
    case 'rsa-pss':
      return t === 'rsa' || t === 'rsa-pss'
        ? { key: publicKey, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: params.saltLength ?? 20 }
        : undefined;
    case 'ecdsa':
      return t === 'ec' ? publicKey : undefined;
    case 'ed25519':
      return t === 'ed25519' ? publicKey : undefined;
  }
}

/** Verifies a signature made with `params` over `data`; a key of the wrong type is simply a failed verification. */
export function verifySignature(params: VerifyParams, data: Buffer, signature: Buffer, publicKey: KeyObject): boolean {
  const key = verifyKey(params, publicKey);
  if (!key) return false;
  try {
    return cryptoVerify(params.hash, data, key, signature);
  } catch {
    return false;
  }
}

/** verifySignature on the libuv threadpool, leaving the event loop free. */
export function verifySignatureAsync(
  params: VerifyParams,
  data: Buffer,
  signature: Buffer,
  publicKey: KeyObject,
): Promise<boolean> {
  const key = verifyKey(params, publicKey);
  if (!key) return Promise.resolve(false);
  return new Promise((resolve) => {
    try {
      cryptoVerify(params.hash, data, key, signature, (err, ok) => resolve(!err && ok));
    } catch {
      resolve(false);
    }
  });
}
