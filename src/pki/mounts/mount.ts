import { conflict, invalid } from '../../shared/errors.js';
import type { MountInfo } from '../pki-route.js';

/**
 * Secrets-engine mounts: where a PKI engine lives under /v1 and its lease TTLs.
 * https://developer.hashicorp.com/vault/api-docs/system/mounts
 */

/** Vault's system-wide default and maximum lease TTL (768h) when the server sets none. */
export const SYSTEM_DEFAULT_LEASE_TTL = 768 * 3600;
export const SYSTEM_MAX_LEASE_TTL = 768 * 3600;

/** Mount types this server can enable. */
export const MOUNT_TYPES = ['pki'] as const;
export type MountType = (typeof MOUNT_TYPES)[number];

/** First path segments that belong to the server itself (or to the TFE upload URLs under /v1/object). */
const RESERVED_FIRST_SEGMENTS = new Set(['sys', 'auth', 'cubbyhole', 'identity', 'object', 'audit', 'token']);
const SEGMENT = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** Tunable settings other than the TTLs, kept as given and shown back on reads. */
export interface MountConfigExtras {
  force_no_cache?: boolean;
  listing_visibility?: string;
  passthrough_request_headers?: string[];
  allowed_response_headers?: string[];
  audit_non_hmac_request_keys?: string[];
  audit_non_hmac_response_keys?: string[];
  delegated_auth_accessors?: string[];
  plugin_version?: string;
}

export interface Mount {
  id: string;
  /** Without slashes at either end. */
  path: string;
  type: MountType;
  description: string;
  /** As configured; 0 means the system value. */
  defaultLeaseTtl: number;
  maxLeaseTtl: number;
  config: MountConfigExtras;
  options: Record<string, string>;
  local: boolean;
  sealWrap: boolean;
  createdAt: Date;
  updatedAt: Date;
}

/** Accepts "pki", "/pki/", "pki/int"; rejects empty, odd characters and server-owned paths. */
export function normalizeMountPath(raw: string): string {
  const path = raw.trim().replace(/^\/+/, '').replace(/\/+$/, '');
  if (path === '') throw invalid('mount path must not be empty', 'path');
  const segments = path.split('/');
  if (!segments.every((s) => SEGMENT.test(s))) throw invalid(`invalid mount path "${raw}"`, 'path');
  if (RESERVED_FIRST_SEGMENTS.has((segments[0] as string).toLowerCase())) {
    throw invalid(`cannot mount at "${path}/": the path is reserved`, 'path');
  }
  return path;
}

export function assertMountType(type: string): MountType {
  if ((MOUNT_TYPES as readonly string[]).includes(type)) return type as MountType;
  throw invalid(`plugin not found in the catalog: ${type}`, 'type');
}

/**
 * Vault refuses a mount whose path equals, contains or sits inside an existing one:
 * `pki/int` next to `pki` would make routing ambiguous.
 */
export function assertNoPathConflict(path: string, existing: readonly string[]): void {
  for (const other of existing) {
    if (other === path || path.startsWith(`${other}/`) || other.startsWith(`${path}/`)) {
      throw conflict(`path is already in use at ${other}/`, 'path');
    }
  }
}

/** Effective TTLs after falling back to the system values. */
export function effectiveTtls(m: Pick<Mount, 'defaultLeaseTtl' | 'maxLeaseTtl'>): {
  defaultLeaseTtl: number;
  maxLeaseTtl: number;
} {
  const maxLeaseTtl = m.maxLeaseTtl > 0 ? m.maxLeaseTtl : SYSTEM_MAX_LEASE_TTL;
  const base = m.defaultLeaseTtl > 0 ? m.defaultLeaseTtl : SYSTEM_DEFAULT_LEASE_TTL;
  // An untuned default never exceeds a tuned-down max.
  const defaultLeaseTtl = m.defaultLeaseTtl > 0 ? base : Math.min(base, maxLeaseTtl);
  return { defaultLeaseTtl, maxLeaseTtl };
}

/** A tune must leave the effective default at or below the effective max. */
export function assertTtlsConsistent(defaultLeaseTtl: number, maxLeaseTtl: number): void {
  if (defaultLeaseTtl > 0 && maxLeaseTtl > 0 && defaultLeaseTtl > maxLeaseTtl) {
    throw invalid('default lease TTL must not be greater than the max lease TTL', 'default_lease_ttl');
  }
  if (defaultLeaseTtl > 0 && maxLeaseTtl === 0 && defaultLeaseTtl > SYSTEM_MAX_LEASE_TTL) {
    throw invalid('default lease TTL must not be greater than the max lease TTL', 'default_lease_ttl');
  }
}

/** Vault's accessor style: `<type>_<8 hex>`. */
export function mountAccessor(m: Pick<Mount, 'id' | 'type'>): string {
  return `${m.type}_${m.id.replace(/-/g, '').slice(0, 8)}`;
}

const infos = new WeakMap<Mount, MountInfo>();

/** What routes see of a mount; made once per Mount object (which a tune replaces), frozen. */
export function toMountInfo(m: Mount): MountInfo {
  let info = infos.get(m);
  if (!info) {
    const ttl = effectiveTtls(m);
    info = Object.freeze({
      id: m.id,
      path: `${m.path}/`,
      type: m.type,
      defaultLeaseTtlSeconds: ttl.defaultLeaseTtl,
      maxLeaseTtlSeconds: ttl.maxLeaseTtl,
    });
    infos.set(m, info);
  }
  return info;
}

/**
 * Finds the mount serving a path relative to /v1: the longest mount path that equals the
 * path or is followed by `/`. Returns the rest without a leading slash.
 */
export function matchMount<M extends Pick<Mount, 'path'>>(
  mounts: readonly M[],
  path: string,
): { mount: M; rest: string } | undefined {
  const p = path.replace(/^\/+/, '');
  let best: M | undefined;
  for (const m of mounts) {
    if ((p === m.path || p.startsWith(`${m.path}/`)) && (!best || m.path.length > best.path.length)) best = m;
  }
  if (!best) return undefined;
  return { mount: best, rest: p.slice(best.path.length).replace(/^\/+/, '') };
}
