import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { UnitsOfWork } from '../../db/unit-of-work.js';
import type { JobQueue } from '../../jobs/job-queue.js';
import type { Clock } from '../../shared/clock.js';
import { CachedEntries, PeerChanges } from '../../shared/peer-changes.js';
import { invalid } from '../../shared/errors.js';
import { hashToken, randomBase58 } from '../../shared/ids.js';
import { ROOT_POLICY } from '../acl/policy.js';
import type { TokenInfo } from '../pki-route.js';
import { scheduleExpirySweep } from '../sys/expiry-sweep.js';
import type { LeaseService } from '../sys/lease-service.js';
import type { CallerToken } from '../sys/system-route.js';
import { TOKEN_PREFIX, isExpired, planRenewal, planToken } from './token.js';
import type { CreateTokenRequest, TokenEntry } from './token.js';
import type { TokenRepo } from './token-repo.js';

/** A login's token, as the auth method worked it out (see auth/login-token.ts). */
export interface LoginTokenRequest {
  policies: string[];
  meta: Record<string, string> | null;
  displayName: string;
  numUses: number;
  ttl: number;
  maxTtl: number;
  explicitMaxTtl: number;
  period: number;
  boundCidrs: readonly string[];
  /** `auth/<mount>/login`. */
  path: string;
}

/** What the dispatcher learns from a presented token. */
export interface Authenticated {
  info: TokenInfo;
  /** Undefined for the admin token, which lives outside the token store. */
  entry: TokenEntry | undefined;
}

export const ADMIN_TOKEN_INFO: TokenInfo = Object.freeze({
  accessor: '',
  policies: [ROOT_POLICY],
  isRoot: true,
  displayName: 'root',
});

/**
 * How long a successful token check is remembered. A token revoked, renewed or exhausted
 * through this node is forgotten at once; one revoked through another node (or an admin
 * token removed from the admin table) keeps working here for at most this long. Tokens
 * with a use limit are never remembered, and no entry outlives the token's own expiry.
 */
export const TOKEN_CACHE_MS = 1000;
const TOKEN_CACHE_MAX = 10_000;

/** num_uses value of a token whose last use is spent: dead, as are its descendants. */
const USES_EXHAUSTED = -1;

export function tokenInfoOf(e: TokenEntry): TokenInfo {
  return {
    accessor: e.accessor,
    policies: e.policies,
    isRoot: e.policies.includes(ROOT_POLICY),
    displayName: e.displayName,
  };
}

/** A token check: the answer, and until when it may be kept (undefined: not at all). */
interface TokenCheck {
  auth: Authenticated | undefined;
  until: number | undefined;
}

const ADMIN_CHECK: TokenCheck = { auth: { info: ADMIN_TOKEN_INFO, entry: undefined }, until: Infinity };
const NO_TOKEN: TokenCheck = { auth: undefined, until: undefined };
const keptUntil = (c: TokenCheck): number | undefined => c.until;

/**
 * The token store. Tokens are kept only as SHA-256 hashes. A token is valid while it and
 * every ancestor exist, have not expired and have uses left, so a parent that lapses takes
 * its children with it without any background sweep.
 */
export class TokenService {
  /**
   * Successful checks by token hash, each until the earliest expiry in its chain (at most
   * TOKEN_CACHE_MS); a use-limited token is checked every time, since each use is spent.
   */
  readonly #cache: CachedEntries<TokenCheck>;

