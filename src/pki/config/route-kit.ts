import type { PkiRequestContext, PkiResult } from '../pki-route.js';
import type { FieldSchema, FieldSet, ParsedFields } from '../vault-fields.js';

/** Small helpers shared by the key, issuer and config routes. */

/** JSON answer with the warnings collected while parsing and serving. */
export function jsonResult(data: unknown, ...warningLists: (readonly string[] | undefined)[]): PkiResult {
  const warnings = warningLists.flatMap((w) => w ?? []);
  return warnings.length > 0 ? { kind: 'json', data, warnings } : { kind: 'json', data };
}

/** Vault's answer to a read or list that found nothing: 404 with an empty error list. */
export const notFoundResult = (): PkiResult => ({
  kind: 'raw',
  status: 404,
  contentType: 'application/json',
  body: '{"errors":[]}',
});

/** 204 No Content: a write that returns nothing, or a raw fetch with nothing to send. */
export const emptyResult = (): PkiResult => ({ kind: 'empty' });

/** Parameters of a request (the dispatcher already took them from the query string for reads and deletes). */
export function parseInput<S extends FieldSchema>(ctx: PkiRequestContext, fields: FieldSet<S>): ParsedFields<S> {
  return fields.parse(ctx.body, ctx.params);
}

/** Mount TTLs with 0 meaning the system value (768h), as Vault treats them. */
export function mountLimits(ctx: PkiRequestContext): { defaultTtlSeconds: number; maxTtlSeconds: number } {
  const system = 768 * 3600;
  const max = ctx.mount.maxLeaseTtlSeconds > 0 ? ctx.mount.maxLeaseTtlSeconds : system;
  const def = ctx.mount.defaultLeaseTtlSeconds > 0 ? ctx.mount.defaultLeaseTtlSeconds : system;
  return { defaultTtlSeconds: Math.min(def, max), maxTtlSeconds: max };
}
