/**
 * X.509 v2 certificate revocation lists (RFC 5280 section 5): a linear-time builder and a
 * small parser for the engine's own CRLs.
 *
 * The revoked-certificate list dominates the size of a large CRL, so its entries are
 * written straight into one pre-sized Buffer (serial hex decoded in place, times written
 * digit by digit) instead of one small Buffer per DER node: 100,000 entries cost a few
 * milliseconds plus hashing the result for the signature. The parser is in crl-parser.ts.
 */
import { DomainError } from '../../shared/errors.js';
import { TAG, bitString, explicit, implicitConstructed, integer, sequence, tlv, x509Time } from './der.js';
import type { IssuerContext } from './cert-builder.js';
import { EXT, crlDistributionPointsExt, encodeExtension } from './extensions.js';
import type { RawExtension } from './extensions.js';
import { encodeGeneralName } from './general-names.js';
import { pemEncode } from './pem.js';
import { normalizeSerial } from './serial.js';

export const CRL_EXT = {
  crlNumber: '2.5.29.20',
  reasonCode: '2.5.29.21',
  deltaCrlIndicator: '2.5.29.27',
  issuingDistributionPoint: '2.5.29.28',
} as const;

/** CRLReason (RFC 5280 5.3.1); 7 is unassigned. */
export const CRL_REASON = {
  unspecified: 0,
  keyCompromise: 1,
  cACompromise: 2,
  affiliationChanged: 3,
  superseded: 4,
  cessationOfOperation: 5,
  certificateHold: 6,
  removeFromCRL: 8,
  privilegeWithdrawn: 9,
  aACompromise: 10,
} as const;

export function isValidReason(code: number): boolean {
  return Number.isInteger(code) && code >= 0 && code <= 10 && code !== 7;
}

export interface RevokedEntry {
  /** Serial as lowercase hex (storage form); `:`/`-` separated forms are accepted too, more slowly. */
  serial: string;
  /** Date, milliseconds since the epoch, or an ISO 8601 string (as stored); numbers save a Date per entry. */
  revocationDate: Date | number | string;
  /** CRLReason code. Absent or 0 writes no reason extension, as RFC 5280 5.3.1 recommends for unspecified. */
  reason?: number;
  /** Further entry extensions (e.g. from `sign-revocation-list`), written after the reason. */
  extensions?: readonly RawExtension[];
}

export interface IssuingDistributionPoint {
  urls?: readonly string[];
  onlyContainsUserCerts?: boolean;
  onlyContainsCACerts?: boolean;
}

export interface CrlOptions {
  thisUpdate: Date;
  nextUpdate: Date;
  /** CRL Number (non-negative, at most 20 octets). */
  crlNumber: number | bigint;
  /** Makes this a delta CRL: the number of the complete CRL it updates (Delta CRL Indicator, critical). */
  deltaBaseCrlNumber?: number | bigint;
  entries: readonly RevokedEntry[];
  issuingDistributionPoint?: IssuingDistributionPoint;
  /**
   * Freshest CRL (delta CRL locations) for a complete CRL. Omitted: the issuer context's
   * pre-encoded delta CRL URLs, if any; `[]`: none. Never written on a delta CRL.
   */
  freshestCrlUrls?: readonly string[];
  /** Further CRL extensions, appended (ones whose OID is already written are skipped). */
  extraExtensions?: readonly RawExtension[];
  signatureBits?: number;
  usePss?: boolean;
}

export interface BuiltCrl {
  der: Buffer;
  crlNumber: bigint;
  deltaBaseCrlNumber: bigint | undefined;
  thisUpdate: Date;
  nextUpdate: Date;
  entryCount: number;
  signatureAlgorithm: string;
}

const V2 = Buffer.from([0x02, 0x01, 0x01]);
/** `SEQUENCE { SEQUENCE { OID reasonCode, OCTET STRING { ENUMERATED r } } }` with the code in the last byte. */
const REASON_EXTS = Buffer.from([0x30, 0x0c, 0x30, 0x0a, 0x06, 0x03, 0x55, 0x1d, 0x15, 0x04, 0x03, 0x0a, 0x01, 0x00]);

