import { hostname } from 'node:os';
import type { Logger } from 'pino';
import { randomBase58 } from '../shared/ids.js';
import type { Metrics } from '../shared/metrics.js';
import type { Job, JobQueue } from './job-queue.js';

/** Throw from a handler to fail a job without retrying it. */
export class PermanentJobError extends Error {
  override name = 'PermanentJobError';
}

export interface JobContext {
  jobId: string;
  attempt: number;
  /** Aborted when the worker is shutting down past its grace period. */
  signal: AbortSignal;
}

export type JobHandler = (payload: unknown, ctx: JobContext) => Promise<void>;

export interface JobWorkerDeps {
  queue: JobQueue;
  logger: Logger;
  metrics?: Metrics;
  concurrency: number;
  pollIntervalMs: number;
  leaseSeconds: number;
}

/**
 * Runs queued jobs: polls the queue, claims up to `concurrency` jobs with a lease, keeps
 * the lease alive while a handler runs, and records success, retry or death. Handlers
 * must be idempotent: a job whose node died is run again by another.
 */
export class JobWorker {
  readonly id = `${hostname()}:${process.pid}:${randomBase58(6)}`;
  readonly #handlers = new Map<string, JobHandler>();
  readonly #running = new Set<Promise<void>>();
  readonly #abort = new AbortController();
  #timer: NodeJS.Timeout | undefined;
  #stopped = true;
  #polling = false;
  /** A nudge arrived during a poll: the poll may have missed the new job, so poll again at once. */
  #nudgedWhilePolling = false;

  constructor(private readonly deps: JobWorkerDeps) {}

  register(kind: string, handler: JobHandler): void {
    this.#handlers.set(kind, handler);
  }

  start(): void {
    this.#stopped = false;
    this.#schedule(0);
  }

  /** Wakes the poller now (after an enqueue on this node). */
  nudge(): void {
    if (this.#stopped) return;
    if (this.#polling) this.#nudgedWhilePolling = true;
    else this.#schedule(0);
  }

  #schedule(ms: number): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => void this.#poll(), ms);
    this.#timer.unref();
  }

  async #poll(): Promise<void> {
    if (this.#stopped || this.#polling) return;
    this.#polling = true;
    this.#nudgedWhilePolling = false;
    let claimed = 0;
    try {
      const free = this.deps.concurrency - this.#running.size;
      if (free > 0) {
        const jobs = await this.deps.queue.claim(this.id, free, this.deps.leaseSeconds);
        claimed = jobs.length;
        for (const job of jobs) this.#track(this.#run(job));
      }
    } catch (err) {
      this.deps.logger.warn({ err }, 'job poll failed');
    } finally {
      this.#polling = false;
    }
    if (!this.#stopped) this.#schedule(claimed > 0 || this.#nudgedWhilePolling ? 0 : this.deps.pollIntervalMs);
  }

  #track(p: Promise<void>): void {
    this.#running.add(p);
    void p.finally(() => {
      this.#running.delete(p);
      this.nudge();
    });
  }

  async #run(job: Job): Promise<void> {
    const log = this.deps.logger.child({ jobId: job.id, jobKind: job.kind, attempt: job.attempts });
    const handler = this.#handlers.get(job.kind);
    if (job.attempts > job.maxAttempts) {
      await this.deps.queue.fail(job, this.id, 'exceeded max attempts (the job was interrupted too often)', true);
      this.deps.metrics?.jobsFailed.inc({ kind: job.kind, outcome: 'dead' });
      log.error('job abandoned after too many interrupted attempts');
      return;
    }
    if (!handler) {
      await this.deps.queue.fail(job, this.id, `no handler for job kind "${job.kind}"`);
      this.deps.metrics?.jobsFailed.inc({ kind: job.kind, outcome: 'retry' });
      log.warn('no handler registered for job kind');
      return;
    }
    const beat = setInterval(
      () => {
        void this.deps.queue.heartbeat(job.id, this.id, this.deps.leaseSeconds).catch(() => {});
      },
      Math.max(1000, (this.deps.leaseSeconds * 1000) / 3),
    );
    beat.unref();
    try {
      await handler(job.payload, { jobId: job.id, attempt: job.attempts, signal: this.#abort.signal });
      await this.deps.queue.complete(job.id, this.id);
      this.deps.metrics?.jobsCompleted.inc({ kind: job.kind });
      log.debug('job done');
    } catch (err) {
      const permanent = err instanceof PermanentJobError;
      const message = err instanceof Error ? err.message : String(err);
      const outcome = await this.deps.queue.fail(job, this.id, message, permanent).catch(() => 'retry' as const);
      this.deps.metrics?.jobsFailed.inc({ kind: job.kind, outcome });
      if (outcome === 'dead') log.error({ err }, 'job failed for good');
      else log.warn({ err }, 'job failed; will retry');
    } finally {
      clearInterval(beat);
    }
  }

  /** Runs due jobs in this process until none is left; for tests and the CLI. */
  async runUntilIdle(maxRounds = 1000): Promise<number> {
    let ran = 0;
    for (let i = 0; i < maxRounds; i++) {
      const jobs = await this.deps.queue.claim(this.id, this.deps.concurrency, this.deps.leaseSeconds);
      if (jobs.length === 0) break;
      ran += jobs.length;
      await Promise.all(jobs.map((j) => this.#run(j)));
    }
    return ran;
  }

  /** Stops claiming and waits up to `timeoutMs` for running jobs; then aborts them. */
  async stop(timeoutMs: number): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    const all = Promise.allSettled([...this.#running]);
    let t: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      all.then(() => false),
      new Promise<boolean>((r) => {
        t = setTimeout(() => r(true), timeoutMs);
      }),
    ]);
    if (t) clearTimeout(t);
    if (timedOut) {
      this.#abort.abort();
      this.deps.logger.warn(
        { running: this.#running.size },
        'jobs still running at shutdown; their leases will expire and another start will retry them',
      );
    }
  }

  get runningCount(): number {
    return this.#running.size;
  }
}
