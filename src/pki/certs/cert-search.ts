/**
 * Certificate search of a mount (GET <mount>/certs/search): the query, its rules and the
 * page cursor. Vault can only list serials; this is ours (docs/pki-cert-search.md).
 */
import { invalid } from '../../shared/errors.js';

export type CertSearchSort = 'not_after' | 'serial';

export interface CertSearchQuery {
  /** Storage-form hex prefix of the serial. */
  serialPrefix?: string;
  /** Lowercased substring of the common name or any SAN. */
  name?: string;
  /** Issuer id (already resolved from a name or `default`). */
  issuerId?: string;
  role?: string;
  notAfterFrom?: Date;
  notAfterTo?: Date;
  revoked?: boolean;
  sort: CertSearchSort;
  descending: boolean;
  limit: number;
  after?: CertSearchCursor;
}

/** Where a page ends: the sort value and the serial of its last row (keyset pagination). */
export interface CertSearchCursor {
  value: string;
  serial: string;
}

export interface CertSearchHit {
  serial: string;
  commonName: string;
  /** CN and SANs as stored (lowercased). */
  names: string[];
  issuerId: string | null;
  role: string | null;
  notAfter: Date;
  createdAt: Date;
  revokedAt: Date | null;
}

export interface CertSearchPage {
  hits: CertSearchHit[];
  /** Cursor of the next page, undefined on the last one. */
  next?: string;
}

export const SEARCH_DEFAULT_LIMIT = 50;
export const SEARCH_MAX_LIMIT = 500;

/**
 * Serial prefix as typed (any case, with `:` or `-` separators) to the stored hex form. The
 * storage form drops whole leading zero bytes only (`0a:1b` is stored `0a1b`), so only
 * leading `00` pairs are dropped here.
 */
export function serialPrefix(text: string): string {
  const hex = text.trim().toLowerCase().replace(/[:-]/g, '');
  if (!/^[0-9a-f]+$/.test(hex)) throw invalid(`invalid serial "${text}": expected hexadecimal digits`, 'serial');
  return hex.replace(/^(00)+(?=.)/, '');
}

/** A name substring: trimmed, lowercased, at most 255 characters. */
export function nameSubstring(text: string): string | undefined {
  const t = text.trim().toLowerCase();
  if (t.length > 255) throw invalid('name must be at most 255 characters', 'name');
  return t === '' ? undefined : t;
}

export function checkLimit(limit: number): number {
  if (limit === 0) return SEARCH_DEFAULT_LIMIT;
  if (!Number.isInteger(limit) || limit < 1 || limit > SEARCH_MAX_LIMIT)
    throw invalid(`limit must be between 1 and ${SEARCH_MAX_LIMIT}`, 'limit');
  return limit;
}

export function checkSort(sort: string, order: string): { sort: CertSearchSort; descending: boolean } {
  if (sort !== 'not_after' && sort !== 'serial')
    throw invalid(`sort must be "not_after" or "serial", not "${sort}"`, 'sort');
  if (order !== 'asc' && order !== 'desc') throw invalid(`order must be "asc" or "desc", not "${order}"`, 'order');
  return { sort, descending: order === 'desc' };
}

/** An instant given as RFC 3339 or unix seconds. */
export function parseInstant(text: string, field: string): Date | undefined {
  const t = text.trim();
  if (t === '') return undefined;
  const d = /^\d+$/.test(t) ? new Date(Number(t) * 1000) : new Date(t);
  if (Number.isNaN(d.getTime())) throw invalid(`${field} must be RFC 3339 or unix seconds, not "${text}"`, field);
  return d;
}

export function encodeCursor(c: CertSearchCursor): string {
  return Buffer.from(`${c.value}|${c.serial}`, 'utf8').toString('base64url');
}

export function decodeCursor(text: string): CertSearchCursor | undefined {
  if (text === '') return undefined;
  const raw = Buffer.from(text, 'base64url').toString('utf8');
  const bar = raw.lastIndexOf('|');
  const serial = raw.slice(bar + 1);
  if (bar < 0 || !/^[0-9a-f]+$/.test(serial)) throw invalid('after is not a cursor this search returned', 'after');
  return { value: raw.slice(0, bar), serial };
}

/** The sort value of a hit, as the cursor carries it. */
export function sortValue(hit: CertSearchHit, sort: CertSearchSort): string {
  return sort === 'serial' ? hit.serial : hit.notAfter.toISOString();
}

/**
 * How the trigram index is asked for a name substring: for `trigrams` (all of them), or, when `common` is set,
 * not at all (every usable trigram is common: the rows are read in order). With neither, the index gets the
 * whole substring.
 */
export interface NamePlan {
  trigrams?: string[];
  common?: boolean;
}

/** Above this share of rows the rarest trigram is no filter worth reading the index for. */
const COMMON_TRIGRAM = 0.05;
/** Trigrams asked of the index: the rarest ones; the whole substring is checked on each candidate row. */
const TRIGRAMS_ASKED = 3;

/**
 * Chooses the trigrams of a name substring the index is asked for, from their share of rows in a sample
 * (`share`), among those the index can answer (`usable`). Asking for every trigram of `svc42.example.com` reads
 * the posting lists of `exa` and `com`, which hold every row; the rarest three narrow as much at a fraction of
 * the cost. When even the rarest usable trigram is common, the index is not asked at all: the rows are scanned
 * in the requested order, and the first page fills quickly because the substring is common too.
 */
export function planName(
  name: string,
  share: (trigram: string) => number,
  usable: (trigram: string) => boolean = () => true,
): NamePlan {
  const seen = new Map<string, number>();
  for (let i = 0; i + 3 <= name.length; i++) {
    const t = name.slice(i, i + 3);
    if (!seen.has(t) && usable(t)) seen.set(t, share(t));
  }
  if (seen.size === 0) return {};
  const rare = [...seen].filter(([, s]) => s <= COMMON_TRIGRAM).sort((a, b) => a[1] - b[1]);
  if (rare.length === 0) return { common: true };
  return { trigrams: rare.slice(0, TRIGRAMS_ASKED).map(([t]) => t) };
}

/**
 * Whether PostgreSQL's pg_trgm can answer `LIKE '%t%'` for a trigram of a name from its index: three letters or
 * digits, or two with a separator of host names, addresses or URIs before or after them (a word boundary, which
 * pg_trgm indexes as padding).
 */
export function pgTrigramUsable(t: string): boolean {
  return /^[a-z0-9]{3}$/.test(t) || /^[a-z0-9]{2}[.\-@:/ *]$/.test(t) || /^[.\-@:/ *][a-z0-9]{2}$/.test(t);
}
