import { conflict, invalid } from '../../shared/errors.js';
import { assertTtlsConsistent, effectiveTtls } from '../mounts/mount.js';

/**
 * Auth methods mounted under auth/ (`sys/auth`): where a method lives, its type and its
 * token TTLs. `auth/token/` is built in and never stored.
 * https://developer.hashicorp.com/vault/api-docs/system/auth
 */

/** Methods this server can enable. `oidc` is the JWT method mounted under its other name, as in Vault. */
export const AUTH_METHOD_TYPES = ['approle', 'jwt', 'oidc', 'cert'] as const;
export type AuthMethodType = (typeof AUTH_METHOD_TYPES)[number];

const SEGMENT = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

export interface AuthMount {
  id: string;
  /** Below auth/, without slashes at either end. */
  path: string;
  type: AuthMethodType;
  description: string;
  /** As configured; 0 means the system value. */
  defaultLeaseTtl: number;
  maxLeaseTtl: number;
  config: Record<string, unknown>;
  options: Record<string, string>;
  local: boolean;
  sealWrap: boolean;
  /** The method's own configuration (auth/jwt/config); null until written. */
  methodConfig: Record<string, unknown> | null;
  createdAt: Date;
  updatedAt: Date;
}

/** Accepts "approle", "/ci/jwt/"; rejects empty paths, odd characters and the built-in token/. */
export function normalizeAuthPath(raw: string): string {
  const path = raw.trim().replace(/^\/+/, '').replace(/\/+$/, '');
  if (path === '') throw invalid('path must not be empty', 'path');
  if (!path.split('/').every((s) => SEGMENT.test(s))) throw invalid(`invalid path "${raw}"`, 'path');
  if (path === 'token' || path.startsWith('token/')) throw invalid('token credential backend cannot be instantiated');
  return path;
}

export function assertAuthType(type: string): AuthMethodType {
  if ((AUTH_METHOD_TYPES as readonly string[]).includes(type)) return type as AuthMethodType;
  throw invalid(`plugin not found in the catalog: ${type}`, 'type');
}

/** Vault refuses an auth path that equals, contains or sits inside another. */
export function assertNoAuthPathConflict(path: string, existing: readonly string[]): void {
  for (const other of existing) {
    if (other === path || path.startsWith(`${other}/`) || other.startsWith(`${path}/`))
      throw conflict(`path is already in use at auth/${other}/`, 'path');
  }
}

export { assertTtlsConsistent, effectiveTtls };

/** Vault's accessor style for auth mounts: `auth_<type>_<8 hex>`. */
export function authMountAccessor(m: Pick<AuthMount, 'id' | 'type'>): string {
  return `auth_${m.type}_${m.id.replace(/-/g, '').slice(0, 8)}`;
}

/** The method that serves a type's routes: `oidc` mounts are the JWT method. */
export function methodOf(type: AuthMethodType): 'approle' | 'jwt' | 'cert' {
  return type === 'oidc' ? 'jwt' : type;
}
