/**
 * ECDSA verification through the optional native addon (native/ecdsa.c, built by
 * `npm ci`): the certificate-request check without node:crypto's per-key import, which
 * costs more than the verification itself (decision 0017). When the addon is missing, or
 * the native_crypto setting is false, `nativeEcdsa()` is null and callers use node:crypto.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { HashName } from './signature.js';

interface Addon {
  verify(curve: number, hash: number, point: Buffer, data: Buffer, signature: Buffer): number;
  verifyAsync(curve: number, hash: number, point: Buffer, data: Buffer, signature: Buffer): Promise<number>;
}

/** The curves the addon knows, by OpenSSL name. */
const CURVES: Readonly<Record<string, number>> = { prime256v1: 0, secp384r1: 1, secp521r1: 2 };
const HASHES: Readonly<Record<HashName, number>> = { sha1: 0, sha256: 1, sha384: 2, sha512: 3 };

/** 'valid', 'invalid' (a wrong signature), 'bad-key' (a point not on the curve), or 'error' (use node:crypto). */
export type NativeVerdict = 'valid' | 'invalid' | 'bad-key' | 'error';

export interface NativeEcdsa {
  supportsCurve(curve: string): boolean;
  verify(curve: string, hash: HashName, point: Buffer, data: Buffer, signature: Buffer): NativeVerdict;
  /** The same check on the libuv threadpool. */
  verifyAsync(curve: string, hash: HashName, point: Buffer, data: Buffer, signature: Buffer): Promise<NativeVerdict>;
}

const verdict = (r: number): NativeVerdict => (r === 1 ? 'valid' : r === 0 ? 'invalid' : r === -1 ? 'bad-key' : 'error');

function load(): NativeEcdsa | null {
  const require = createRequire(import.meta.url);
  // dist/src/pki/crypto/ → the package root's build/Release.
  const path = new URL('../../../../build/Release/strongroom_native.node', import.meta.url);
  if (!existsSync(path)) return null;
  let addon: Addon;
  try {
    addon = require(path.pathname) as Addon;
  } catch {
    return null;
  }
  const curveOf = (curve: string): number => CURVES[curve] ?? -1;
  return {
    supportsCurve: (curve) => curveOf(curve) >= 0,
    verify: (curve, hash, point, data, signature) => verdict(addon.verify(curveOf(curve), HASHES[hash], point, data, signature)),
    verifyAsync: async (curve, hash, point, data, signature) =>
      verdict(await addon.verifyAsync(curveOf(curve), HASHES[hash], point, data, signature)),
  };
}

let enabled = true;
let loaded: NativeEcdsa | null | undefined;

/** The native_crypto setting: false makes every caller use node:crypto. */
export function useNativeCrypto(on: boolean): void {
  enabled = on;
}

/** The addon, or null when it was not built, does not load, or is switched off. Loaded on first use. */
export function nativeEcdsa(): NativeEcdsa | null {
  if (!enabled) return null;
  if (loaded === undefined) loaded = load();
  return loaded;
}
