import { invalid } from '../shared/errors.js';
import type { AclOperation } from './acl/policy.js';
import { toBool } from './vault-fields.js';

/**
 * How Vault turns an HTTP request into a logical operation, and which paths are special:
 * reachable without a token, or needing `sudo` on top of the normal capability.
 * https://developer.hashicorp.com/vault/api-docs#http-verbs
 */

export type RequestKind = 'read' | 'list' | 'write' | 'patch' | 'delete';

export interface ResolvedOperation {
  readonly kind: RequestKind;
  /**
   * Operations that could apply. A write is `create` when the target does not exist yet and
   * `update` when it does; paths without an existence check (all of PKI) always use `update`,
   * so writes list both and the caller picks with writeOperation().
   */
  readonly operations: readonly AclOperation[];
}

/**
 * Maps a method (and `?list=`) to Vault's operation. Returns undefined for methods Vault
 * does not support (HTTP 405). An unparsable `list` value is DomainError('invalid').
 */
export function resolveOperation(
  method: string,
  query?: Readonly<Record<string, unknown>>,
): ResolvedOperation | undefined {
  switch (method.toUpperCase()) {
    case 'GET':
    case 'HEAD': {
      const list = query?.['list'];
      if (list !== undefined && list !== null) {
        const flag = toBool(Array.isArray(list) ? list[0] : list);
        if (flag === undefined) throw invalid(`invalid value for "list": ${JSON.stringify(list)}`, 'list');
        if (flag) return OPERATIONS.list;
      }
      return OPERATIONS.read;
    }
    case 'LIST':
      return OPERATIONS.list;
    case 'POST':
    case 'PUT':
      return OPERATIONS.write;
    case 'PATCH':
      return OPERATIONS.patch;
    case 'DELETE':
      return OPERATIONS.delete;
    default:
      return undefined;
  }
}

const operation = (kind: RequestKind, operations: AclOperation[]): ResolvedOperation =>
  Object.freeze({ kind, operations: Object.freeze(operations) });
const OPERATIONS = {
  read: operation('read', ['read']),
  list: operation('list', ['list']),
  write: operation('write', ['create', 'update']),
  patch: operation('patch', ['patch']),
  delete: operation('delete', ['delete']),
} as const;

/**
 * Picks the operation for a write. `exists` is undefined for paths without an existence
 * check, which Vault always treats as `update`.
 */
export function writeOperation(exists?: boolean): 'create' | 'update' {
  return exists === false ? 'create' : 'update';
}

/** Strips leading slashes; list requests always carry a trailing slash in Vault. */
export function normalizeRequestPath(path: string, isList: boolean): string {
  const p = path.replace(/^\/+/, '');
  return isList && !p.endsWith('/') ? `${p}/` : p;
}

/** A compiled special-path pattern (see compilePathPattern). */
export type PathMatcher = (path: string) => boolean;

/**
 * Compiles a special-path pattern: `+` is exactly one segment, a trailing `*` is a prefix
 * match, anything else must be equal. Patterns are compiled once at load time so a request
 * costs no pattern parsing.
 */
export function compilePathPattern(pattern: string): PathMatcher {
  const isPrefix = pattern.endsWith('*');
  const stem = isPrefix ? pattern.slice(0, -1) : pattern;
  const segs = stem.split('/');
  if (!segs.includes('+')) return isPrefix ? (path) => path.startsWith(stem) : (path) => path === stem;
  const n = segs.length;
  return (path) => {
    const parts = path.split('/');
    if (parts.length < n || (!isPrefix && parts.length !== n)) return false;
    for (let i = 0; i < n; i++) {
      const seg = segs[i] as string;
      const part = parts[i] as string;
      if (seg === '+' || seg === part) continue;
      if (isPrefix && i === n - 1 && part.startsWith(seg)) continue;
      return false;
    }
    return true;
  };
}

/** Matches one pattern against a path (compiles it on each call: for tests and rare paths). */
export function matchesPathPattern(pattern: string, path: string): boolean {
  return compilePathPattern(pattern)(path);
}

/**
 * Compiles a set of patterns into one matcher: exact patterns become a Set lookup, and the
 * rest are grouped by their literal first segment so a path only tries the few patterns
 * that could match it.
 */
export function compilePathPatterns(patterns: readonly string[]): PathMatcher {
  const exact = new Set<string>();
  const byFirst = new Map<string, PathMatcher[]>();
  const anyFirst: PathMatcher[] = [];
  for (const pattern of patterns) {
    const isPrefix = pattern.endsWith('*');
    const stem = isPrefix ? pattern.slice(0, -1) : pattern;
    const segs = stem.split('/');
    if (!isPrefix && !segs.includes('+')) {
      exact.add(stem);
      continue;
    }
    const first = segs[0] as string;
    // A first segment that is a wildcard, or partial under a prefix match, can match any first segment.
    if (first === '+' || (isPrefix && segs.length === 1)) {
      anyFirst.push(compilePathPattern(pattern));
      continue;
    }
    const list = byFirst.get(first) ?? [];
    list.push(compilePathPattern(pattern));
    byFirst.set(first, list);
  }
  return (path) => {
    if (exact.has(path)) return true;
    const slash = path.indexOf('/');
    const group = byFirst.get(slash < 0 ? path : path.slice(0, slash));
    if (group) for (const m of group) if (m(path)) return true;
    for (const m of anyFirst) if (m(path)) return true;
    return false;
  };
}

