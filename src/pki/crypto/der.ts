/**
 * A small DER (X.690) encoder and a zero-copy TLV decoder.
 *
 * The encoder works bottom-up on Buffers: each constructor allocates exactly one
 * Buffer for its header and contents, so a certificate costs one allocation per
 * node. The decoder never copies: elements are offsets into the input Buffer and
 * `content()` / `raw()` return subarrays, so a parsed subject or public key can be
 * copied verbatim into a new certificate.
 *
 * Only low tag numbers (0..30) are supported, which covers X.509, PKCS#10, CRLs and OCSP.
 */
import { DomainError } from '../../shared/errors.js';

export const TAG = {
  BOOLEAN: 0x01,
  INTEGER: 0x02,
  BIT_STRING: 0x03,
  OCTET_STRING: 0x04,
  NULL: 0x05,
  OID: 0x06,
  ENUMERATED: 0x0a,
  UTF8_STRING: 0x0c,
  NUMERIC_STRING: 0x12,
  PRINTABLE_STRING: 0x13,
  T61_STRING: 0x14,
  IA5_STRING: 0x16,
  UTC_TIME: 0x17,
  GENERALIZED_TIME: 0x18,
  VISIBLE_STRING: 0x1a,
  UNIVERSAL_STRING: 0x1c,
  BMP_STRING: 0x1e,
  SEQUENCE: 0x30,
  SET: 0x31,
} as const;

/** Identifier byte of a context-specific tag `[n]`. */
export function contextTag(n: number, constructed: boolean): number {
  if (n < 0 || n > 30) throw new RangeError(`unsupported context tag ${n}`);
  return 0x80 | (constructed ? 0x20 : 0) | n;
}

// ---------------------------------------------------------------- encoder

function headerLength(len: number): number {
  if (len < 0x80) return 2;
  if (len < 0x100) return 3;
  if (len < 0x10000) return 4;
  if (len < 0x1000000) return 5;
  return 6;
}

function writeHeader(out: Buffer, tag: number, len: number): number {
  out[0] = tag;
  if (len < 0x80) {
    out[1] = len;
    return 2;
  }
  const n = headerLength(len) - 2;
  out[1] = 0x80 | n;
  for (let i = 0; i < n; i++) out[2 + i] = (len >>> (8 * (n - 1 - i))) & 0xff;
  return 2 + n;
}

/** Encodes one TLV whose contents are the concatenation of `parts`. */
export function tlv(tag: number, ...parts: Buffer[]): Buffer {
  let len = 0;
  for (const p of parts) len += p.length;
  const out = Buffer.allocUnsafe(headerLength(len) + len);
  let off = writeHeader(out, tag, len);
  for (const p of parts) {
    p.copy(out, off);
    off += p.length;
  }
  return out;
}

export const sequence = (...items: Buffer[]): Buffer => tlv(TAG.SEQUENCE, ...items);
/** SET with the items in the given order (callers that need SET OF ordering use `setOf`). */
export const set = (...items: Buffer[]): Buffer => tlv(TAG.SET, ...items);
/** SET OF with its elements sorted as DER requires (X.690 11.6). */
export const setOf = (...items: Buffer[]): Buffer => tlv(TAG.SET, ...[...items].sort(Buffer.compare));

/** `[n] EXPLICIT`: wraps complete encodings in a constructed context tag. */
export const explicit = (n: number, ...inner: Buffer[]): Buffer => tlv(contextTag(n, true), ...inner);

/** `[n] IMPLICIT` primitive with raw contents (e.g. a GeneralName dNSName). */
export const implicitPrimitive = (n: number, content: Buffer): Buffer => tlv(contextTag(n, false), content);

/** `[n] IMPLICIT` constructed with the given children (e.g. an otherName). */
export const implicitConstructed = (n: number, ...children: Buffer[]): Buffer => tlv(contextTag(n, true), ...children);

/** Re-tags an already encoded element as `[n] IMPLICIT`, keeping its constructed bit. */
export function retagImplicit(n: number, encoded: Buffer): Buffer {
  const out = Buffer.from(encoded);
  out[0] = contextTag(n, (encoded[0]! & 0x20) !== 0);
  return out;
}

export const NULL_DER: Buffer = Buffer.from([0x05, 0x00]);
const TRUE_DER = Buffer.from([0x01, 0x01, 0xff]);
const FALSE_DER = Buffer.from([0x01, 0x01, 0x00]);

export const nullValue = (): Buffer => NULL_DER;
export const boolean = (v: boolean): Buffer => (v ? TRUE_DER : FALSE_DER);

