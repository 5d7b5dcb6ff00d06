import { invalid } from '../../shared/errors.js';
import { DEFAULT_POLICY, ROOT_POLICY } from '../acl/policy.js';

/**
 * Tokens of the token store (`auth/token`): policies, TTLs, parents and orphans.
 * https://developer.hashicorp.com/vault/api-docs/auth/token
 * https://developer.hashicorp.com/vault/docs/concepts/tokens
 */

/** Tokens this server issues start with this, so they are easy to recognise in logs and leaks. */
export const TOKEN_PREFIX = 'srv.';
/** Token store default and maximum TTL when the caller gives none (Vault's system default). */
export const TOKEN_DEFAULT_TTL = 768 * 3600;
export const TOKEN_MAX_TTL = 768 * 3600;

export interface TokenEntry {
  hash: string;
  accessor: string;
  /** Null for orphans and for children of the admin token. */
  parentAccessor: string | null;
  policies: string[];
  meta: Record<string, string> | null;
  displayName: string;
  /** 0 = unlimited. */
  numUses: number;
  renewable: boolean;
  orphan: boolean;
  /** TTL at creation (or last renewal target); 0 = never expires. */
  ttl: number;
  explicitMaxTtl: number;
  period: number;
  path: string;
  createdAt: Date;
  expiresAt: Date | null;
  lastRenewalAt: Date | null;
  /** CIDRs the token may be used from (tokens made by an auth method's login); null: anywhere. */
  boundCidrs: string[] | null;
  /** Renewals never go past createdAt + maxTtl (0: only the system maximum applies). */
  maxTtl: number;
}

/** What creating a token is allowed to do, from the caller's point of view. */
export interface CreatorView {
  /** The caller's policies (["root"] for the admin token). */
  policies: readonly string[];
  /** Null for the admin token, which has no entry of its own. */
  accessor: string | null;
  /** Root, or `sudo` on the create path. */
  privileged: boolean;
}

export interface CreateTokenRequest {
  id?: string;
  policies?: string[];
  meta?: Record<string, string>;
  noParent: boolean;
  noDefaultPolicy: boolean;
  renewable: boolean;
  ttl: number;
  explicitMaxTtl: number;
  period: number;
  displayName: string;
  numUses: number;
  type: string;
  /** create-orphan: orphan without needing privileges. */
  orphanPath: boolean;
  path: string;
}

export interface TokenPlan {
  policies: string[];
  parentAccessor: string | null;
  orphan: boolean;
  ttl: number;
  explicitMaxTtl: number;
  period: number;
  expiresAt: Date | null;
  renewable: boolean;
  displayName: string;
  numUses: number;
  meta: Record<string, string> | null;
  warnings: string[];
}

/** Lowercase, trimmed, deduplicated, sorted; `root` alone stays alone. */
export function sanitizePolicies(names: readonly string[], addDefault: boolean): string[] {
  const set = new Set(names.map((n) => n.trim().toLowerCase()).filter((n) => n !== ''));
  if (addDefault && !set.has(ROOT_POLICY)) set.add(DEFAULT_POLICY);
  return [...set].sort();
}

/** `token-<name>` with anything but letters, digits and dashes turned into dashes, as Vault shows it. */
export function tokenDisplayName(name: string): string {
  const clean = name
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+|-+$/g, '');
  if (clean === '' || clean === 'token') return 'token';
  return `token-${clean}`;
}

/**
 * Applies Vault's token-creation rules: only privileged callers choose the id, make
 * orphans outside create-orphan, or make periodic tokens; a child's policies must be a
 * subset of its parent's unless the caller is privileged; only root makes root tokens;
 * the TTL falls back to the default (root tokens never expire) and is capped by the
 * maximum and by explicit_max_ttl.
 */
