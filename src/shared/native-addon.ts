/**
 * The optional native addon (native/, built by `npm ci` into build/Release). Its parts are
 * typed by the modules that use them (pki/crypto/native-ecdsa.ts, shared/thread-scheduling.ts).
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';

// dist/src/shared/ → the package root's build/Release.
const ADDON_PATH = new URL('../../../build/Release/strongroom_native.node', import.meta.url);

let loaded: Record<string, unknown> | null | undefined;

/** The addon's exports, or null when it was not built or does not load. Loaded once. */
export function nativeAddon(): Record<string, unknown> | null {
  if (loaded === undefined) {
    loaded = null;
    if (existsSync(ADDON_PATH)) {
      try {
        loaded = createRequire(import.meta.url)(ADDON_PATH.pathname) as Record<string, unknown>;
      } catch {
        loaded = null;
      }
    }
  }
  return loaded;
}
