import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { JobQueue } from '../../jobs/job-queue.js';
import type { Clock } from '../../shared/clock.js';
import { invalid } from '../../shared/errors.js';
import { timeOrderedBase58 } from '../../shared/ids.js';
import type { MountInfo } from '../pki-route.js';
import { expiryBucket, scheduleExpirySweep } from './expiry-sweep.js';
import { leaseEnvelope } from './lease.js';
import type { Lease } from './lease.js';
import type { LeaseRepo } from './lease-repo.js';

/** Revokes the secret behind a lease (e.g. adds a certificate to its CRL). Must be idempotent. */
export type LeaseRevoker = (lease: Lease) => Promise<void>;

export interface CreateLeaseInput {
  mount: MountInfo;
  /** Request path relative to the mount, e.g. "issue/web". */
  path: string;
  kind: string;
  data: unknown;
  ttlSeconds: number;
  /** Accessor of the token that obtained the secret (ctx.token?.accessor). */
  tokenAccessor?: string;
}

const NOTHING = (): void => undefined;
/** Expiry hours remembered as scheduled (about a year of hours). */
const SWEEPS_REMEMBERED = 10_000;

export class LeaseService {
  private readonly revokers = new Map<string, LeaseRevoker>();

  constructor(private readonly deps: { db: Kysely<Database>; repo: LeaseRepo; clock: Clock; jobs: JobQueue }) {}

  /** Registers how leases of one kind are revoked (one revoker per kind). */
  registerRevoker(kind: string, revoker: LeaseRevoker): void {
    this.revokers.set(kind, revoker);
  }

  /**
   * Records a lease and returns its id and duration for the response envelope. Pass the
   * caller's transaction so the lease exists exactly when the secret does.
   */
  async create(
    input: CreateLeaseInput,
    ex?: Kysely<Database> | Transaction<Database>,
  ): Promise<{ leaseId: string; leaseDuration: number }> {
    const lease = this.prepare(input);
    const committed = await this.insertMany(ex ?? this.deps.db, [lease]);
    // In a caller's transaction the commit is not ours to see: the sweep is written again next time.
    if (!ex) committed();
    return leaseEnvelope(lease);
  }

  /**
   * A lease ready to be written, without writing it: a caller that batches writes (the
   * certificate group commit) hands it to `insertMany` later in its own transaction.
   */
  prepare(input: CreateLeaseInput): Lease {
    const now = this.deps.clock.now();
    const path = input.path.replace(/^\/+/, '').replace(/\/+$/, '');
    const ttl = Math.max(0, Math.floor(input.ttlSeconds));
    return {
      // Time-ordered, so that lease rows are appended to the primary key index (24 characters, as before).
      id: `${input.mount.path}${path}/${timeOrderedBase58(now.getTime(), 16)}`,
      mountId: input.mount.id,
      kind: input.kind,
      data: input.data,
      tokenAccessor: input.tokenAccessor ? input.tokenAccessor : null,
      issuedAt: now,
      expiresAt: new Date(now.getTime() + ttl * 1000),
    };
  }

  /**
   * Writes prepared leases and schedules their expiry sweeps (one per expiry hour), in `ex`.
   * Returns what to call once `ex` has committed: from then on this process writes no sweep
   * job again for those hours (the job's dedupe key would keep it to one anyway; this saves
   * the statement, one in five of a certificate group commit on PostgreSQL).
   */
  async insertMany(ex: Kysely<Database> | Transaction<Database>, leases: readonly Lease[]): Promise<() => void> {
    if (leases.length === 0) return NOTHING;
    await this.deps.repo.insertMany(ex, leases);
    const buckets = new Map<number, Date>();
    for (const l of leases) {
      const bucket = expiryBucket(l.expiresAt);
      if (!this.#sweepsCommitted.has(bucket)) buckets.set(bucket, l.expiresAt);
    }
    if (buckets.size === 0) return NOTHING;
    for (const at of buckets.values()) await scheduleExpirySweep(this.deps.jobs, ex, at);
    return () => {
      // Hours already swept are dropped first; a sweep job cannot be due for them again.
      if (this.#sweepsCommitted.size >= SWEEPS_REMEMBERED) {
        const current = expiryBucket(this.deps.clock.now());
        for (const b of this.#sweepsCommitted) if (b < current) this.#sweepsCommitted.delete(b);
        if (this.#sweepsCommitted.size >= SWEEPS_REMEMBERED) this.#sweepsCommitted.clear();
      }
      for (const b of buckets.keys()) this.#sweepsCommitted.add(b);
    };
  }

  /** Expiry hours whose sweep job a transaction of this process has committed. */
  readonly #sweepsCommitted = new Set<number>();

  async lookup(id: string): Promise<Lease> {
    if (!id) throw invalid('missing lease ID', 'lease_id');
    const lease = await this.deps.repo.find(id);
    if (!lease) throw invalid('invalid lease', 'lease_id');
    return lease;
  }

  /** PKI leases are never renewable; unknown leases are reported as such. */
  async renew(id: string): Promise<never> {
    await this.lookup(id);
    throw invalid('lease is not renewable', 'lease_id');
  }

  /** Revokes the secret, then forgets the lease. Unknown ids succeed (already revoked). */
  async revoke(id: string): Promise<void> {
    if (!id) throw invalid('missing lease ID', 'lease_id');
    const lease = await this.deps.repo.find(id);
    if (lease) await this.revokeLease(lease);
  }

  /** `prefix` is a path: `pki/issue` covers `pki/issue/…`, not `pki/issuer/…`. */
  async revokePrefix(prefix: string, force = false): Promise<number> {
    const p = prefix.replace(/^\/+/, '').replace(/\/*$/, '/');
    if (p === '/') throw invalid('a lease prefix is required', 'prefix');
    const leases = await this.deps.repo.listByPrefix(p);
    for (const l of leases) {
      if (force) await this.revokeLease(l).catch(() => this.deps.repo.delete(l.id));
      else await this.revokeLease(l);
    }
    return leases.length;
  }

  async listIds(prefix: string): Promise<string[]> {
    return (await this.deps.repo.listByPrefix(prefix)).map((l) => l.id);
  }

  /** Revokes every lease obtained by these tokens (called when the tokens are revoked). */
  async revokeForTokens(accessors: readonly string[]): Promise<void> {
    for (const l of await this.deps.repo.listByTokens(accessors)) await this.revokeLease(l);
  }

  /**
   * Forgets leases past their expiry. The secret is not revoked: an expired certificate
   * needs no revocation (Vault's PKI revoke callback skips expired certificates too).
   */
  async sweepExpired(): Promise<number> {
    return this.deps.repo.deleteExpired(this.deps.clock.now());
  }

  /** Drops a removed mount's leases without revoking: the mount's data is gone with it. */
  async forgetMount(mountId: string): Promise<void> {
    await this.deps.repo.deleteByMount(mountId);
  }

  private async revokeLease(lease: Lease): Promise<void> {
    const revoker = this.revokers.get(lease.kind);
    if (revoker) await revoker(lease);
    await this.deps.repo.delete(lease.id);
  }
}
