import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.js';
import { invalid } from '../shared/errors.js';
import { stringifyWithRaw } from '../shared/raw-json.js';
import { JSONAPI_CONTENT_TYPE } from './jsonapi.js';
import type { Page } from './pagination.js';
import { paginationLinks, paginationMeta, parsePageQuery } from './pagination.js';
import type { PageRequest } from './pagination.js';

/** Small shared pieces of the TFE route files: documents out, query parameters in. */

/** A JSON:API document (or its text) as the answer; stored JSON it embeds (RawJson) goes out as it is. */
export function sendDocument(reply: FastifyReply, status: number, doc: unknown): FastifyReply {
  return reply
    .status(status)
    .type(JSONAPI_CONTENT_TYPE)
    .send(typeof doc === 'string' ? doc : stringifyWithRaw(doc));
}

export function sendNoContent(reply: FastifyReply): FastifyReply {
  return reply.status(204).send();
}

/** The absolute URL of this request, under the configured public URL when there is one. */
export function requestUrl(request: FastifyRequest, config: Config): string {
  const base = config.publicUrl ? config.publicUrl.replace(/\/+$/, '') : `${request.protocol}://${request.host}`;
  return `${base}${request.url}`;
}

export function query(request: FastifyRequest): Record<string, unknown> {
  return (request.query ?? {}) as Record<string, unknown>;
}

export function pageRequest(request: FastifyRequest): PageRequest {
  return parsePageQuery(query(request));
}

/** A list document: `data`, `links` and `meta.pagination` (reference 1.4). */
export function listDocument<T>(
  request: FastifyRequest,
  config: Config,
  page: Page<T>,
  toResource: (item: T) => unknown,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    data: page.items.map(toResource),
    ...extra,
    links: paginationLinks(requestUrl(request, config), page),
    meta: { pagination: paginationMeta(page) },
  };
}

/** A list answered whole: one page holding everything (team and team-access lists). */
export function onePage(data: unknown[]): Record<string, unknown> {
  const n = data.length;
  const pagination = {
    'current-page': 1,
    'page-size': n,
    'prev-page': null,
    'next-page': null,
    'total-pages': 1,
    'total-count': n,
  };
  return { data, meta: { pagination } };
}

/** The comma-separated `include` values; an empty `include=` means none (go-tfe v0.11.1 sends it). */
export function includes(request: FastifyRequest, allowed: readonly string[]): Set<string> {
  const raw = query(request).include;
  if (raw === undefined || raw === '') return new Set();
  const values = (Array.isArray(raw) ? raw.join(',') : String(raw))
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const v of values) {
    // 400 with "include parameter" in the text is what go-tfe maps to ErrInvalidIncludeValue.
    if (!allowed.includes(v)) throw Object.assign(new Error(`invalid include parameter: ${v}`), { statusCode: 400 });
  }
  return new Set(values);
}

/** An optional ISO-8601 instant attribute (`expired-at`). */
export function parseInstant(value: string | null | undefined, pointer: string): Date | null | undefined {
  if (value === undefined || value === null) return value;
  const d = new Date(value);
  if (!/^\d{4}-\d{2}-\d{2}T/.test(value) || Number.isNaN(d.getTime()))
    throw invalid('must be an ISO-8601 timestamp', pointer);
  return d;
}
