import type { BlobStore } from '../../blob/blob-store.js';
import type { JobQueue } from '../../jobs/job-queue.js';
import type { Clock } from '../../shared/clock.js';
import type { Logger } from 'pino';
import type { StateRepos } from './state-repos.js';

export const STATE_MAINTENANCE_JOB = 'tfe.state-maintenance';

export interface StateMaintenanceDeps {
  repos: StateRepos;
  blobs: BlobStore;
  jobs: JobQueue;
  clock: Clock;
  logger: Logger;
  settings: {
    softDeletePurgeDays: number;
    retentionKeepLatest: number;
    retentionMaxAgeDays: number;
    maintenanceIntervalSeconds: number;
  };
}

const BATCH = 500;

/** Stored blobs younger than this are never taken for orphans: their version may be about to commit. */
export const ORPHAN_MIN_AGE_MS = 3_600_000;

class StillReferenced extends Error {}

export interface MaintenanceReport {
  purged: number;
  expired: number;
  blobsDeleted: number;
}

/**
 * Background upkeep of state storage, run by the job worker:
 *   1. soft-deleted backing data older than its grace period becomes permanently deleted;
 *   2. retention deletes old versions (specification, Limits: at least the newest 100
 *      states overall and the newest state of every workspace are kept, the rest after
 *      six months; current versions never; see `retentionMayDelete`);
 *   3. blobs no version references any more are removed.
 * Blobs are shared between versions with identical content, so a blob goes only when
 * nothing references it; the collector locks the blob's row before it looks for
 * references, and writers that find the row marked store the bytes again.
 */
export class StateMaintenance {
  constructor(private readonly deps: StateMaintenanceDeps) {}

  /** Runs the three steps; each works in batches so no transaction grows large. */
  async run(signal?: AbortSignal): Promise<MaintenanceReport> {
    const now = this.deps.clock.now();
    const { repos, settings } = this.deps;
    let purged = 0;
    for (;;) {
      signal?.throwIfAborted();
      const due = await repos.versions.softDeletedDue(repos.versions.db, now, settings.softDeletePurgeDays, BATCH);
      let moved = 0;
      for (const v of due) {
        const ok = await repos.units.readWrite((trx) => repos.versions.purgeBackingData(trx, v.id));
        if (ok) moved++;
      }
      purged += moved;
      if (due.length < BATCH || moved === 0) break;
    }
    const expired = await this.expire(now, signal);
    const blobsDeleted = await this.collectBlobs(signal);
    if (purged + expired + blobsDeleted > 0) {
      this.deps.logger.info({ purged, expired, blobsDeleted }, 'state maintenance removed old state data');
    }
    return { purged, expired, blobsDeleted };
  }

  /**
   * Retention. The bound is computed once per run: versions created meanwhile only move
   * the newest states forward, so a stale bound keeps more, never less. Batches resume
   * where the previous one ended, so protected old versions are read once per run.
   */
  private async expire(now: Date, signal?: AbortSignal): Promise<number> {
    const { repos, settings } = this.deps;
    if (settings.retentionMaxAgeDays <= 0) return 0;
    let before = new Date(now.getTime() - settings.retentionMaxAgeDays * 86_400_000);
    if (settings.retentionKeepLatest > 0) {
      const floor = await repos.versions.nthNewestStateCreatedAt(repos.versions.db, settings.retentionKeepLatest);
      if (!floor) return 0;
      if (floor < before) before = floor;
    }
    let expired = 0;
    let from: Date | null = null;
    for (;;) {
      signal?.throwIfAborted();
      const batch = await repos.versions.retentionCandidates(repos.versions.db, before, from, BATCH);
      if (batch.length === 0) break;
      const n = await repos.units.readWrite((trx) =>
        repos.versions.deleteUnprotected(
          trx,
          batch.map((c) => c.id),
        ),
      );
      expired += n;
      // Nothing went (every one became protected meanwhile): the next run looks again.
      if (n === 0 || batch.length < BATCH) break;
      from = batch[batch.length - 1]!.createdAt;
    }
    return expired;
  }

