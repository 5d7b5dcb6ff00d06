import { randomBytes, randomUUID, createHash } from 'node:crypto';

const BASE58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';

/** Random base58 string of the given length (rejection sampling keeps it uniform). */
export function randomBase58(length: number): string {
  let out = '';
  while (out.length < length) {
    const buf = randomBytes(length * 2);
    for (const b of buf) {
      if (b < 232) out += BASE58[b % 58];
      if (out.length === length) break;
    }
  }
  return out;
}

/** TFE-shaped id: a type prefix and 16 random base58 characters (`ws-…`, `sv-…`). */
export function tfeId(prefix: string): string {
  return `${prefix}-${randomBase58(16)}`;
}

/**
 * Whether `s` has the shape of a TFE id with this prefix: the prefix, a dash and 16
 * letters or digits (HCP's own ids are alphanumeric, ours base58).
 */
export function isTfeIdOf(prefix: string, s: string): boolean {
  return s.length === prefix.length + 17 && s.startsWith(`${prefix}-`) && /^[A-Za-z0-9]{16}$/.test(s.slice(prefix.length + 1));
}

export function uuid(): string {
  return randomUUID();
}

/** An unguessable URL-safe token with `bytes` bytes of entropy. */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/** Tokens are stored only as this hash. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}
