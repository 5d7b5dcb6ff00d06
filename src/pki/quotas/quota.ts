import { invalid } from '../../shared/errors.js';

/**
 * Vault's rate-limit quotas: a limit of `rate` requests per `interval` for each client IP on the paths a quota
 * covers, with an optional `block_interval` that shuts out a client that went over for that long. The most specific
 * quota wins: a path quota over a mount quota over the global one (empty path).
 * https://developer.hashicorp.com/vault/api-docs/system/rate-limit-quotas
 */
export interface RateLimitQuota {
  name: string;
  /** Relative to /v1 without slashes at either end; '' is the global quota. */
  path: string;
  rate: number;
  intervalSeconds: number;
  blockIntervalSeconds: number;
  inheritable: boolean;
}

export interface QuotaConfig {
  rateLimitExemptPaths: string[];
  enableRateLimitAuditLogging: boolean;
  enableRateLimitResponseHeaders: boolean;
}

/** Vault's default exempt paths: status and unseal endpoints answer whatever the quotas say. */
export const DEFAULT_EXEMPT_PATHS: readonly string[] = [
  'sys/generate-recovery-token/attempt',
  'sys/generate-recovery-token/update',
  'sys/generate-root/attempt',
  'sys/generate-root/update',
  'sys/health',
  'sys/seal-status',
  'sys/unseal',
];

export const DEFAULT_QUOTA_CONFIG: QuotaConfig = {
  rateLimitExemptPaths: [...DEFAULT_EXEMPT_PATHS],
  enableRateLimitAuditLogging: false,
  enableRateLimitResponseHeaders: false,
};

/** A quota path as stored and matched: no leading or trailing slashes. */
export function normalizeQuotaPath(path: string): string {
  return path.replace(/^\/+|\/+$/g, '');
}

/** Whether `path` (relative to /v1, no leading slash) is `prefix` or lies under it. */
export function pathCovers(prefix: string, path: string): boolean {
  if (prefix === '') return true;
  return path === prefix || (path.startsWith(prefix) && path.charCodeAt(prefix.length) === 0x2f);
}

/** The quota that applies to a request path: the one with the longest covering path. */
export function quotaFor(quotas: readonly RateLimitQuota[], path: string): RateLimitQuota | undefined {
  let best: RateLimitQuota | undefined;
  for (const q of quotas) {
    if (!pathCovers(q.path, path)) continue;
    if (!best || q.path.length > best.path.length) best = q;
  }
  return best;
}

export function validateRate(rate: number): void {
  if (!Number.isFinite(rate) || rate <= 0) throw invalid('rate must be positive', 'rate');
}

/** What the limiter decided for one request. */
/** The start of the window of `quota` that `nowMs` falls in. */
export function windowStart(quota: RateLimitQuota, nowMs: number): number {
  return nowMs - (nowMs % (quota.intervalSeconds * 1000));
}

export interface Admission {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window (or the block) ends. */
  resetSeconds: number;
}

interface ClientWindow {
  start: number;
  /** Requests admitted by this process in the window. */
  local: number;
  /** Requests other nodes reported for the window (PostgreSQL), as of the last exchange. */
  others: number;
  /** The part of `local` already reported to the other nodes. */
  reported: number;
  blockedUntil: number;
}

/**
 * Fixed windows of `interval` per quota and client. Counting is local and exact; what other nodes admitted arrives
 * through `merge` (see QuotaService), so a cluster admits at most `rate` per window plus what the other nodes admit
 * between two exchanges.
 */
export class WindowLimiter {
  readonly #windows = new Map<string, ClientWindow>();

  admit(quota: RateLimitQuota, client: string, nowMs: number): Admission {
    const key = `${quota.name}\u0000${client}`;
    const intervalMs = quota.intervalSeconds * 1000;
    const start = nowMs - (nowMs % intervalMs);
    let w = this.#windows.get(key);
    if (!w) {
      w = { start, local: 0, others: 0, reported: 0, blockedUntil: 0 };
      this.#windows.set(key, w);
    } else if (w.start !== start) {
      w.start = start;
      w.local = 0;
      w.others = 0;
      w.reported = 0;
    }
    const limit = Math.floor(quota.rate);
    if (w.blockedUntil > nowMs)
      return { allowed: false, limit, remaining: 0, resetSeconds: Math.ceil((w.blockedUntil - nowMs) / 1000) };
    const used = w.local + w.others;
    const resetSeconds = Math.max(1, Math.ceil((start + intervalMs - nowMs) / 1000));
    if (used >= quota.rate) {
      if (quota.blockIntervalSeconds > 0) {
        w.blockedUntil = nowMs + quota.blockIntervalSeconds * 1000;
        return { allowed: false, limit, remaining: 0, resetSeconds: quota.blockIntervalSeconds };
      }
      return { allowed: false, limit, remaining: 0, resetSeconds };
    }
    w.local++;
    return { allowed: true, limit, remaining: Math.max(0, limit - used - 1), resetSeconds };
  }

  /** Whether this process has a window for the quota and client that is still current. */
  knows(quota: RateLimitQuota, client: string, nowMs: number): boolean {
    const w = this.#windows.get(`${quota.name}\u0000${client}`);
    return w !== undefined && w.start === nowMs - (nowMs % (quota.intervalSeconds * 1000));
  }

  /** Starts a window with what the other nodes already admitted in it (read from the database). */
  seed(quota: RateLimitQuota, client: string, windowStart: number, othersTotal: number): void {
    const key = `${quota.name}\u0000${client}`;
    const w = this.#windows.get(key);
    if (w && w.start === windowStart) return;
    this.#windows.set(key, {
      start: windowStart,
      local: 0,
      others: othersTotal,
      reported: 0,
      blockedUntil: w?.blockedUntil ?? 0,
    });
  }

  /** Counts admitted here and not yet reported, by quota, client and window start; marks them reported. */
  takeUnreported(): { quota: string; client: string; windowStart: number; delta: number }[] {
    const out: { quota: string; client: string; windowStart: number; delta: number }[] = [];
    for (const [key, w] of this.#windows) {
      const [quota, client] = key.split('\u0000') as [string, string];
      out.push({ quota, client, windowStart: w.start, delta: w.local - w.reported });
      w.reported = w.local;
    }
    return out;
  }

  /** The cluster's total for a window, as the database counted it after this node's report. */
  merge(quota: string, client: string, windowStart: number, clusterTotal: number): void {
    const w = this.#windows.get(`${quota}\u0000${client}`);
    if (w && w.start === windowStart) w.others = Math.max(0, clusterTotal - w.reported);
  }

  /** Drops windows that ended before `beforeMs` and blocks that are over. */
  prune(beforeMs: number): void {
    for (const [key, w] of this.#windows)
      if (w.start < beforeMs && w.blockedUntil < beforeMs) this.#windows.delete(key);
  }

  forgetQuota(name: string): void {
    for (const key of this.#windows.keys()) if (key.startsWith(`${name}\u0000`)) this.#windows.delete(key);
  }
}
