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
