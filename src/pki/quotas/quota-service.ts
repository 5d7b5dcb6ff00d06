import { invalid, notFound } from '../../shared/errors.js';
import type { Clock } from '../../shared/clock.js';
import type { Logger } from '../../shared/log.js';
import type { MountService } from '../mounts/mount-service.js';
import { WindowLimiter, normalizeQuotaPath, quotaFor, validateRate, windowStart } from './quota.js';
import type { Admission, QuotaConfig, RateLimitQuota } from './quota.js';
import type { QuotaRepo } from './quota-repo.js';

/** How often nodes sharing a database exchange their counts, and re-read quotas written elsewhere. */
export const QUOTA_EXCHANGE_MS = 250;
export const QUOTA_RELOAD_MS = 1000;

/**
 * Rate-limit quotas for every request under /v1. The quotas and their configuration are kept in memory (changes made
 * on this node apply at once, those made on another node within QUOTA_RELOAD_MS). Counting is per client IP and per
 * fixed window; with `shared` (PostgreSQL, several nodes) the nodes add their counts to one row per window every
 * QUOTA_EXCHANGE_MS, so that one limit holds for the cluster: it can be exceeded only by what the other nodes admit
 * between two exchanges.
 */
export class QuotaService {
  #quotas: RateLimitQuota[] = [];
  #config: QuotaConfig | undefined;
  #exempt = new Set<string>();
  /** Exempt entries that end in `*`: every path that starts with what precedes it. */
  #exemptPrefixes: string[] = [];
  readonly #limiter = new WindowLimiter();
  #timers: NodeJS.Timeout[] = [];
  #exchanging = false;

  constructor(
    private readonly deps: {
      repo: QuotaRepo;
      mounts: MountService;
      clock: Clock;
      logger: Logger;
      /** Several nodes share the database: exchange counts and re-read quotas periodically. */
      shared: boolean;
    },
  ) {}

  async start(): Promise<void> {
    await this.reload();
    if (!this.deps.shared) return;
    const every = (ms: number, f: () => Promise<void>) => {
      const t = setInterval(() => {
        f().catch((err: unknown) => this.deps.logger.warn({ err }, 'rate-limit quota exchange failed'));
      }, ms);
      t.unref();
      this.#timers.push(t);
    };
    every(QUOTA_RELOAD_MS, () => this.reload());
    every(QUOTA_EXCHANGE_MS, () => this.exchange());
  }