/** Minimal two's-complement bytes of a bigint. */
function bigintBytes(v: bigint): Buffer {
  if (v === 0n) return Buffer.from([0]);
  if (v > 0n) {
    let hex = v.toString(16);
    if (hex.length % 2) hex = '0' + hex;
    return unsignedContent(Buffer.from(hex, 'hex'));
  }
  // Negative: find the byte width where the value fits, then take 2^(8n) + v.
  let n = 1;
  while (-(1n << BigInt(8 * n - 1)) > v) n++;
  let hex = ((1n << BigInt(8 * n)) + v).toString(16).padStart(2 * n, '0');
  if (hex.length % 2) hex = '0' + hex;
  return Buffer.from(hex, 'hex');
}

/** Content octets of an unsigned big-endian magnitude: leading zeros stripped, 0x00 added when the top bit is set. */
function unsignedContent(mag: Buffer): Buffer {
  let i = 0;
  while (i < mag.length - 1 && mag[i] === 0) i++;
  if (mag.length === 0) return Buffer.from([0]);
  const trimmed = mag.subarray(i);
  if (trimmed[0]! & 0x80) return Buffer.concat([Buffer.from([0]), trimmed]);
  return trimmed;
}

/**
 * INTEGER. A number or bigint is encoded as a signed value; a Buffer is taken as an
 * unsigned big-endian magnitude (serial numbers, RSA moduli).
 */
export function integer(v: number | bigint | Buffer): Buffer {
  if (Buffer.isBuffer(v)) return tlv(TAG.INTEGER, unsignedContent(v));
  if (typeof v === 'number') {
    if (!Number.isSafeInteger(v)) throw new RangeError('integer must be a safe integer');
    if (v >= 0 && v < 0x80) return Buffer.from([TAG.INTEGER, 1, v]);
    return tlv(TAG.INTEGER, bigintBytes(BigInt(v)));
  }
  return tlv(TAG.INTEGER, bigintBytes(v));
}

export const enumerated = (v: number): Buffer => {
  const enc = integer(v);
  enc[0] = TAG.ENUMERATED;
  return enc;
};

/** BIT STRING from whole bytes plus the count of unused bits in the last byte. */
export function bitString(bytes: Buffer, unusedBits = 0): Buffer {
  if (unusedBits < 0 || unusedBits > 7 || (bytes.length === 0 && unusedBits !== 0))
    throw new RangeError('bad unused bit count');
  return tlv(TAG.BIT_STRING, Buffer.from([unusedBits]), bytes);
}

/**
 * A named-bit BIT STRING (KeyUsage, ReasonFlags) from bit positions, bit 0 being the
 * most significant bit of the first byte; trailing zero bits are dropped as DER requires.
 */
export function namedBits(bits: Iterable<number>): Buffer {
  let max = -1;
  const set = new Set<number>();
  for (const b of bits) {
    set.add(b);
    if (b > max) max = b;
  }
  if (max < 0) return Buffer.from([TAG.BIT_STRING, 1, 0]);
  const bytes = Buffer.alloc((max >> 3) + 1);
  for (const b of set) bytes[b >> 3]! |= 0x80 >> (b & 7);
  return bitString(bytes, 7 - (max & 7));
}

export const octetString = (bytes: Buffer): Buffer => tlv(TAG.OCTET_STRING, bytes);

const oidCache = new Map<string, Buffer>();

function base128(out: number[], value: bigint): void {
  const tmp: number[] = [Number(value & 0x7fn)];
  value >>= 7n;
  while (value > 0n) {
    tmp.push(Number(value & 0x7fn) | 0x80);
    value >>= 7n;
  }
  for (let i = tmp.length - 1; i >= 0; i--) out.push(tmp[i]!);
}

/** OBJECT IDENTIFIER from dotted text; encodings are cached because the same few OIDs repeat in every certificate. */
export function oid(dotted: string): Buffer {
  const hit = oidCache.get(dotted);
  if (hit) return hit;
  if (!/^[0-2](\.(0|[1-9][0-9]*))+$/.test(dotted)) throw new DomainError('invalid', `invalid OID "${dotted}"`);
  const arcs = dotted.split('.').map((a) => BigInt(a));
  const [a0, a1] = arcs as [bigint, bigint];
  if (a0 < 2n && a1 > 39n) throw new DomainError('invalid', `invalid OID "${dotted}"`);
  const body: number[] = [];
  base128(body, a0 * 40n + a1);
  for (let i = 2; i < arcs.length; i++) base128(body, arcs[i]!);
  const enc = tlv(TAG.OID, Buffer.from(body));
  if (oidCache.size < 4096) oidCache.set(dotted, enc);
  return enc;
}

