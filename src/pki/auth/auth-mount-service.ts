import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { UnitsOfWork } from '../../db/unit-of-work.js';
import type { Clock } from '../../shared/clock.js';
import { CachedValue, PeerChanges } from '../../shared/peer-changes.js';
import { cidrsAllow } from '../../shared/cidr.js';
import { forbidden, notFound } from '../../shared/errors.js';
import { Gate } from '../../shared/gate.js';
import { uuid } from '../../shared/ids.js';
import { matchMount } from '../mounts/mount.js';
import type { TokenEntry } from '../tokens/token.js';
import type { TokenService } from '../tokens/token-service.js';
import { assertAuthType, assertNoAuthPathConflict, assertTtlsConsistent, normalizeAuthPath } from './auth-mount.js';
import type { AuthMount } from './auth-mount.js';
import type { AuthMountRepo } from './auth-mount-repo.js';
import { planLoginToken } from './login-token.js';
import type { TokenParams } from './login-token.js';

export interface EnableAuthInput {
  type: string;
  description?: string;
  defaultLeaseTtl?: number;
  maxLeaseTtl?: number;
  config?: Record<string, unknown>;
  options?: Record<string, string>;
  local?: boolean;
  sealWrap?: boolean;
}

/** A successful login: the token made, with the TTL it was granted. */
export interface LoginOutcome {
  token: string;
  entry: TokenEntry;
}

/**
 * Same window as the secrets-engine mount table: a method enabled on another node is found
 * at once (a miss re-reads), a tune or disable made elsewhere is seen within a second.
 */
const CACHE_MS = 1000;

/**
 * Logins doing their database work at once on one node. A flood of logins (most of them
 * failing, in an attack) then holds at most this many connections of the PostgreSQL pool
 * (10 by default), and every other request still finds one; the excess logins wait here.
 */
export const LOGIN_CONCURRENCY = 4;

/**
 * Auth mounts (`sys/auth`) and the one way every method's login ends: a token from the token
 * store with the role's policies and TTLs.
 */
export class AuthMountService {
  readonly #table: CachedValue<AuthMount[]>;
  private readonly purgers: Array<(mount: AuthMount) => Promise<void>> = [];
  readonly #logins = new Gate(LOGIN_CONCURRENCY);

  constructor(
    private readonly deps: {
      db: Kysely<Database>;
      units: UnitsOfWork;
      repo: AuthMountRepo;
      clock: Clock;
      tokens: TokenService;
      peers?: PeerChanges;
    },
  ) {
    const peers = deps.peers ?? new PeerChanges();
    this.#table = new CachedValue({ nowMs: () => deps.clock.now().getTime(), ttlMs: CACHE_MS, peers });
  }

  /** Registers what removes a method's data when its mount is disabled. */
  onDisable(purge: (mount: AuthMount) => Promise<void>): void {
    this.purgers.push(purge);
  }

  async list(): Promise<AuthMount[]> {
    return this.reload();
  }

  /** The mount serving `path` (relative to auth/) and the rest of the path. */
  async resolve(path: string): Promise<{ mount: AuthMount; rest: string } | undefined> {
    const cached = this.cachedMounts();
    const hit = cached ? matchMount(cached, path) : undefined;
    return hit ?? matchMount(await this.reload(), path);
  }

  /** `resolve` from the cached table without waiting; null when it must be awaited. */
  resolveNow(path: string): { mount: AuthMount; rest: string } | null {
    const cached = this.cachedMounts();
    return (cached && matchMount(cached, path)) ?? null;
  }

  private cachedMounts(): AuthMount[] | undefined {
    return this.#table.now();
  }

  private async reload(): Promise<AuthMount[]> {
    return this.#table.load(() => this.deps.repo.list());
  }

  async get(rawPath: string): Promise<AuthMount> {
    const path = rawPath.replace(/^\/+/, '').replace(/\/+$/, '');
    const m = await this.deps.repo.findByPath(path);
    if (!m) throw notFound(`no auth method at auth/${path}/`);
    return m;
  }

