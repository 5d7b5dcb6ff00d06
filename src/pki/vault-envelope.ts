import { randomUUID } from 'node:crypto';
import type { ErrorKind } from '../shared/errors.js';

/** Vault's JSON response envelope. */
export interface VaultResponse<T = unknown> {
  request_id: string;
  lease_id: string;
  renewable: boolean;
  lease_duration: number;
  data: T | null;
  wrap_info: null;
  warnings: string[] | null;
  auth: unknown;
  mount_type?: string;
}

export function vaultResponse<T>(
  data: T | null,
  opts: {
    leaseId?: string;
    leaseDuration?: number;
    warnings?: string[];
    auth?: unknown;
    requestId?: string;
    mountType?: string;
  } = {},
): VaultResponse<T> {
  const res: VaultResponse<T> = {
    request_id: opts.requestId ?? randomUUID(),
    lease_id: opts.leaseId ?? '',
    renewable: false,
    lease_duration: opts.leaseDuration ?? 0,
    data,
    wrap_info: null,
    warnings: opts.warnings && opts.warnings.length > 0 ? opts.warnings : null,
    auth: opts.auth ?? null,
  };
  if (opts.mountType !== undefined) res.mount_type = opts.mountType;
  return res;
}

/**
 * Vault's envelope as JSON text, the same document JSON.stringify(vaultResponse(...)) gives.
 * `repeated` names data fields whose strings recur in many answers (an issuer's certificate
 * and chain in every issue or sign answer): their JSON is escaped once and reused, which
 * is most of the work of serialising such an answer.
 */
export function vaultResponseJson(envelope: VaultResponse, repeated?: readonly string[]): string {
  let out =
    `{"request_id":${JSON.stringify(envelope.request_id)},"lease_id":${JSON.stringify(envelope.lease_id)},` +
    `"renewable":${envelope.renewable},"lease_duration":${JSON.stringify(envelope.lease_duration)},` +
    `"data":${dataJson(envelope.data, repeated)},"wrap_info":null,` +
    `"warnings":${JSON.stringify(envelope.warnings)},"auth":${JSON.stringify(envelope.auth ?? null)}`;
  if (envelope.mount_type !== undefined) out += `,"mount_type":${JSON.stringify(envelope.mount_type)}`;
  return `${out}}`;
}

function dataJson(data: unknown, repeated: readonly string[] | undefined): string {
  if (
    !repeated ||
    repeated.length === 0 ||
    data === null ||
    typeof data !== 'object' ||
    Object.getPrototypeOf(data) !== Object.prototype
  ) {
    return JSON.stringify(data ?? null);
  }
  const parts: string[] = [];
  for (const key of Object.keys(data)) {
    const v = (data as Record<string, unknown>)[key];
    const json = repeated.includes(key) ? repeatedJson(v) : JSON.stringify(v);
    if (json !== undefined) parts.push(`${JSON.stringify(key)}:${json}`);
  }
  return `{${parts.join(',')}}`;
}

const REPEATED_CACHE_MAX = 256;
const repeatedStrings = new Map<string, string>();

/** JSON of a string, or of a list of strings, that recurs; undefined (left out) for undefined. */
function repeatedJson(v: unknown): string | undefined {
  if (typeof v === 'string') return stringJsonOnce(v);
  if (Array.isArray(v) && v.every((x) => typeof x === 'string'))
    return `[${(v as string[]).map(stringJsonOnce).join(',')}]`;
  return JSON.stringify(v);
}

function stringJsonOnce(s: string): string {
  let json = repeatedStrings.get(s);
  if (json === undefined) {
    json = JSON.stringify(s);
    if (repeatedStrings.size >= REPEATED_CACHE_MAX) repeatedStrings.clear();
    repeatedStrings.set(s, json);
  }
  return json;
}

/** HTTP status for a domain error kind under /v1. */
export function vaultStatusFor(kind: ErrorKind | 'internal'): number {
  switch (kind) {
    case 'not_found':
      return 404;
    case 'invalid':
    case 'conflict':
    case 'locked':
    case 'precondition_failed':
      return 400;
    case 'forbidden':
    case 'unauthenticated':
      return 403;
    case 'too_large':
      return 413;
    case 'unavailable':
      return 503;
    case 'insufficient_storage':
      return 507;
    case 'too_many_requests':
      return 429;
    default:
      return 500;
  }
}

export function vaultError(messages: string[]): { errors: string[] } {
  return { errors: messages };
}