/** Whether `oid` text is a syntactically valid dotted OID. */
export function isValidOid(dotted: string): boolean {
  try {
    oid(dotted);
    return true;
  } catch {
    return false;
  }
}

/** Whether every character is 7-bit ASCII. */
export function isAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return false;
  return true;
}

export const utf8String = (s: string): Buffer => tlv(TAG.UTF8_STRING, Buffer.from(s, 'utf8'));
export const ia5String = (s: string): Buffer => {
  if (!isAscii(s)) throw new DomainError('invalid', `value is not an IA5String: ${JSON.stringify(s)}`);
  return tlv(TAG.IA5_STRING, Buffer.from(s, 'latin1'));
};

const PRINTABLE = /^[A-Za-z0-9 '()+,\-./:=?]*$/;
export const isPrintable = (s: string): boolean => PRINTABLE.test(s);
export const printableString = (s: string): Buffer => {
  if (!isPrintable(s)) throw new DomainError('invalid', `value is not a PrintableString: ${JSON.stringify(s)}`);
  return tlv(TAG.PRINTABLE_STRING, Buffer.from(s, 'latin1'));
};

const pad2 = (n: number): string => (n < 10 ? '0' : '') + n;

function timeDigits(d: Date, fullYear: boolean): string {
  const ms = d.getTime();
  if (!Number.isFinite(ms)) throw new DomainError('invalid', 'invalid date');
  const y = d.getUTCFullYear();
  const year = fullYear ? String(y).padStart(4, '0') : pad2(y % 100);
  return (
    year +
    pad2(d.getUTCMonth() + 1) +
    pad2(d.getUTCDate()) +
    pad2(d.getUTCHours()) +
    pad2(d.getUTCMinutes()) +
    pad2(d.getUTCSeconds()) +
    'Z'
  );
}

/** UTCTime `YYMMDDHHMMSSZ` (1950..2049); fractions of a second are dropped. */
export function utcTime(d: Date): Buffer {
  const y = d.getUTCFullYear();
  if (y < 1950 || y > 2049) throw new RangeError(`UTCTime cannot hold year ${y}`);
  return tlv(TAG.UTC_TIME, Buffer.from(timeDigits(d, false), 'latin1'));
}

/** GeneralizedTime `YYYYMMDDHHMMSSZ` without fractions (RFC 5280 4.1.2.5.2). */
export function generalizedTime(d: Date): Buffer {
  const y = d.getUTCFullYear();
  if (y < 0 || y > 9999) throw new RangeError(`GeneralizedTime cannot hold year ${y}`);
  return tlv(TAG.GENERALIZED_TIME, Buffer.from(timeDigits(d, true), 'latin1'));
}

/** RFC 5280 4.1.2.5 Time: UTCTime through 2049, GeneralizedTime from 2050 (and before 1950). */
export function x509Time(d: Date): Buffer {
  const y = d.getUTCFullYear();
  return y >= 1950 && y <= 2049 ? utcTime(d) : generalizedTime(d);
}

// ---------------------------------------------------------------- decoder

/** Throws the decoder's error: every malformed input is the caller's `invalid` input. */
export function derError(message: string): DomainError {
  return new DomainError('invalid', `malformed DER: ${message}`);
}

/** One decoded TLV: offsets into `buf`; nothing is copied. */
export class DerElement {
  constructor(
    readonly buf: Buffer,
    /** First identifier byte. */
    readonly tag: number,
    /** Offset of the identifier byte. */
    readonly start: number,
    /** Offset of the first content byte. */
    readonly contentStart: number,
    /** Offset just past the element. */
    readonly end: number,
  ) {}

  get length(): number {
    return this.end - this.contentStart;
  }
  get constructed(): boolean {
    return (this.tag & 0x20) !== 0;
  }
  /** Whether this is the context-specific tag `[n]`. */
  isContext(n: number): boolean {
    return (this.tag & 0xdf) === (0x80 | n);
  }
  /** Contents without the header (zero-copy). */
  content(): Buffer {
    return this.buf.subarray(this.contentStart, this.end);
  }
  /** The complete encoding including the header (zero-copy). */
  raw(): Buffer {
    return this.buf.subarray(this.start, this.end);
  }
  /** A reader over the children of a constructed element. */
  children(): DerReader {
    if (!this.constructed) throw derError(`element with tag 0x${this.tag.toString(16)} is not constructed`);
    return new DerReader(this.buf, this.contentStart, this.end);
  }
}

/** Reads one element at `offset`, bounded by `limit`. */
export function readElement(buf: Buffer, offset = 0, limit = buf.length): DerElement {
  if (offset + 2 > limit) throw derError('truncated header');
  const tag = buf[offset]!;
  if ((tag & 0x1f) === 0x1f) throw derError('high tag numbers are not supported');
  let len = buf[offset + 1]!;
  let pos = offset + 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    if (n === 0) throw derError('indefinite length is not allowed');
    if (n > 4) throw derError('length too large');
    if (pos + n > limit) throw derError('truncated length');
    len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + buf[pos + i]!;
    pos += n;
  }
  if (pos + len > limit) throw derError('element runs past its container');
  return new DerElement(buf, tag, offset, pos, pos + len);
}

