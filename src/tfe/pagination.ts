import { invalid } from '../shared/errors.js';

/**
 * JSON:API pagination as HCP Terraform does it (reference 1.4): `page[number]` from 1,
 * `page[size]` default 20 and at most 100; an out-of-range page answers 200 with empty
 * data and echoes the requested page number.
 */
export interface PageRequest {
  number: number;
  size: number;
}

export interface Page<T> {
  items: T[];
  number: number;
  size: number;
  totalCount: number;
}

export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;

/** Largest page number accepted; keeps OFFSET within what both databases take. */
export const MAX_PAGE_NUMBER = 2_147_483_647;

function positiveInt(raw: unknown, name: string): number | undefined {
  if (raw === undefined || raw === '') return undefined;
  const s = String(raw);
  if (!/^\d{1,10}$/.test(s) || Number(s) < 1 || Number(s) > MAX_PAGE_NUMBER) {
    throw invalid(`${name} must be an integer from 1 to ${MAX_PAGE_NUMBER}`, `/query/${name}`);
  }
  return Number(s);
}

/** Reads `page[number]`/`page[size]` from a parsed query (bracketed keys as Fastify gives them). */
export function parsePageQuery(query: Record<string, unknown>): PageRequest {
  const number = positiveInt(query['page[number]'], 'page[number]') ?? 1;
  const size = Math.min(positiveInt(query['page[size]'], 'page[size]') ?? DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE);
  return { number, size };
}

export function pageOffset(p: PageRequest): number {
  return (p.number - 1) * p.size;
}

export interface PaginationMeta {
  'current-page': number;
  'page-size': number;
  'prev-page': number | null;
  'next-page': number | null;
  'total-pages': number;
  'total-count': number;
}

export function paginationMeta(page: Page<unknown>): PaginationMeta {
  const totalPages = Math.max(1, Math.ceil(page.totalCount / page.size));
  // Terraform loops `while current-page < total-pages: page = next-page`; keep them consistent.
  const next = page.number < totalPages ? page.number + 1 : null;
  const prev = page.number > 1 ? Math.min(page.number - 1, totalPages) : null;
  return {
    'current-page': page.number,
    'page-size': page.size,
    'prev-page': prev,
    'next-page': next,
    'total-pages': totalPages,
    'total-count': page.totalCount,
  };
}

/**
 * `links` for a list response. `selfUrl` is the absolute request URL; its other query
 * parameters are kept and the page parameters replaced.
 */
export function paginationLinks(
  selfUrl: string,
  page: Page<unknown>,
): Record<'self' | 'first' | 'prev' | 'next' | 'last', string | null> {
  const meta = paginationMeta(page);
  const at = (n: number): string => {
    const u = new URL(selfUrl);
    u.searchParams.set('page[number]', String(n));
    u.searchParams.set('page[size]', String(page.size));
    return u.toString();
  };
  return {
    self: at(page.number),
    first: at(1),
    prev: meta['prev-page'] === null ? null : at(meta['prev-page']),
    next: meta['next-page'] === null ? null : at(meta['next-page']),
    last: at(meta['total-pages']),
  };
}
