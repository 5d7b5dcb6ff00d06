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

export function vaultResponse<T>(data: T | null, opts: { leaseId?: string; leaseDuration?: number; warnings?: string[]; auth?: unknown; requestId?: string; mountType?: string } = {}): VaultResponse<T> {
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
 * Vault's envelope as UTF-8 JSON, the same document JSON.stringify(vaultResponse(...)) gives.
 * `repeated` names data fields whose strings recur in many answers (an issuer's certificate
 * and chain in every issue or sign answer): their JSON is escaped and encoded once and its
 * bytes reused, which is most of the work of serialising such an answer. The answer is
 * written straight into one buffer: no intermediate string is flattened or re-encoded.
 */
export function vaultResponseBody(envelope: VaultResponse, repeated?: readonly string[]): Buffer {
  const chunks: (string | Buffer)[] = [
    `{"request_id":${JSON.stringify(envelope.request_id)},"lease_id":${JSON.stringify(envelope.lease_id)},"renewable":${envelope.renewable},` +
      `"lease_duration":${JSON.stringify(envelope.lease_duration)},"data":`,
  ];
  dataChunks(chunks, envelope.data, repeated);
  let tail = `,"wrap_info":null,"warnings":${JSON.stringify(envelope.warnings)},"auth":${JSON.stringify(envelope.auth ?? null)}`;
  if (envelope.mount_type !== undefined) tail += `,"mount_type":${JSON.stringify(envelope.mount_type)}`;
  chunks.push(`${tail}}`);
  let size = 0;
  for (const c of chunks) size += typeof c === 'string' ? Buffer.byteLength(c) : c.length;
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  for (const c of chunks) at += typeof c === 'string' ? out.write(c, at) : c.copy(out, at);
  return out;
}

function dataChunks(chunks: (string | Buffer)[], data: unknown, repeated: readonly string[] | undefined): void {
  if (!repeated || repeated.length === 0 || data === null || typeof data !== 'object' || Object.getPrototypeOf(data) !== Object.prototype) {
    chunks.push(JSON.stringify(data ?? null));
    return;
  }
  // Text between the recurring values is gathered into one string per stretch.
  let text = '{';
  let first = true;
  for (const key in data) {
    if (!Object.hasOwn(data, key)) continue;
    const v = (data as Record<string, unknown>)[key];
    if (repeated.includes(key) && isRepeatable(v)) {
      chunks.push(`${text}${first ? '' : ','}${JSON.stringify(key)}:`);
      if (typeof v === 'string') chunks.push(stringJsonOnce(v));
      else {
        chunks.push('[');
        v.forEach((x, i) => {
          if (i > 0) chunks.push(',');
          chunks.push(stringJsonOnce(x));
        });
        chunks.push(']');
      }
      text = '';
    } else {
      const json = JSON.stringify(v);
      if (json === undefined) continue;
      text += `${first ? '' : ','}${JSON.stringify(key)}:${json}`;
    }
    first = false;
  }
  chunks.push(`${text}}`);
}

function isRepeatable(v: unknown): v is string | string[] {
  return typeof v === 'string' || (Array.isArray(v) && v.every((x) => typeof x === 'string'));
}

const REPEATED_CACHE_MAX = 256;
const repeatedBytes = new Map<string, Buffer>();

/** The JSON bytes of a recurring string, escaped and encoded once. */
function stringJsonOnce(s: string): Buffer {
  let json = repeatedBytes.get(s);
  if (json === undefined) {
    json = Buffer.from(JSON.stringify(s));
    if (repeatedBytes.size >= REPEATED_CACHE_MAX) repeatedBytes.clear();
    repeatedBytes.set(s, json);
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
    default:
      return 500;
  }
}

export function vaultError(messages: string[]): { errors: string[] } {
  return { errors: messages };
}
