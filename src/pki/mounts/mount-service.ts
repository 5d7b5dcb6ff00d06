import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { UnitsOfWork } from '../../db/unit-of-work.js';
import type { JobQueue } from '../../jobs/job-queue.js';
import type { Clock } from '../../shared/clock.js';
import { CachedValue, PeerChanges } from '../../shared/peer-changes.js';
import { addSeconds } from '../../shared/clock.js';
import { notFound } from '../../shared/errors.js';
import { uuid } from '../../shared/ids.js';
import type { MountInfo } from '../pki-route.js';
import {
  assertMountType,
  assertNoPathConflict,
  assertTtlsConsistent,
  matchMount,
  normalizeMountPath,
  toMountInfo,
} from './mount.js';
import type { Mount, MountConfigExtras } from './mount.js';
import type { MountRepo } from './mount-repo.js';

/** Removes everything a module stored for a mount. Must be idempotent: it may run twice. */
export type MountDisableHook = (mount: MountInfo) => Promise<void>;

export const MOUNT_PURGE_JOB = 'pki.mount-purge';

export interface EnableMountInput {
  type: string;
  description?: string;
  defaultLeaseTtl?: number;
  maxLeaseTtl?: number;
  config?: MountConfigExtras;
  options?: Record<string, string>;
  local?: boolean;
  sealWrap?: boolean;
}

export interface TuneMountInput {
  description?: string;
  defaultLeaseTtl?: number;
  maxLeaseTtl?: number;
  config?: MountConfigExtras;
  options?: Record<string, string>;
}

/**
 * How long a node trusts its copy of the mount table. Writes made on this node are seen at
 * once; a mount enabled on another node is found at once too (a miss re-reads the table);
 * a tune or disable made on another node is seen within this window. Every mount's data is
 * keyed by the mount's id, so a stale entry can at worst serve a request of a just-removed
 * mount for one second (the purge job, which runs again a minute later, removes what such a
 * request wrote); it can never mix the data of two mounts that shared a path.
 */
const CACHE_MS = 1000;

export class MountService {
  private readonly hooks: MountDisableHook[] = [];
  readonly #table: CachedValue<Mount[]>;

  constructor(
    private readonly deps: {
      db: Kysely<Database>;
      units: UnitsOfWork;
      repo: MountRepo;
      clock: Clock;
      jobs: JobQueue;
      peers?: PeerChanges;
    },
  ) {
    const peers = deps.peers ?? new PeerChanges();
    this.#table = new CachedValue({ nowMs: () => deps.clock.now().getTime(), ttlMs: CACHE_MS, peers });
  }

  /** After a committed change: the table is read again here, and on the other workers (decision 0056). */
  #forget(): void {
    this.#table.forget();
  }

  /** Registers a hook run when a mount is disabled (before its purge is considered done). */
  onDisable(hook: MountDisableHook): void {
    this.hooks.push(hook);
  }

  async list(): Promise<Mount[]> {
    return (await this.current()).mounts;
  }

  /**
   * The mount serving `path` (relative to /v1), with the rest of the path. A miss on a
   * cached table re-reads it first, so a mount just enabled on another node is found at once.
   */
  async resolve(path: string): Promise<{ mount: Mount; rest: string } | undefined> {
    const { mounts, fresh } = await this.current();
    const hit = matchMount(mounts, path);
    if (hit || fresh) return hit;
    return matchMount(await this.reload(), path);
  }

  /**
   * `resolve` answered from the cached table without waiting: the hit, or null when `resolve`
   * must be awaited instead (no trusted table, or a miss, which `resolve` checks again).
   */
  resolveNow(path: string): { mount: Mount; rest: string } | undefined | null {
    const mounts = this.cachedMounts();
    return mounts ? (matchMount(mounts, path) ?? null) : null;
  }

  /** The cached mount table while it may still be trusted. */
  private cachedMounts(): Mount[] | undefined {
    return this.#table.now();
  }

  private async current(): Promise<{ mounts: Mount[]; fresh: boolean }> {
    const cached = this.cachedMounts();
    return cached ? { mounts: cached, fresh: false } : { mounts: await this.reload(), fresh: true };
  }

  private async reload(): Promise<Mount[]> {
    return this.#table.load(() => this.deps.repo.list());
  }

  async get(rawPath: string): Promise<Mount> {
    const path = rawPath.replace(/^\/+/, '').replace(/\/+$/, '');
    const m = await this.deps.repo.findByPath(path);
    if (!m) throw notFound(`no mount at ${path}/`);
    return m;
  }

  async enable(rawPath: string, input: EnableMountInput): Promise<Mount> {
    const path = normalizeMountPath(rawPath);
    const type = assertMountType(input.type);
    const defaultLeaseTtl = input.defaultLeaseTtl ?? 0;
    const maxLeaseTtl = input.maxLeaseTtl ?? 0;
    assertTtlsConsistent(defaultLeaseTtl, maxLeaseTtl);
    const now = this.deps.clock.now();
    const mount: Mount = {
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
      createdAt: now,
      updatedAt: now,
    };
    await this.deps.units.readWrite(async (trx) => {
      assertNoPathConflict(
        path,
        (await this.deps.repo.list(trx)).map((m) => m.path),
      );
      await this.deps.repo.insert(mount, trx);
    });
    this.#forget();
    return mount;
  }

  async tune(rawPath: string, input: TuneMountInput): Promise<Mount> {
    const current = await this.get(rawPath);
    const next: Mount = {
      ...current,
      description: input.description ?? current.description,
      defaultLeaseTtl: input.defaultLeaseTtl ?? current.defaultLeaseTtl,
      maxLeaseTtl: input.maxLeaseTtl ?? current.maxLeaseTtl,
      config: { ...current.config, ...input.config },
      options: input.options ? { ...current.options, ...input.options } : current.options,
      updatedAt: this.deps.clock.now(),
    };
    assertTtlsConsistent(next.defaultLeaseTtl, next.maxLeaseTtl);
    if (!(await this.deps.repo.update(next))) throw notFound(`no mount at ${current.path}/`);
    this.#forget();
    return next;
  }

  /**
   * Removes the mount and all of its data. The row goes first, in a transaction that also
   * enqueues a purge job, so the path is free at once and the data is removed even if this
   * process dies; the hooks then run here as well so the answer reflects a clean state.
   * Disabling a path with no mount succeeds, as in Vault.
   */
  async disable(rawPath: string): Promise<void> {
    const path = rawPath.replace(/^\/+/, '').replace(/\/+$/, '');
    const mount = await this.deps.repo.findByPath(path);
    if (!mount) return;
    const info = toMountInfo(mount);
    await this.deps.units.readWrite(async (trx) => {
      if (!(await this.deps.repo.delete(mount.id, trx))) return;
      await this.deps.jobs.enqueue(trx, {
        kind: MOUNT_PURGE_JOB,
        payload: { mount: info },
        runAt: addSeconds(this.deps.clock.now(), 60),
        dedupeKey: `${MOUNT_PURGE_JOB}:${mount.id}`,
      });
    });
    this.#forget();
    await this.purge(info);
  }

  /** Runs every disable hook for a removed mount (the purge job calls this too). */
  async purge(mount: MountInfo): Promise<void> {
    for (const hook of this.hooks) await hook(mount);
  }
}
