/**
 * Certificate serial numbers (reference 16.11): unpredictable, positive, non-zero, 20 bytes in
 * DER (new ones always exactly 20; imported or parsed ones may be shorter); stored as
 * lowercase hex of the minimal big-endian bytes, shown with `:` separators, accepted with
 * `:` or `-`.
 */
import { DomainError } from '../../shared/errors.js';
import { pooledRandomBytes } from '../../shared/ids.js';

/**
 * 20 bytes: the issue time in milliseconds as 6 big-endian bytes, then 14 random bytes
 * (decision 0060). The time leads so that a mount's new serials land at the end of the
 * certificate table's key instead of on a random page of it; the 112 random bits keep a
 * serial unpredictable and unique. The first byte is 0x01 from 2004 to 2039 and stays
 * below 0x80 until the year 6429, so the DER INTEGER is positive and exactly 20 octets
 * (always 40 hex digits, in [2^152, 2^159), a subset of Vault's range); a clock outside
 * that span falls back to 20 random bytes with the top bit cleared.
 */
export function randomSerial(now: number = Date.now()): Buffer {
  const b = pooledRandomBytes(20);
  const ms = Math.floor(now);
  if (ms >= 2 ** 40 && ms < 2 ** 47) {
    b.writeUIntBE(ms, 0, 6);
    return b;
  }
  b[0]! &= 0x7f;
  while (b[0] === 0) b[0] = pooledRandomBytes(1)[0]! & 0x7f;
  return b;
}

/** Drops leading zero bytes (keeping at least one byte). */
export function minimalSerial(b: Buffer): Buffer {
  let i = 0;
  while (i < b.length - 1 && b[i] === 0) i++;
  return b.subarray(i);
}

/** Lowercase hex of the minimal bytes, e.g. `39dd2e90`: the storage form. */
export function serialToHex(serial: Buffer): string {
  return minimalSerial(serial).toString('hex');
}

/** Colon-separated lowercase hex as the Vault API shows serials, e.g. `39:dd:2e:90`. */
export function formatSerial(serial: Buffer | string): string {
  const hex = typeof serial === 'string' ? normalizeSerial(serial) : serialToHex(serial);
  // A loop rather than a regular expression: this runs for every issued certificate.
  let out = hex.slice(0, 2);
  for (let i = 2; i < hex.length; i += 2) out += `:${hex.slice(i, i + 2)}`;
  return out;
}

/**
 * Parses a serial written as hex with `:` or `-` separators (or none), any case, into the
 * storage form; throws `invalid` for anything else.
 */
export function normalizeSerial(text: string): string {
  const t = text.trim().toLowerCase();
  let hex: string;
  if (/^[0-9a-f]{1,2}([:-][0-9a-f]{1,2})*$/.test(t))
    hex = t
      .split(/[:-]/)
      .map((g) => g.padStart(2, '0'))
      .join('');
  else if (/^[0-9a-f]+$/.test(t)) hex = t.length % 2 ? '0' + t : t;
  else throw new DomainError('invalid', `invalid serial number "${text}"`);
  return serialToHex(Buffer.from(hex, 'hex'));
}

/** Storage-form hex back to bytes. */
export function serialFromHex(hex: string): Buffer {
  return Buffer.from(normalizeSerial(hex), 'hex');
}
