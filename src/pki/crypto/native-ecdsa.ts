/**
 * ECDSA through the optional native addon (native/ecdsa.c, built by `npm ci`): the
 * certificate-request check without node:crypto's per-key import, which costs more than
 * the verification itself, and certificate signatures with an EC issuer key loaded once,
 * made in the same threadpool job as the check (decision 0017). When the addon is missing,
 * or the native_crypto setting is false, `nativeEcdsa()` is null and callers use node:crypto.
 */
import { nativeAddon } from '../../shared/native-addon.js';
import type { HashName } from './signature.js';

interface Addon {
  verify(curve: number, hash: number, point: Buffer, data: Buffer, signature: Buffer): number;
  verifyAsync(curve: number, hash: number, point: Buffer, data: Buffer, signature: Buffer): Promise<number>;
  signer(curve: number, privateScalar: Buffer): object;
  sign(signer: object, hash: number, data: Buffer): Buffer;
  signAsync(signer: object, hash: number, data: Buffer): Promise<Buffer | number>;
  verifyThenSignAsync(
    curve: number,
    hash: number,
    point: Buffer,
    data: Buffer,
    signature: Buffer,
    signer: object,
    signHash: number,
    toSign: Buffer,
  ): Promise<Buffer | number>;
  generateKeysAsync(curve: number, count: number): Promise<Buffer | null>;
}

/** The curves the addon knows, by OpenSSL name. */
const CURVES: Readonly<Record<string, number>> = { prime256v1: 0, secp384r1: 1, secp521r1: 2 };
const HASHES: Readonly<Record<HashName, number>> = { sha1: 0, sha256: 1, sha384: 2, sha512: 3 };

/** 'valid', 'invalid' (a wrong signature), 'bad-key' (a point not on the curve), or 'error' (use node:crypto). */
export type NativeVerdict = 'valid' | 'invalid' | 'bad-key' | 'error';

/** A signature to check: `signature` over `data` by the public `point` on `curve`. */
export interface NativeCheck {
  curve: string;
  hash: HashName;
  point: Buffer;
  data: Buffer;
  signature: Buffer;
}

/** An EC private key loaded into the addon, for one curve. */
export interface NativeSigner {
  readonly curve: string;
}

export interface NativeEcdsa {
  supportsCurve(curve: string): boolean;
  verify(check: NativeCheck): NativeVerdict;
  /** The same check on the libuv threadpool. */
  verifyAsync(check: NativeCheck): Promise<NativeVerdict>;
  /** Loads a private key (its scalar, big-endian); throws when it is not a key of that curve. */
  signer(curve: string, privateScalar: Buffer): NativeSigner;
  sign(signer: NativeSigner, hash: HashName, data: Buffer): Buffer;
  /** A signature made on the libuv threadpool; null when the addon failed (sign with node:crypto instead). */
  signAsync(signer: NativeSigner, hash: HashName, data: Buffer): Promise<Buffer | null>;
  /**
   * Checks `check`, then, only if it holds, signs `toSign`: one threadpool job. Answers the
   * signature, or the check's verdict when it did not hold (or 'error' if the addon failed).
   */
  verifyThenSignAsync(
    check: NativeCheck,
    signer: NativeSigner,
    hash: HashName,
    toSign: Buffer,
  ): Promise<Buffer | Exclude<NativeVerdict, 'valid'>>;
  /**
   * `count` (1 to 256) new key pairs of `curve`, made on the libuv threadpool: each its
   * private scalar (curve size, big-endian) then its uncompressed public point. Null when
   * the addon failed.
   */
  generateKeysAsync(curve: string, count: number): Promise<{ d: Buffer; q: Buffer }[] | null>;
}

const CURVE_SIZES: Readonly<Record<string, number>> = { prime256v1: 32, secp384r1: 48, secp521r1: 66 };

const verdict = (r: number): NativeVerdict =>
  r === 1 ? 'valid' : r === 0 ? 'invalid' : r === -1 ? 'bad-key' : 'error';

class Signer implements NativeSigner {
  constructor(
    readonly curve: string,
    readonly handle: object,
  ) {}
}

function load(): NativeEcdsa | null {
  const addon = nativeAddon() as Addon | null;
  if (!addon) return null;
  const curveOf = (curve: string): number => CURVES[curve] ?? -1;
  const handleOf = (s: NativeSigner): object => {
    if (!(s instanceof Signer)) throw new TypeError('not a signer of this addon');
    return s.handle;
  };
  return {
    supportsCurve: (curve) => curveOf(curve) >= 0,
    verify: (c) => verdict(addon.verify(curveOf(c.curve), HASHES[c.hash], c.point, c.data, c.signature)),
    verifyAsync: async (c) =>
      verdict(await addon.verifyAsync(curveOf(c.curve), HASHES[c.hash], c.point, c.data, c.signature)),
    signer: (curve, scalar) => new Signer(curve, addon.signer(curveOf(curve), scalar)),
    sign: (s, hash, data) => addon.sign(handleOf(s), HASHES[hash], data),
    signAsync: async (s, hash, data) => {
      const r = await addon.signAsync(handleOf(s), HASHES[hash], data);
      return Buffer.isBuffer(r) ? r : null;
    },
    verifyThenSignAsync: async (c, s, hash, toSign) => {
      const r = await addon.verifyThenSignAsync(
        curveOf(c.curve),
        HASHES[c.hash],
        c.point,
        c.data,
        c.signature,
        handleOf(s),
        HASHES[hash],
        toSign,
      );
      if (Buffer.isBuffer(r)) return r;
      const v = verdict(r);
      return v === 'valid' ? 'error' : v;
    },
    generateKeysAsync: async (curve, count) => {
      const size = CURVE_SIZES[curve];
      if (size === undefined) throw new RangeError(`no native key generation on ${curve}`);
      const out = await addon.generateKeysAsync(curveOf(curve), count);
      if (!out) return null;
      const step = 3 * size + 1;
      const keys: { d: Buffer; q: Buffer }[] = [];
      for (let at = 0; at + step <= out.length; at += step)
        keys.push({ d: out.subarray(at, at + size), q: out.subarray(at + size, at + step) });
      return keys;
    },
  };
}

let loaded: NativeEcdsa | null | undefined;

/**
 * The addon, or null when it was not built or does not load. Loaded on first use: a loaded
 * library is the process's, but whether to use it (the native_crypto setting) is each
 * server's choice, passed down as a `native` option (PkiServices holds it).
 */
export function nativeEcdsa(): NativeEcdsa | null {
  if (loaded === undefined) loaded = load();
  return loaded;
}

/** The addon when `on` (a server's native_crypto setting) and it loads, else null. */
export function nativeEcdsaIf(on: boolean): NativeEcdsa | null {
  return on ? nativeEcdsa() : null;
}