/** Parses a buffer that must hold exactly one element. */
export function parseDer(buf: Buffer): DerElement {
  const el = readElement(buf, 0, buf.length);
  if (el.end !== buf.length) throw derError('trailing data after element');
  return el;
}

/** Sequential reader over a run of sibling elements. */
export class DerReader {
  pos: number;
  constructor(
    readonly buf: Buffer,
    start = 0,
    readonly end = buf.length,
  ) {
    this.pos = start;
  }
  hasMore(): boolean {
    return this.pos < this.end;
  }
  peekTag(): number | undefined {
    return this.pos < this.end ? this.buf[this.pos] : undefined;
  }
  next(): DerElement {
    const el = readElement(this.buf, this.pos, this.end);
    this.pos = el.end;
    return el;
  }
  /** The next element, which must have identifier byte `tag`. */
  expect(tag: number, what = 'element'): DerElement {
    const t = this.peekTag();
    if (t !== tag)
      throw derError(
        `expected ${what} (tag 0x${tag.toString(16)}), found ` +
          `${t === undefined ? 'end of data' : '0x' + t.toString(16)}`,
      );
    return this.next();
  }
  /** The next element if it has identifier byte `tag`. */
  optional(tag: number): DerElement | undefined {
    return this.peekTag() === tag ? this.next() : undefined;
  }
  /** All remaining elements. */
  rest(): DerElement[] {
    const out: DerElement[] = [];
    while (this.hasMore()) out.push(this.next());
    return out;
  }
  /** Asserts that every child was consumed. */
  done(what = 'structure'): void {
    if (this.pos !== this.end) throw derError(`unexpected data at end of ${what}`);
  }
}

export function decodeOid(el: DerElement): string {
  if (el.tag !== TAG.OID) throw derError('expected OBJECT IDENTIFIER');
  return decodeOidContent(el.content());
}

/** Dotted text of OBJECT IDENTIFIER content octets (also used for IMPLICIT-tagged OIDs). */
export function decodeOidContent(c: Buffer): string {
  if (c.length === 0) throw derError('empty OBJECT IDENTIFIER');
  // The same few OIDs recur in every request (algorithms, curves, name attributes, extensions).
  const key = c.length <= 32 ? c.toString('latin1') : undefined;
  const known = key === undefined ? undefined : oidTexts.get(key);
  if (known !== undefined) return known;
  const text = oidText(c);
  if (key !== undefined) {
    if (oidTexts.size >= OID_CACHE_MAX) oidTexts.clear();
    oidTexts.set(key, text);
  }
  return text;
}

const OID_CACHE_MAX = 4096;
const oidTexts = new Map<string, string>();

function oidText(c: Buffer): string {
  const arcs: bigint[] = [];
  let v = 0n;
  for (let i = 0; i < c.length; i++) {
    const b = c[i]!;
    v = (v << 7n) | BigInt(b & 0x7f);
    if ((b & 0x80) === 0) {
      arcs.push(v);
      v = 0n;
    } else if (i === c.length - 1) throw derError('truncated OBJECT IDENTIFIER');
  }
  const first = arcs[0]!;
  const head = first < 80n ? [first / 40n, first % 40n] : [2n, first - 80n];
  return [...head, ...arcs.slice(1)].join('.');
}

/** INTEGER as a signed bigint. */
export function decodeBigInt(el: DerElement): bigint {
  if (el.tag !== TAG.INTEGER && el.tag !== TAG.ENUMERATED) throw derError('expected INTEGER');
  const c = el.content();
  if (c.length === 0) throw derError('empty INTEGER');
  let v = BigInt('0x' + c.toString('hex'));
  if (c[0]! & 0x80) v -= 1n << BigInt(8 * c.length);
  return v;
}