  constructor(
    private readonly deps: {
      db: Kysely<Database>;
      units: UnitsOfWork;
      repo: TokenRepo;
      clock: Clock;
      jobs: JobQueue;
      adminTokens: { isAdmin(token: string): Promise<boolean> };
      leases: LeaseService;
      peers?: PeerChanges;
    },
  ) {
    this.#cache = new CachedEntries({
      nowMs: () => deps.clock.now().getTime(),
      ttlMs: TOKEN_CACHE_MS,
      peers: deps.peers ?? new PeerChanges(),
      max: TOKEN_CACHE_MAX,
    });
  }

  /**
   * Resolves a presented token; undefined when it is not valid. A request spends one use
   * of a use-limited token; `spendUse: false` only inspects (sys/capabilities).
   */
  async authenticate(token: string, opts: { spendUse?: boolean } = {}): Promise<Authenticated | undefined> {
    if (!token) return undefined;
    const hash = hashToken(token);
    const check =
      this.#cache.get(hash) ?? (await this.#cache.load(hash, () => this.#check(token, hash, opts), keptUntil));
    return check.auth;
  }

  /** Checks a token against the store; `until` says how long the answer may be kept, if at all. */
  async #check(token: string, hash: string, opts: { spendUse?: boolean }): Promise<TokenCheck> {
    const ours = token.startsWith(TOKEN_PREFIX);
    if (!ours && (await this.deps.adminTokens.isAdmin(token))) return ADMIN_CHECK;
    const chain = await this.#validChain(hash);
    const entry = chain?.[0];
    if (!chain || !entry) {
      if (ours && (await this.deps.adminTokens.isAdmin(token))) return ADMIN_CHECK;
      return NO_TOKEN;
    }
    if (entry.numUses > 0 && opts.spendUse !== false) {
      // The last use marks the token exhausted rather than 0, which would mean unlimited.
      const next = entry.numUses === 1 ? USES_EXHAUSTED : entry.numUses - 1;
      if (!(await this.deps.repo.spendUse(entry.accessor, entry.numUses, next))) return NO_TOKEN;
      if (next === USES_EXHAUSTED) {
        // Its descendants die with it.
        this.#forgetEverywhere();
        await scheduleExpirySweep(this.deps.jobs, this.deps.db, this.deps.clock.now());
      }
    }
    const auth = { info: tokenInfoOf(entry), entry };
    if (chain.some((t) => t.numUses !== 0)) return { auth, until: undefined };
    let expiry = Infinity;
    for (const t of chain) if (t.expiresAt && t.expiresAt.getTime() < expiry) expiry = t.expiresAt.getTime();
    return { auth, until: expiry };
  }

  /** A remembered successful check of `token`, without waiting; undefined when authenticate must be awaited. */
  authenticateNow(token: string): Authenticated | undefined {
    return token ? this.#cache.get(hashToken(token))?.auth : undefined;
  }

  /** Any revocation, renewal or exhaustion may affect a whole subtree: forget every remembered check. */
  #forgetAll(): void {
    this.#cache.forgetHere();
  }

  /** After a committed revocation, renewal or exhaustion: here, and on the other workers (decision 0056). */
  #forgetEverywhere(): void {
    this.#cache.forget();
  }

  /** The entry of a valid token (no use spent), or undefined. */
  async findValid(token: string): Promise<TokenEntry | undefined> {
    return this.validByHash(hashToken(token));
  }

  async findValidByAccessor(accessor: string): Promise<TokenEntry> {
    const e = accessor ? await this.deps.repo.findByAccessor(accessor) : undefined;
    // The chain check needs the hash, which the accessor row carries.
    const valid = e ? await this.validByHash(e.hash) : undefined;
    if (!valid) throw invalid('invalid accessor', 'accessor');
    return valid;
  }

  /**
   * Creates a token for `caller`. `privileged` is true for root callers and callers with
   * `sudo` on the create path.
   */
  async create(
    caller: CallerToken,
    privileged: boolean,
    req: CreateTokenRequest,
  ): Promise<{ token: string; entry: TokenEntry; warnings: string[] }> {
    const now = this.deps.clock.now();
    const plan = planToken(
      {
        policies: caller.info.policies,
        accessor: caller.info.accessor || null,
        privileged: privileged || caller.info.isRoot,
      },
      req,
      now,
    );
    const token = req.id ? req.id : `${TOKEN_PREFIX}${randomBase58(32)}`;
    const entry: TokenEntry = {
      hash: hashToken(token),
      accessor: randomBase58(24),
      parentAccessor: plan.parentAccessor,
      policies: plan.policies,
      meta: plan.meta,
      displayName: plan.displayName,
      numUses: plan.numUses,
      renewable: plan.renewable,
      orphan: plan.orphan,
      ttl: plan.ttl,
      explicitMaxTtl: plan.explicitMaxTtl,
      period: plan.period,
      path: req.path,
      createdAt: now,
      expiresAt: plan.expiresAt,
      lastRenewalAt: null,
      boundCidrs: null,
      maxTtl: 0,
    };
    await this.#insert(entry);
    return { token, entry, warnings: plan.warnings };
  }

  /**
   * Creates the token an auth method's login hands out: an orphan (logins have no parent
   * token) with the method's policies, TTLs, use limit and bound CIDRs, already worked out.
   */
  async createForLogin(req: LoginTokenRequest): Promise<{ token: string; entry: TokenEntry }> {
    const now = this.deps.clock.now();
    const token = `${TOKEN_PREFIX}${randomBase58(32)}`;
    const entry: TokenEntry = {
      hash: hashToken(token),
      accessor: randomBase58(24),
      parentAccessor: null,
      policies: req.policies,
      meta: req.meta && Object.keys(req.meta).length > 0 ? req.meta : null,
      displayName: req.displayName,
      numUses: req.numUses,
      renewable: true,
      orphan: true,
      ttl: req.ttl,
      explicitMaxTtl: req.explicitMaxTtl,
      period: req.period,
      path: req.path,
      createdAt: now,
      expiresAt: req.ttl > 0 ? new Date(now.getTime() + req.ttl * 1000) : null,
      lastRenewalAt: null,
      boundCidrs: req.boundCidrs.length > 0 ? [...req.boundCidrs] : null,
      maxTtl: req.maxTtl,
    };
    await this.#insert(entry);
    return { token, entry };
  }

  async #insert(entry: TokenEntry): Promise<void> {
    await this.deps.units.readWrite(async (trx) => {
      await this.deps.repo.insert(entry, trx);
      if (entry.expiresAt) await scheduleExpirySweep(this.deps.jobs, trx, entry.expiresAt);
    });
  }

  async renew(entry: TokenEntry, increment: number): Promise<{ entry: TokenEntry; ttl: number; warnings: string[] }> {
    this.#forgetAll();
    const now = this.deps.clock.now();
    const plan = planRenewal(entry, increment, now);
    await this.deps.units.readWrite(async (trx) => {
      if (!(await this.deps.repo.updateExpiry(entry.accessor, plan.expiresAt, now, trx)))
        throw invalid('invalid token');
      if (plan.expiresAt) await scheduleExpirySweep(this.deps.jobs, trx, plan.expiresAt);
    });
    this.#forgetEverywhere();
    return {
      entry: { ...entry, expiresAt: plan.expiresAt, lastRenewalAt: now },
      ttl: plan.ttl,
      warnings: plan.warnings,
    };
  }

  /** Revokes a token, its descendants and every lease they obtained. */
  async revokeTree(accessor: string): Promise<void> {
    this.#forgetAll();
    const accessors = await this.deps.repo.subtreeAccessors(accessor);
    await this.deps.leases.revokeForTokens(accessors);
    await this.deps.repo.deleteByAccessors(accessors);
    // A check that started before the delete may have remembered the token meanwhile.
    this.#forgetEverywhere();
  }

  /** Revokes one token and its leases; its children become orphans. */
  async revokeOrphan(accessor: string): Promise<void> {
    this.#forgetAll();
    await this.deps.leases.revokeForTokens([accessor]);
    await this.deps.repo.orphanChildren(accessor);
    await this.deps.repo.deleteByAccessors([accessor]);
    this.#forgetEverywhere();
  }

  /**
   * Revokes tokens that expired or ran out of uses, with their descendants and leases,
   * as Vault's expiration manager does. Returns how many were found.
   */
  async sweepExpired(): Promise<number> {
    let total = 0;
    for (;;) {
      const dead = await this.deps.repo.listDeadAccessors(this.deps.clock.now(), 100);
      for (const accessor of dead) await this.revokeTree(accessor);
      total += dead.length;
      if (dead.length < 100) return total;
    }
  }

  /** Revokes every token created under a path prefix (an auth mount being disabled), with their subtrees. */
  async revokeByPathPrefix(prefix: string): Promise<number> {
    const accessors = await this.deps.repo.accessorsByPathPrefix(prefix);
    for (const accessor of accessors) await this.revokeTree(accessor);
    return accessors.length;
  }

  async listAccessors(): Promise<string[]> {
    return this.deps.repo.listAccessors();
  }

  private async validByHash(hash: string): Promise<TokenEntry | undefined> {
    return (await this.#validChain(hash))?.[0];
  }

  /** The token and its ancestors when all of them are alive, else undefined. */
  async #validChain(hash: string): Promise<TokenEntry[] | undefined> {
    const chain = await this.deps.repo.findWithAncestors(hash);
    const now = this.deps.clock.now();
    for (let i = 0; i < chain.length; i++) {
      const t = chain[i] as TokenEntry;
      if (isExpired(t, now) || t.numUses === USES_EXHAUSTED) return undefined;
      if (t.parentAccessor !== null && chain[i + 1]?.accessor !== t.parentAccessor) return undefined;
    }
    return chain;
  }
}
