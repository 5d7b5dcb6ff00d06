/**
 * Certificate serial numbers (reference 16.11): random, positive, non-zero, 20 bytes in
 * DER (new ones always exactly 20; imported or parsed ones may be shorter); stored as
 * lowercase hex of the minimal big-endian bytes, shown with `:` separators, accepted with
 * `:` or `-`.
 */
import { DomainError } from '../../shared/errors.js';
import { pooledRandomBytes } from '../../shared/ids.js';

/**
 * Exactly 20 random bytes: the top bit is cleared, so the DER INTEGER stays positive and
 * within 20 octets, and a zero first byte is drawn again, so the serial never shrinks
 * (always 40 hex digits; it lies in [2^152, 2^159), a subset of Vault's range).
 */
export function randomSerial(): Buffer {
  for (;;) {
    const b = pooledRandomBytes(20);
    b[0]! &= 0x7f;
    if (b[0] !== 0) return b;
  }
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
