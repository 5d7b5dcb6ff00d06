import type { Logger } from 'pino';
import type { BlobStore } from '../../blob/blob-store.js';
import type { JobQueue } from '../../jobs/job-queue.js';
import { cipherOf, isSealedContent, isSealedText, sealBuffer, sealText } from '../../secrets/content-cipher.js';
import type { ContentSealing } from '../../secrets/content-cipher.js';
import type { Clock } from '../../shared/clock.js';
import type { Metrics } from '../../shared/metrics.js';
import type { EncryptionProgress, StateEncryptionRepo } from './state-encryption-repo.js';

export const ENCRYPT_STATE_JOB = 'tfe.encrypt-stored-state';

/** Records looked at per query; a run stops after RUN_MS and its successor goes on from the cursor. */
const BATCH = 50;
const RUN_MS = 5000;
const KINDS = ['blob', 'inline', 'output'] as const;

export interface StateEncryptionDeps {
  repo: StateEncryptionRepo;
  blobs: BlobStore;
  jobs: JobQueue;
  /** Where the successor job is enqueued. */
  db: Parameters<JobQueue['enqueue']>[0];
  sealing: ContentSealing;
  clock: Clock;
  logger: Logger;
  metrics: Metrics;
  /** Rewrites the SQLite file once everything is sealed, so no freed page keeps plain text (Db.scrub). */
  scrub?: () => Promise<{ walEmptied: boolean }>;
  /** Records per query and the length of one run (tests make them small). */
  batch?: number;
  runMs?: number;
}

/**
 * Seals the state content and output values stored in plain text before encryption
 * existed (decision 0029): blob files or chunks, then inline rows, then output values,
 * each walked in key order. Where it stands is one settings row, written after every
 * batch, so a crash (or a stop) resumes from the last batch; sealing a record twice is
 * harmless (a sealed one is skipped, and each replacement is atomic and conditional on
 * the plain bytes still being there). Readers accept both forms throughout.
 */
export class StateEncryption {
  constructor(private readonly deps: StateEncryptionDeps) {}

  /** At start and hourly (housekeeping): enqueue the job unless everything is sealed. */
  async schedule(): Promise<void> {
    const p = await this.deps.repo.progress();
    if (!this.deps.sealing.encrypt) {
      // Plain content may be written from now on: a later start with encryption must look again.
      if (p?.phase === 'done') await this.deps.repo.saveProgress(undefined);
      return;
    }
    if (p?.phase === 'done') return;
    await this.deps.jobs.enqueue(this.deps.db, { kind: ENCRYPT_STATE_JOB, dedupeKey: ENCRYPT_STATE_JOB });
  }

  /** Refreshes the remaining-records gauge from the shared progress row. */
  async observe(): Promise<void> {
    const p = await this.deps.repo.progress();
    for (const k of KINDS) {
      const left = !p ? 0 : p.phase === 'done' ? 0 : Math.max(0, p.totals[k] - p.scanned[k]);
      this.deps.metrics.stateEncryptionRemaining.set({ kind: k }, left);
    }
  }

  /** One run of the job: goes on from the saved cursor for up to RUN_MS, then hands over to a successor. */
  async run(signal?: AbortSignal): Promise<void> {
    if (!this.deps.sealing.encrypt) return;
    let p = (await this.deps.repo.progress()) ?? (await this.start());
    if (p.phase === 'done') return;
    const until = performance.now() + (this.deps.runMs ?? RUN_MS);
    do {
      p = await this.step(p);
      await this.deps.repo.saveProgress(p);
    } while (p.phase !== 'done' && performance.now() < until && !signal?.aborted);
    const log = { phase: p.phase, scanned: p.scanned, totals: p.totals, sealed: p.sealed };
    if (p.phase === 'done') {
      this.deps.logger.info(log, 'state encryption: every stored state and output value is sealed');
      if (this.deps.scrub && p.sealed.inline + p.sealed.output > 0) {
        const r = await this.deps.scrub();
        this.deps.logger.info(
          r,
          'state encryption: rebuilt the database file, which kept the plain bytes in free pages',
        );
      }
      return;
    }
    this.deps.logger.info(log, 'state encryption: in progress');
    await this.deps.jobs.enqueue(this.deps.db, { kind: ENCRYPT_STATE_JOB, dedupeKey: ENCRYPT_STATE_JOB });
  }

  private async start(): Promise<EncryptionProgress> {
    let blobs = 0;
    for (let after = ''; ;) {
      const names = await this.deps.blobs.list(after, 1000);
      blobs += names.length;
      if (names.length < 1000) break;
      after = names[names.length - 1] as string;
    }
    const p: EncryptionProgress = {
      phase: 'blob',
      after: '',
      totals: {
        blob: blobs,
        inline: await this.deps.repo.countInline(),
        output: await this.deps.repo.countPlainOutputs(),
      },
      scanned: { blob: 0, inline: 0, output: 0 },
      sealed: { blob: 0, inline: 0, output: 0 },
    };
    this.deps.logger.info({ totals: p.totals }, 'state encryption: sealing content stored in plain text');
    await this.deps.repo.saveProgress(p);
    return p;
  }

  /** One batch of the current phase; the next phase starts when a batch comes back short. */
  private async step(p: EncryptionProgress): Promise<EncryptionProgress> {
    const next = { ...p, scanned: { ...p.scanned }, sealed: { ...p.sealed } };
    const sealed = (kind: (typeof KINDS)[number]) => {
      next.sealed[kind]++;
      this.deps.metrics.stateEncryptionSealed.inc({ kind });
    };
    const batch = this.deps.batch ?? BATCH;
    let keys: string[] = [];
    if (p.phase === 'blob') {
      keys = await this.deps.blobs.list(p.after, batch);
      for (const sha of keys) if (await this.deps.blobs.sealStored(sha)) sealed('blob');
    } else if (p.phase === 'inline') {
      const rows = await this.deps.repo.inlineAfter(p.after, batch);
      keys = rows.map((r) => r.sha256);
      for (const r of rows) {
        if (isSealedContent(r.data)) continue;
        const s = sealBuffer(this.deps.sealing.current(), r.data, cipherOf(this.deps.sealing));
        if (await this.deps.repo.sealInline(r.sha256, r.data, s)) sealed('inline');
      }
    } else if (p.phase === 'output') {
      const rows = await this.deps.repo.plainOutputsAfter(p.after, batch);
      keys = rows.map((r) => r.id);
      for (const r of rows) {
        if (isSealedText(r.value)) continue;
        if (
          await this.deps.repo.sealOutput(
            r.id,
            r.value,
            sealText(this.deps.sealing.current(), r.value, cipherOf(this.deps.sealing)),
          )
        ) {
          sealed('output');
        }
      }
    }
    if (p.phase !== 'done') next.scanned[p.phase] += keys.length;
    if (keys.length === batch) return { ...next, after: keys[keys.length - 1] as string };
    const order: EncryptionProgress['phase'][] = ['blob', 'inline', 'output', 'done'];
    const phase = order[order.indexOf(p.phase) + 1] as EncryptionProgress['phase'];
    return {
      ...next,
      phase,
      after: '',
      ...(phase === 'done' ? { finishedAt: this.deps.clock.now().toISOString() } : {}),
    };
  }
}