  /** Removes blobs that no state version references. */
  async collectBlobs(signal?: AbortSignal): Promise<number> {
    const { repos } = this.deps;
    let deleted = 0;
    for (;;) {
      signal?.throwIfAborted();
      const shas = await repos.blobs.unreferencedBlobs(repos.versions.db, BATCH);
      let progress = 0;
      for (const sha of shas) {
        try {
          const done = await repos.units.readWrite(async (trx) => {
            if (!(await repos.blobs.markBlobDeleting(trx, sha, this.deps.clock.now()))) return false;
            // Checked after taking the row: a writer that touched it has committed by now.
            if (await repos.blobs.blobReferenced(trx, sha)) throw new StillReferenced();
            await this.deps.blobs.delete(sha);
            return true;
          });
          if (done) deleted++;
          progress++;
        } catch (err) {
          if (!(err instanceof StillReferenced)) throw err;
        }
      }
      if (shas.length < BATCH || progress === 0) return deleted;
    }
  }

  /**
   * Removes stored blobs that no row refers to and that were last written over an hour
   * ago: what a crash left between writing a blob and committing the version that
   * references it (or a commit that failed). Run by the housekeeping job, at start-up and
   * hourly. The age keeps uploads in flight safe: a blob is written (or, when its content
   * was already stored, touched) just before its row is committed. Each removal takes the
   * blob's row as a tombstone first, in the collector's protocol (collectBlobs). Then the
   * temporary files of writes that stopped over an hour ago go too (a cluster worker killed
   * mid-write). Returns how many blobs it removed.
   */
  async collectOrphanBlobs(signal?: AbortSignal): Promise<number> {
    const { repos, blobs, clock } = this.deps;
    const cutoff = new Date(clock.now().getTime() - ORPHAN_MIN_AGE_MS);
    let removed = 0;
    let batch: Array<{ sha256: string; size: number }> = [];
    const sweep = async () => {
      const live = await repos.blobs.liveBlobs(
        repos.versions.db,
        batch.map((b) => b.sha256),
      );
      for (const b of batch) {
        if (live.has(b.sha256)) continue;
        const done = await repos.units
          .readWrite(async (trx) => {
            if (!(await repos.blobs.claimOrphanBlob(trx, b.sha256, b.size, clock.now()))) return false;
            if (await repos.blobs.blobReferenced(trx, b.sha256)) throw new StillReferenced();
            await blobs.delete(b.sha256);
            return true;
          })
          .catch((err: unknown) => {
            if (err instanceof StillReferenced) return false;
            throw err;
          });
        if (done) removed++;
      }
      batch = [];
    };
    for await (const b of blobs.writtenBefore(cutoff)) {
      signal?.throwIfAborted();
      batch.push(b);
      if (batch.length >= BATCH) await sweep();
    }
    await sweep();
    if (removed > 0) this.deps.logger.info({ removed }, 'removed stored state blobs that nothing refers to');
    const partial = await blobs.removePartialWrites(cutoff);
    if (partial > 0)
      this.deps.logger.info({ partial }, 'removed the temporary files of state writes that never finished');
    return removed;
  }

  /** Queues the next run at the next multiple of the interval (one job per slot across nodes). */
  async scheduleNext(): Promise<void> {
    const every = Math.max(60, this.deps.settings.maintenanceIntervalSeconds) * 1000;
    const at = new Date((Math.floor(this.deps.clock.now().getTime() / every) + 1) * every);
    await this.deps.jobs.enqueue(this.deps.repos.versions.db, {
      kind: STATE_MAINTENANCE_JOB,
      runAt: at,
      dedupeKey: `${STATE_MAINTENANCE_JOB}@${at.toISOString()}`,
    });
  }
}