function crlInteger(v: number | bigint, what: string): { der: Buffer; value: bigint } {
  const value = BigInt(v);
  if (value < 0n) throw new DomainError('invalid', `${what} must not be negative`);
  const der = integer(value);
  if (der.length - 2 > 20) throw new DomainError('invalid', `${what} is longer than 20 octets`);
  return { der, value };
}

const HEX = new Int8Array(128).fill(-1);
for (let i = 0; i < 10; i++) HEX[48 + i] = i;
for (let i = 0; i < 6; i++) HEX[97 + i] = HEX[65 + i] = 10 + i;

/**
 * Index of the first significant digit of a plain hex serial (keeping one digit for
 * zero), or -1 when the text is not plain hex (the caller then normalizes it the slow way).
 */
function hexStart(h: string): number {
  const n = h.length;
  if (n === 0) return -1;
  for (let i = 0; i < n; i++) {
    const c = h.charCodeAt(i);
    if (c > 127 || HEX[c]! < 0) return -1;
  }
  let start = 0;
  while (start < n - 1 && h.charCodeAt(start) === 48) start++;
  return start;
}

function writeDigits2(out: Buffer, off: number, v: number): void {
  out[off] = 48 + ((v / 10) | 0);
  out[off + 1] = 48 + (v % 10);
}

/**
 * Writes an RFC 5280 Time (UTCTime through 2049) for `ms` since the epoch at `off` and
 * returns the bytes written. The civil date is computed arithmetically (days-to-civil)
 * so that no Date object is created per entry.
 */
function writeTime(out: Buffer, off: number, ms: number): number {
  if (!Number.isFinite(ms)) throw new DomainError('invalid', 'invalid revocation date');
  const secs = Math.floor(ms / 1000);
  const days = Math.floor(secs / 86400);
  const sod = secs - days * 86400;
  // Howard Hinnant's civil_from_days.
  const z = days + 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  const y = yoe + era * 400 + (month <= 2 ? 1 : 0);
  let p = off + 2;
  if (y >= 1950 && y <= 2049) {
    out[off] = TAG.UTC_TIME;
    out[off + 1] = 13;
  } else {
    if (y < 0 || y > 9999) throw new DomainError('invalid', 'revocation date out of range');
    out[off] = TAG.GENERALIZED_TIME;
    out[off + 1] = 15;
    writeDigits2(out, p, (y / 100) | 0);
    p += 2;
  }
  writeDigits2(out, p, y % 100);
  writeDigits2(out, p + 2, month);
  writeDigits2(out, p + 4, day);
  writeDigits2(out, p + 6, (sod / 3600) | 0);
  writeDigits2(out, p + 8, ((sod % 3600) / 60) | 0);
  writeDigits2(out, p + 10, sod % 60);
  out[p + 12] = 0x5a; // 'Z'
  return p + 13 - off;
}

/** Positions of the digits in `YYYY-MM-DDTHH:MM:SS`, and of those a UTCTime keeps (YY onwards). */
const ISO_DIGITS = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18];
const ISO_UTC_TIME_DIGITS = ISO_DIGITS.slice(2);

/**
 * Whether `s` is `YYYY-MM-DDTHH:MM:SS(.fff)Z` (what toISOString() stores) with a year of
 * 1950-2049, the range written as UTCTime. Fractions are dropped, as writeTime() does.
 */