export function decodeSmallInt(el: DerElement): number {
  // Up to six octets fit a double exactly: no bigint needed (versions, counts, reason codes).
  if ((el.tag === TAG.INTEGER || el.tag === TAG.ENUMERATED) && el.length > 0 && el.length <= 6) {
    let n = el.buf[el.contentStart]! & 0x80 ? -1 : 0;
    for (let i = el.contentStart; i < el.end; i++) n = n * 256 + el.buf[i]!;
    return n;
  }
  const v = decodeBigInt(el);
  if (v > BigInt(Number.MAX_SAFE_INTEGER) || v < BigInt(Number.MIN_SAFE_INTEGER)) throw derError('INTEGER too large');
  return Number(v);
}

/** Magnitude bytes of a non-negative INTEGER without the sign-padding zero (zero-copy). */
export function decodeUnsignedBytes(el: DerElement): Buffer {
  if (el.tag !== TAG.INTEGER) throw derError('expected INTEGER');
  const c = el.content();
  if (c.length === 0) throw derError('empty INTEGER');
  if (c[0]! & 0x80) throw derError('negative INTEGER where a positive one is required');
  return c.length > 1 && c[0] === 0 ? c.subarray(1) : c;
}

export function decodeBoolean(el: DerElement): boolean {
  if (el.tag !== TAG.BOOLEAN || el.length !== 1) throw derError('expected BOOLEAN');
  return el.buf[el.contentStart] !== 0;
}

export function decodeBitString(el: DerElement): { unusedBits: number; bytes: Buffer } {
  if (el.tag !== TAG.BIT_STRING || el.length < 1) throw derError('expected BIT STRING');
  const unusedBits = el.buf[el.contentStart]!;
  if (unusedBits > 7) throw derError('bad BIT STRING padding');
  return { unusedBits, bytes: el.buf.subarray(el.contentStart + 1, el.end) };
}

/** Positions of the set bits of a named-bit BIT STRING. */
export function decodeNamedBits(el: DerElement): number[] {
  const { unusedBits, bytes } = decodeBitString(el);
  const out: number[] = [];
  const total = bytes.length * 8 - unusedBits;
  for (let i = 0; i < total; i++) if (bytes[i >> 3]! & (0x80 >> (i & 7))) out.push(i);
  return out;
}

/** Text of any of the ASN.1 string types used in names and extensions. */
export function decodeString(el: DerElement): string {
  const c = el.content();
  switch (el.tag) {
    case TAG.UTF8_STRING:
      return c.toString('utf8');
    case TAG.PRINTABLE_STRING:
    case TAG.IA5_STRING:
    case TAG.NUMERIC_STRING:
    case TAG.VISIBLE_STRING:
    case TAG.T61_STRING:
      return c.toString('latin1');
    case TAG.BMP_STRING:
      return Buffer.from(c).swap16().toString('utf16le');
    case TAG.UNIVERSAL_STRING: {
      let s = '';
      for (let i = 0; i + 3 < c.length; i += 4) s += String.fromCodePoint(c.readUInt32BE(i));
      return s;
    }
    default:
      throw derError(`tag 0x${el.tag.toString(16)} is not a string`);
  }
}

/** UTCTime or GeneralizedTime (seconds precision, `Z` form as RFC 5280 requires; fractions tolerated). */
export function decodeTime(el: DerElement): Date {
  const s = el.content().toString('latin1');
  let m: RegExpExecArray | null;
  let year: number;
  if (el.tag === TAG.UTC_TIME) {
    m = /^(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)?Z$/.exec(s);
    if (!m) throw derError(`bad UTCTime "${s}"`);
    const yy = Number(m[1]);
    year = yy >= 50 ? 1900 + yy : 2000 + yy;
  } else if (el.tag === TAG.GENERALIZED_TIME) {
    m = /^(\d{4})(\d\d)(\d\d)(\d\d)(\d\d)(\d\d)(?:\.\d+)?Z$/.exec(s);
    if (!m) throw derError(`bad GeneralizedTime "${s}"`);
    year = Number(m[1]);
  } else throw derError('expected a time');
  const d = new Date(0);
  d.setUTCFullYear(year, Number(m[2]) - 1, Number(m[3]));
  d.setUTCHours(Number(m[4]), Number(m[5]), Number(m[6] ?? 0), 0);
  return d;
}