export function planToken(creator: CreatorView, req: CreateTokenRequest, now: Date): TokenPlan {
  const warnings: string[] = [];
  const creatorIsRoot = creator.policies.includes(ROOT_POLICY);
  if (req.id !== undefined && req.id !== '' && !creator.privileged)
    throw invalid('root or sudo privileges required to specify token id', 'id');
  if (req.noParent && !req.orphanPath && !creator.privileged)
    throw invalid('root or sudo privileges required to create orphan token', 'no_parent');
  if (req.period > 0 && !creator.privileged)
    throw invalid('root or sudo privileges required to create periodic token', 'period');
  if (req.numUses < 0) throw invalid('number of uses cannot be negative', 'num_uses');
  if (req.type !== '' && req.type !== 'service' && req.type !== 'default')
    throw invalid(`unsupported token type "${req.type}"`, 'type');

  let policies: string[];
  if (req.policies === undefined || req.policies.length === 0) {
    policies = sanitizePolicies(creator.policies, !req.noDefaultPolicy);
    if (req.noDefaultPolicy) policies = policies.filter((p) => p !== DEFAULT_POLICY);
  } else {
    policies = sanitizePolicies(req.policies, !req.noDefaultPolicy);
    if (policies.includes(ROOT_POLICY) && !creatorIsRoot) {
      throw invalid('root tokens may not be created without parent token being root', 'policies');
    }
    if (!creator.privileged) {
      const parent = new Set(creator.policies);
      // `default` is always attachable, even when the parent lacks it.
      if (!policies.every((p) => p === DEFAULT_POLICY || parent.has(p)))
        throw invalid('child policies must be subset of parent', 'policies');
    }
  }
  if (policies.length === 0) throw invalid('token must have at least one policy', 'policies');
  const isRootToken = policies.includes(ROOT_POLICY);

  const orphan = req.noParent || req.orphanPath;
  let ttl = req.period > 0 ? req.period : req.ttl;
  if (ttl === 0 && req.explicitMaxTtl > 0) ttl = req.explicitMaxTtl;
  if (ttl === 0 && !isRootToken) ttl = TOKEN_DEFAULT_TTL;
  if (req.period === 0 && ttl > TOKEN_MAX_TTL) {
    warnings.push(
      `TTL of "${formatHours(ttl)}" exceeded the effective max_ttl of "${formatHours(TOKEN_MAX_TTL)}"; TTL ` +
        `value is capped accordingly`,
    );
    ttl = TOKEN_MAX_TTL;
  }
  if (req.explicitMaxTtl > 0 && ttl > req.explicitMaxTtl) {
    warnings.push(
      `TTL of "${formatHours(ttl)}" exceeded the explicit max TTL of "${formatHours(req.explicitMaxTtl)}"; TTL ` +
        `value is capped accordingly`,
    );
    ttl = req.explicitMaxTtl;
  }
  return {
    policies,
    parentAccessor: orphan ? null : creator.accessor,
    orphan,
    ttl,
    explicitMaxTtl: req.explicitMaxTtl,
    period: req.period,
    expiresAt: ttl > 0 ? new Date(now.getTime() + ttl * 1000) : null,
    renewable: req.renewable,
    displayName: tokenDisplayName(req.displayName),
    numUses: req.numUses,
    meta: req.meta && Object.keys(req.meta).length > 0 ? req.meta : null,
    warnings,
  };
}

/** Seconds left (0 for tokens that never expire or are already expired). */
export function remainingTtl(t: Pick<TokenEntry, 'expiresAt'>, now: Date): number {
  if (!t.expiresAt) return 0;
  return Math.max(0, Math.floor((t.expiresAt.getTime() - now.getTime()) / 1000));
}

export function isExpired(t: Pick<TokenEntry, 'expiresAt'>, now: Date): boolean {
  return t.expiresAt !== null && t.expiresAt.getTime() <= now.getTime();
}

/**
 * A renewal: periodic tokens go back to their period; others get `increment` (or their
 * original TTL) from now, never past the maximum TTL nor creation + explicit_max_ttl.
 * Tokens without expiry stay as they are.
 */
export function planRenewal(
  t: TokenEntry,
  increment: number,
  now: Date,
): { ttl: number; expiresAt: Date | null; warnings: string[] } {
  if (!t.renewable) throw invalid('lease is not renewable');
  if (!t.expiresAt) return { ttl: 0, expiresAt: null, warnings: [] };
  const warnings: string[] = [];
  let ttl = t.period > 0 ? t.period : increment > 0 ? increment : t.ttl;
  if (t.period === 0 && ttl > TOKEN_MAX_TTL) ttl = TOKEN_MAX_TTL;
  let expiresAt = new Date(now.getTime() + ttl * 1000);
  const limits = [t.explicitMaxTtl, t.maxTtl].filter((x) => x > 0);
  if (limits.length > 0) {
    const hardLimit = new Date(t.createdAt.getTime() + Math.min(...limits) * 1000);
    if (expiresAt > hardLimit) {
      expiresAt = hardLimit;
      ttl = Math.max(0, Math.floor((hardLimit.getTime() - now.getTime()) / 1000));
      warnings.push(
        t.explicitMaxTtl > 0 && t.explicitMaxTtl <= (t.maxTtl || Infinity)
          ? 'TTL of the renewed token is capped by its explicit max TTL'
          : 'TTL of the renewed token is capped by its max TTL',
      );
    }
  }
  return { ttl, expiresAt, warnings };
}

function formatHours(seconds: number): string {
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  return `${h}h${m}m${s}s`;
}