  async enable(rawPath: string, input: EnableAuthInput): Promise<AuthMount> {
    const path = normalizeAuthPath(rawPath);
    const type = assertAuthType(input.type);
    const defaultLeaseTtl = input.defaultLeaseTtl ?? 0;
    const maxLeaseTtl = input.maxLeaseTtl ?? 0;
    assertTtlsConsistent(defaultLeaseTtl, maxLeaseTtl);
    const now = this.deps.clock.now();
    const mount: AuthMount = {
      id: uuid(),
      path,
      type,
      description: input.description ?? '',
      defaultLeaseTtl,
      maxLeaseTtl,
      config: input.config ?? {},
      options: input.options ?? {},
      local: input.local ?? false,
      sealWrap: input.sealWrap ?? false,
      methodConfig: null,
      createdAt: now,
      updatedAt: now,
    };
    await this.deps.units.readWrite(async (trx) => {
      assertNoAuthPathConflict(
        path,
        (await this.deps.repo.list(trx)).map((m) => m.path),
      );
      await this.deps.repo.insert(mount, trx);
    });
    this.#table.forget();
    return mount;
  }

  async tune(
    rawPath: string,
    input: Partial<Pick<AuthMount, 'description' | 'defaultLeaseTtl' | 'maxLeaseTtl' | 'options'>> & {
      config?: Record<string, unknown>;
    },
  ): Promise<AuthMount> {
    const current = await this.get(rawPath);
    const next: AuthMount = {
      ...current,
      description: input.description ?? current.description,
      defaultLeaseTtl: input.defaultLeaseTtl ?? current.defaultLeaseTtl,
      maxLeaseTtl: input.maxLeaseTtl ?? current.maxLeaseTtl,
      config: { ...current.config, ...input.config },
      options: input.options ? { ...current.options, ...input.options } : current.options,
      updatedAt: this.deps.clock.now(),
    };
    assertTtlsConsistent(next.defaultLeaseTtl, next.maxLeaseTtl);
    if (!(await this.deps.repo.update(next))) throw notFound(`no auth method at auth/${current.path}/`);
    this.#table.forget();
    return next;
  }

  /**
   * The method's configuration as stored now: read from the database rather than from the
   * cached mount table, so a configuration written through another node applies at once.
   */
  async methodConfig(mount: AuthMount): Promise<Record<string, unknown> | null> {
    const current = await this.deps.repo.findByPath(mount.path);
    return current && current.id === mount.id ? current.methodConfig : null;
  }

  /** Stores the method's own configuration (auth/jwt/config). */
  async setMethodConfig(mount: AuthMount, methodConfig: Record<string, unknown>): Promise<AuthMount> {
    const next = { ...mount, methodConfig, updatedAt: this.deps.clock.now() };
    if (!(await this.deps.repo.update(next))) throw notFound(`no auth method at auth/${mount.path}/`);
    this.#table.forget();
    return next;
  }

  /**
   * Removes the mount, its roles and secret ids, and revokes the tokens its logins made, as
   * Vault does. Disabling a path with no method succeeds.
   */
  async disable(rawPath: string): Promise<void> {
    const path = rawPath.replace(/^\/+/, '').replace(/\/+$/, '');
    const mount = await this.deps.repo.findByPath(path);
    if (!mount) return;
    await this.deps.repo.delete(mount.id);
    this.#table.forget();
    for (const purge of this.purgers) await purge(mount);
    await this.deps.tokens.revokeByPathPrefix(`auth/${mount.path}/`);
  }

  /** Runs a method's login within the node's login concurrency (LOGIN_CONCURRENCY). */
  login<T>(work: () => Promise<T>): Promise<T> {
    return this.#logins.run(work);
  }

  /** Ends a successful login: a token with the role's policies and TTLs (see planLoginToken). */
  async issueToken(
    mount: AuthMount,
    params: TokenParams,
    identity: { displayName: string; meta: Record<string, string> | null; boundCidrs?: readonly string[] },
    clientIp: string,
  ): Promise<LoginOutcome> {
    // Vault refuses the login itself, not only later uses of the token, from outside the token's CIDRs.
    const bound =
      identity.boundCidrs && identity.boundCidrs.length > 0 ? identity.boundCidrs : params.token_bound_cidrs;
    if (!cidrsAllow(bound, clientIp)) throw forbidden('permission denied');
    return this.deps.tokens.createForLogin(planLoginToken(mount, params, identity));
  }
}
