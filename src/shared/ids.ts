import { hash, randomBytes, randomFillSync, randomUUID } from 'node:crypto';

/** In ASCII order, so fixed-width base58 numbers sort like the numbers. */
const BASE58 = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';

/**
 * Small random reads come from one buffer refilled by the CSPRNG (`randomFillSync`): one
 * call into OpenSSL per 4 KB instead of one per id or serial. No byte is handed out twice,
 * and each is zeroed once taken, so the buffer never holds what a secret was made of.
 */
const POOL = Buffer.alloc(4096);
let poolAt = POOL.length;

/** `n` fresh random bytes in a Buffer of their own. */
export function pooledRandomBytes(n: number): Buffer {
  if (n > 512) return randomBytes(n);
  const out = Buffer.allocUnsafe(n);
  pooledRandomInto(out, 0, n);
  return out;
}

/** Writes `n` (at most 512) fresh random bytes into `target` at `offset`, from the same pool. */
export function pooledRandomInto(target: Buffer, offset: number, n: number): void {
  if (n > 512) throw new RangeError(`pooledRandomInto: ${n} bytes`);
  if (poolAt + n > POOL.length) {
    randomFillSync(POOL);
    poolAt = 0;
  }
  POOL.copy(target, offset, poolAt, poolAt + n);
  POOL.fill(0, poolAt, poolAt + n);
  poolAt += n;
}

/** Random base58 string of the given length (rejection sampling keeps it uniform). */
export function randomBase58(length: number): string {
  let out = '';
  while (out.length < length) {
    const buf = pooledRandomBytes(length + 8);
    for (let i = 0; i < buf.length && out.length < length; i++) {
      const b = buf[i]!;
      if (b < 232) out += BASE58[b % 58];
    }
    buf.fill(0);
  }
  return out;
}

/**
 * An id that sorts by creation time: `at` (milliseconds since the epoch) as 8 base58
 * digits, then `randomChars` random base58 characters. Rows keyed by such ids are
 * appended to their index instead of landing on a random page of it.
 */
export function timeOrderedBase58(at: number, randomChars: number): string {
  let n = Math.max(0, Math.floor(at));
  let head = '';
  for (let i = 0; i < 8; i++) {
    head = BASE58[n % 58]! + head;
    n = Math.floor(n / 58);
  }
  return head + randomBase58(randomChars);
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
  return (
    s.length === prefix.length + 17 &&
    s.startsWith(`${prefix}-`) &&
    /^[A-Za-z0-9]{16}$/.test(s.slice(prefix.length + 1))
  );
}

export function uuid(): string {
  return randomUUID();
}

let lastMs = 0;
let sequence = 0;

/**
 * A UUID of version 7 (RFC 9562): the milliseconds since 1970 first, then a sequence within
 * the millisecond, then random bits. Ids made one after another sort in that order, so rows
 * keyed by them are appended to their index instead of landing on a random page of it (which
 * costs a write of that page per row on SQLite and a full-page image per page on PostgreSQL).
 */
export function timeOrderedUuid(now = Date.now()): string {
  if (now > lastMs) {
    lastMs = now;
    sequence = 0;
  } else if (++sequence > 0xfff) {
    lastMs++;
    sequence = 0;
  }
  const time = lastMs.toString(16).padStart(12, '0');
  const random = randomUUID();
  // randomUUID is version 4: its variant bits (the 20th character) are already RFC 9562's.
  return `${time.slice(0, 8)}-${time.slice(8)}-7${sequence.toString(16).padStart(3, '0')}-${random.slice(19)}`;
}

/** An unguessable URL-safe token with `bytes` bytes of entropy. */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/** Tokens are stored only as this hash. */
export function hashToken(token: string): string {
  // The one-shot form: a Hash object per call cost more than the hashing on hot paths.
  return hash('sha256', token, 'hex');
}