const ACME_PATHS = [
  'acme/directory',
  'acme/new-nonce',
  'acme/new-account',
  'acme/new-order',
  'acme/revoke-cert',
  'acme/key-change',
  'acme/account/+',
  'acme/authorization/+',
  'acme/challenge/+/+',
  'acme/orders',
  'acme/order/+',
  'acme/order/+/finalize',
  'acme/order/+/cert',
  // Beyond Vault: ACME Renewal Information (RFC 9773), fetched with a plain GET.
  'acme/renewal-info/+',
];
const ACME_PREFIXES = ['', 'issuer/+/', 'roles/+/', 'issuer/+/roles/+/'];

/** PKI paths served without a token, relative to the mount (Vault's PKI backend special paths). */
export const UNAUTHENTICATED_PKI_PATTERNS: readonly string[] = [
  'cert/*',
  'ca/pem',
  'ca_chain',
  'ca',
  'crl/delta',
  'crl/delta/pem',
  'crl/pem',
  'crl',
  'issuer/+/crl/der',
  'issuer/+/crl/pem',
  'issuer/+/crl',
  'issuer/+/crl/delta/der',
  'issuer/+/crl/delta/pem',
  'issuer/+/crl/delta',
  'issuer/+/unified-crl/der',
  'issuer/+/unified-crl/pem',
  'issuer/+/unified-crl',
  'issuer/+/unified-crl/delta/der',
  'issuer/+/unified-crl/delta/pem',
  'issuer/+/unified-crl/delta',
  'issuer/+/pem',
  'issuer/+/der',
  'issuer/+/json',
  'issuers/',
  'ocsp',
  'ocsp/*',
  'unified-crl',
  'unified-crl/pem',
  'unified-crl/delta',
  'unified-crl/delta/pem',
  'unified-ocsp',
  'unified-ocsp/*',
  ...ACME_PREFIXES.flatMap((prefix) => ACME_PATHS.map((p) => prefix + p)),
];

const isUnauthenticated = compilePathPatterns(UNAUTHENTICATED_PKI_PATTERNS);

/**
 * True when a request to `relativePath` (relative to the PKI mount, no query string) needs no
 * token. The method matters only through listing: `LIST issuers` (or `GET issuers?list=true`)
 * becomes `issuers/`, which is public, while `GET issuers` is not a public path.
 */
export function isUnauthenticatedPkiPath(
  relativePath: string,
  method: string,
  query?: Readonly<Record<string, unknown>>,
): boolean {
  let isList = false;
  try {
    isList = resolveOperation(method, query)?.kind === 'list';
  } catch {
    // A bad `list` value is reported when the request is resolved; it grants nothing here.
  }
  return isUnauthenticated(normalizeRequestPath(relativePath, isList));
}

/** PKI paths that need `sudo` as well as the operation's capability, relative to the mount. */
export const SUDO_PKI_PATTERNS: readonly string[] = ['root', 'root/sign-self-issued'];

/** System paths (relative to `sys/`) that need `sudo`. Policies and mounts are not among them. */
export const SUDO_SYS_PATTERNS: readonly string[] = [
  'auth/*',
  'remount',
  'audit',
  'audit/*',
  'raw',
  'raw/*',
  'rotate',
  'config/cors',
  'config/auditing/*',
  'config/ui/headers/*',
  'plugins/catalog/*',
  'revoke-prefix/*',
  'revoke-force/*',
  'leases/revoke-prefix/*',
  'leases/revoke-force/*',
  'leases/lookup/*',
  'leases',
  'seal',
  'step-down',
];

/** Token store paths (relative to `auth/token/`) that need `sudo`. */
export const SUDO_TOKEN_PATTERNS: readonly string[] = ['revoke-orphan/*', 'accessors*'];

const isSudoPki = compilePathPatterns(SUDO_PKI_PATTERNS);
const isSudoSys = compilePathPatterns(SUDO_SYS_PATTERNS);
const isSudoToken = compilePathPatterns(SUDO_TOKEN_PATTERNS);

/** `relativePath` is relative to the PKI mount; pass the normalized path for list requests. */
export function isSudoPkiPath(relativePath: string): boolean {
  const path = relativePath.replace(/^\/+/, '');
  return isSudoPki(path);
}

/** `path` is relative to /v1 (e.g. `sys/leases/lookup/pki/`); covers `sys/` and `auth/token/`. */
export function isSudoSystemPath(path: string): boolean {
  const p = path.replace(/^\/+/, '');
  if (p.startsWith('sys/')) return isSudoSys(p.slice(4));
  if (p.startsWith('auth/token/')) return isSudoToken(p.slice(11));
  return false;
}