  stop(): void {
    for (const t of this.#timers) clearInterval(t);
    this.#timers = [];
  }

  async reload(): Promise<void> {
    const [quotas, config] = await Promise.all([this.deps.repo.list(), this.deps.repo.readConfig()]);
    for (const old of this.#quotas) {
      const now = quotas.find((q) => q.name === old.name);
      if (!now || now.intervalSeconds !== old.intervalSeconds) this.#limiter.forgetQuota(old.name);
    }
    this.#quotas = quotas;
    this.#setConfig(config);
  }

  /** Nothing to check: no quota at all (the common case, one comparison per request). */
  get empty(): boolean {
    return this.#quotas.length === 0;
  }

  /** The quota that applies to a request path; undefined when none does or the path is exempt. */
  quotaFor(path: string): RateLimitQuota | undefined {
    if (this.#quotas.length === 0 || this.#isExempt(path)) return undefined;
    return quotaFor(this.#quotas, path);
  }

  /** The decision for one request under the quota that applies to it. */
  admit(quota: RateLimitQuota, client: string): Admission & { headers: boolean } {
    const a = this.#limiter.admit(quota, client, this.deps.clock.now().getTime());
    return { ...a, headers: this.#config?.enableRateLimitResponseHeaders ?? false };
  }

  /**
   * With several nodes, the first request of a client in a window on this node first reads what the other nodes
   * admitted in it, so a node that has not seen the client yet does not start from zero. True when that read is due.
   */
  needsPrime(quota: RateLimitQuota, client: string): boolean {
    return this.deps.shared && !this.#limiter.knows(quota, client, this.deps.clock.now().getTime());
  }

  async prime(quota: RateLimitQuota, client: string): Promise<void> {
    const start = windowStart(quota, this.deps.clock.now().getTime());
    this.#limiter.seed(quota, client, start, await this.deps.repo.total(quota.name, client, start));
  }

  list(): string[] {
    return this.#quotas.map((q) => q.name);
  }

  read(name: string): RateLimitQuota {
    const q = this.#quotas.find((x) => x.name === name);
    if (!q) throw notFound(`rate-limit quota "${name}" not found`);
    return q;
  }

  exists(name: string): boolean {
    return this.#quotas.some((q) => q.name === name);
  }

  async write(
    name: string,
    input: { path?: string; rate?: number; interval?: number; blockInterval?: number; inheritable?: boolean },
  ): Promise<void> {
    const old = this.#quotas.find((q) => q.name === name);
    const rate = input.rate ?? old?.rate;
    if (rate === undefined) throw invalid('missing required field "rate"', 'rate');
    validateRate(rate);
    const path = normalizeQuotaPath(input.path ?? old?.path ?? '');
    await this.#checkPath(path);
    const other = this.#quotas.find((q) => q.path === path && q.name !== name);
    if (other) throw invalid(`quota "${other.name}" already covers path "${path}"`, 'path');
    const intervalSeconds = input.interval ?? old?.intervalSeconds ?? 1;
    if (intervalSeconds < 1) throw invalid('interval must be at least one second', 'interval');
    const blockIntervalSeconds = input.blockInterval ?? old?.blockIntervalSeconds ?? 0;
    if (blockIntervalSeconds < 0) throw invalid('block_interval must not be negative', 'block_interval');
    const inheritable = input.inheritable ?? old?.inheritable ?? path === '';
    const quota: RateLimitQuota = { name, path, rate, intervalSeconds, blockIntervalSeconds, inheritable };
    await this.deps.repo.upsert(quota, this.deps.clock.now());
    this.#limiter.forgetQuota(name);
    this.#quotas = [...this.#quotas.filter((q) => q.name !== name), quota].sort((a, b) => a.name.localeCompare(b.name));
  }

  async delete(name: string): Promise<void> {
    await this.deps.repo.delete(name);
    this.#limiter.forgetQuota(name);
    this.#quotas = this.#quotas.filter((q) => q.name !== name);
  }

  async config(): Promise<QuotaConfig> {
    if (!this.#config) await this.reload();
    return this.#config as QuotaConfig;
  }

  async writeConfig(patch: Partial<QuotaConfig>): Promise<void> {
    const next = { ...(await this.config()), ...patch };
    next.rateLimitExemptPaths = next.rateLimitExemptPaths.map(normalizeQuotaPath).filter((p) => p !== '');
    await this.deps.repo.writeConfig(next);
    this.#setConfig(next);
  }

  /** Sends this node's new counts and learns the cluster's totals (PostgreSQL); prunes old windows. */
  async exchange(): Promise<void> {
    if (this.#exchanging) return;
    this.#exchanging = true;
    try {
      const now = this.deps.clock.now().getTime();
      const entries = this.#limiter.takeUnreported();
      const totals = await this.deps.repo.exchange(entries);
      for (const t of totals) this.#limiter.merge(t.quota, t.client, t.windowStart, t.total);
      const longest = Math.max(1, ...this.#quotas.map((q) => Math.max(q.intervalSeconds, q.blockIntervalSeconds)));
      const horizon = now - 2 * longest * 1000;
      this.#limiter.prune(horizon);
      if (Math.random() < 0.05) await this.deps.repo.pruneUsage(horizon);
    } finally {
      this.#exchanging = false;
    }
  }

  #setConfig(config: QuotaConfig): void {
    this.#config = config;
    const paths = config.rateLimitExemptPaths.map(normalizeQuotaPath);
    this.#exempt = new Set(paths.filter((p) => !p.endsWith('*')));
    this.#exemptPrefixes = paths.filter((p) => p.endsWith('*')).map((p) => p.slice(0, -1));
  }

  #isExempt(path: string): boolean {
    if (this.#exempt.has(path)) return true;
    for (const p of this.#exemptPrefixes) if (path.startsWith(p)) return true;
    return false;
  }

  async #checkPath(path: string): Promise<void> {
    if (path === '' || path === 'sys' || path.startsWith('sys/') || path === 'auth' || path.startsWith('auth/')) return;
    if (!(await this.deps.mounts.resolve(path))) throw invalid(`invalid mount path "${path}"`, 'path');
  }
}