function isIsoUtcTimeRange(s: string): boolean {
  const n = s.length;
  if ((n !== 24 && n !== 20) || s.charCodeAt(4) !== 45 || s.charCodeAt(10) !== 84 || s.charCodeAt(n - 1) !== 90)
    return false;
  for (const i of ISO_DIGITS) {
    const c = s.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  const century = s.charCodeAt(0) * 10 + s.charCodeAt(1) - 528;
  const yy = (s.charCodeAt(2) - 48) * 10 + s.charCodeAt(3) - 48;
  return (century === 19 && yy >= 50) || (century === 20 && yy < 50);
}

/** UTCTime `YYMMDDHHMMSSZ` from a string accepted by isIsoUtcTimeRange(). */
function writeIsoUtcTime(out: Buffer, off: number, s: string): number {
  out[off] = TAG.UTC_TIME;
  out[off + 1] = 13;
  let p = off + 2;
  for (const i of ISO_UTC_TIME_DIGITS) out[p++] = s.charCodeAt(i);
  out[p] = 0x5a;
  return 15;
}

/** 1950-01-01 and 2050-01-01: the range RFC 5280 writes as UTCTime. */
const UTC_TIME_FROM = Date.UTC(1950, 0, 1);
const UTC_TIME_UNTIL = Date.UTC(2050, 0, 1);

function writeLength(out: Buffer, off: number, len: number): number {
  if (len < 0x80) {
    out[off] = len;
    return 1;
  }
  if (len < 0x100) {
    out[off] = 0x81;
    out[off + 1] = len;
    return 2;
  }
  out[off] = 0x82;
  out.writeUInt16BE(len, off + 1);
  return 3;
}

/** The DER of `revokedCertificates` contents: every entry, in the given order. */
export function encodeRevokedEntries(entries: readonly RevokedEntry[]): Buffer {
  // Upper bound: serial (<= 2 + 1 + bytes), time (<= 17), reason (14), header (<= 4).
  let capacity = 0;
  for (const e of entries)
    capacity +=
      40 + (e.serial.length >> 1) + (e.extensions ? e.extensions.reduce((s, x) => s + x.value.length + 40, 0) : 0);
  let out = Buffer.allocUnsafe(capacity);
  let off = 0;
  for (const e of entries) {
    let hex = e.serial;
    let start = hexStart(hex);
    if (start < 0) {
      hex = normalizeSerial(hex);
      start = hexStart(hex);
    }
    const odd = ((hex.length - start) & 1) === 1;
    // An odd digit count starts with a lone digit (< 0x80), which never needs the sign byte.
    const signPad = !odd && HEX[hex.charCodeAt(start)]! >= 8;
    const intContent = ((hex.length - start + 1) >> 1) + (signPad ? 1 : 0);
    if (intContent > 64) throw new DomainError('invalid', `serial number ${e.serial} is too long`);
    const d = e.revocationDate;
    // Stored ISO times of 1950-2049 are copied digit by digit, without a Date.parse per entry.
    const iso = typeof d === 'string' && isIsoUtcTimeRange(d);
    const ms = iso ? 0 : typeof d === 'number' ? d : typeof d === 'string' ? Date.parse(d) : d.getTime();
    const timeLen = iso || (ms >= UTC_TIME_FROM && ms < UTC_TIME_UNTIL) ? 15 : 17;
    const reason = e.reason ?? 0;
    if (!isValidReason(reason)) throw new DomainError('invalid', `invalid CRL reason code ${e.reason}`);
    let extras: Buffer | undefined;
    if (e.extensions?.length)
      extras = Buffer.concat(e.extensions.filter((x) => x.oid !== CRL_EXT.reasonCode).map(encodeExtension));
    let extLen = 0;
    if (reason !== 0 || extras) {
      const inner = (reason !== 0 ? 12 : 0) + (extras ? extras.length : 0);
      extLen = inner + 1 + (inner < 0x80 ? 1 : inner < 0x100 ? 2 : 3);
    }
    const contentLen = 2 + intContent + timeLen + extLen;
    if (contentLen > 0xffff) throw new DomainError('invalid', `revoked entry ${e.serial} is too large`);
    if (off + contentLen + 4 > out.length) {
      // Only unusually long extension OIDs outgrow the estimate.
      const grown = Buffer.allocUnsafe(Math.max(out.length * 2, off + contentLen + 4));
      out.copy(grown, 0, 0, off);
      out = grown;
    }
    out[off++] = TAG.SEQUENCE;
    off += writeLength(out, off, contentLen);
    out[off++] = TAG.INTEGER;
    out[off++] = intContent;
    if (signPad) out[off++] = 0;
    let i = start;
    // Odd digit count: the first byte is the single leading digit.
    if (odd) out[off++] = HEX[hex.charCodeAt(i++)]!;
    for (; i < hex.length; i += 2) out[off++] = (HEX[hex.charCodeAt(i)]! << 4) | HEX[hex.charCodeAt(i + 1)]!;
    off += iso ? writeIsoUtcTime(out, off, d) : writeTime(out, off, ms);
    if (extLen) {
      if (reason !== 0 && !extras) {
        REASON_EXTS.copy(out, off);
        out[off + 13] = reason;
        off += 14;
      } else {
        const inner = (reason !== 0 ? 12 : 0) + extras!.length;
        out[off++] = TAG.SEQUENCE;
        off += writeLength(out, off, inner);
        if (reason !== 0) {
          REASON_EXTS.copy(out, off, 2);
          out[off + 11] = reason;
          off += 12;
        }
        off += extras!.copy(out, off);
      }
    }
  }
  return out.subarray(0, off);
}

/** `SEQUENCE { [0] fullName, [1] onlyContainsUserCerts, [2] onlyContainsCACerts }` (implicit tags). */
function idpValue(idp: IssuingDistributionPoint): Buffer {
  const parts: Buffer[] = [];
  if (idp.urls?.length)
    parts.push(
      explicit(0, implicitConstructed(0, ...idp.urls.map((u) => encodeGeneralName({ type: 'uri', value: u })))),
    );
  if (idp.onlyContainsUserCerts) parts.push(Buffer.from([0x81, 0x01, 0xff]));
  if (idp.onlyContainsCACerts) parts.push(Buffer.from([0x82, 0x01, 0xff]));
  return sequence(...parts);
}

/** Builds the TBSCertList, signs it with the issuer key and returns the CRL DER. */
export function buildCrl(issuer: IssuerContext, o: CrlOptions): BuiltCrl {
  const alg = issuer.signatureAlgorithm(o.signatureBits, o.usePss);
  const thisUpdate = new Date(Math.floor(o.thisUpdate.getTime() / 1000) * 1000);
  const nextUpdate = new Date(Math.floor(o.nextUpdate.getTime() / 1000) * 1000);
  if (!(nextUpdate.getTime() >= thisUpdate.getTime()))
    throw new DomainError('invalid', 'nextUpdate must not precede thisUpdate');
  const number = crlInteger(o.crlNumber, 'CRL number');
  const base =
    o.deltaBaseCrlNumber === undefined ? undefined : crlInteger(o.deltaBaseCrlNumber, 'delta CRL base number');

  const exts: Buffer[] = [
    issuer.fixedExtensions.aki,
    encodeExtension({ oid: CRL_EXT.crlNumber, critical: false, value: number.der }),
  ];
  const written = new Set<string>([EXT.authorityKeyIdentifier, CRL_EXT.crlNumber]);
  if (base) {
    exts.push(encodeExtension({ oid: CRL_EXT.deltaCrlIndicator, critical: true, value: base.der }));
    written.add(CRL_EXT.deltaCrlIndicator);
  }
  if (o.issuingDistributionPoint) {
    exts.push(
      encodeExtension({
        oid: CRL_EXT.issuingDistributionPoint,
        critical: true,
        value: idpValue(o.issuingDistributionPoint),
      }),
    );
    written.add(CRL_EXT.issuingDistributionPoint);
  }
  if (!base) {
    const freshest = o.freshestCrlUrls ? crlDistributionPointsExt(o.freshestCrlUrls, EXT.freshestCrl) : undefined;
    const der = freshest ? encodeExtension(freshest) : o.freshestCrlUrls ? undefined : issuer.fixedExtensions.freshest;
    if (der) {
      exts.push(der);
      written.add(EXT.freshestCrl);
    }
  }
  for (const e of o.extraExtensions ?? []) {
    if (written.has(e.oid)) continue;
    written.add(e.oid);
    exts.push(encodeExtension(e));
  }

  const parts = [V2, alg.identifier, issuer.nameDer, x509Time(thisUpdate), x509Time(nextUpdate)];
  // RFC 5280 5.1.2.6: an empty list is absent, not an empty SEQUENCE.
  if (o.entries.length) parts.push(tlv(TAG.SEQUENCE, encodeRevokedEntries(o.entries)));
  parts.push(explicit(0, sequence(...exts)));
  const tbs = sequence(...parts);
  const der = sequence(tbs, alg.identifier, bitString(alg.sign(tbs, issuer.privateKey)));
  return {
    der,
    crlNumber: number.value,
    deltaBaseCrlNumber: base?.value,
    thisUpdate,
    nextUpdate,
    entryCount: o.entries.length,
    signatureAlgorithm: alg.name,
  };
}

/** PEM of a CRL (`X509 CRL` block, trailing newline). */
export const crlToPem = (der: Buffer): string => pemEncode('X509 CRL', der);
