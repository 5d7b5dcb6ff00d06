import type { Insertable, Kysely, Transaction } from 'kysely';
import type { Db } from '../db/database.js';
import { skipLockedClause } from '../db/dialect.js';
import { isUniqueViolation } from '../db/constraint-errors.js';
import { RowInsert } from '../db/one-param-query.js';
import { PgJsonInsert } from '../db/pg-json-rows.js';
import type { Database, JobsTable } from '../db/schema.js';
import type { Clock } from '../shared/clock.js';
import { addSeconds } from '../shared/clock.js';
import { timeOrderedUuid } from '../shared/ids.js';

export interface Job {
  id: string;
  kind: string;
  payload: unknown;
  attempts: number;
  maxAttempts: number;
  runAt: Date;
}

export interface EnqueueOptions {
  kind: string;
  payload?: unknown;
  /** Earliest time to run; now when omitted. */
  runAt?: Date;
  maxAttempts?: number;
  /**
   * At most one *queued* job per key: a second enqueue with the same key is a no-op. The
   * key is released when a worker claims the job, so a running job can schedule its successor.
   */
  dedupeKey?: string;
}

export type Executor = Kysely<Database> | Transaction<Database>;

/** PostgreSQL: jobs enqueued together (enqueueMany), a deduplicated one left out. */
const PG_INSERT_JOBS = new PgJsonInsert('jobs', 'on conflict (dedupe_key) do nothing');

/**
 * A durable job queue in the database. Jobs are enqueued inside the caller's
 * transaction, claimed with a lease (`FOR UPDATE SKIP LOCKED` on PostgreSQL, so several
 * nodes never run one job twice), retried with exponential backoff, and reclaimed after
 * a crash once their lease runs out.
 */
export class JobQueue {
  constructor(private readonly deps: { db: Db; clock: Clock }) {}

  readonly #insert = new RowInsert((row: Insertable<JobsTable>) => this.kysely.insertInto('jobs').values(row));
  readonly #insertUnlessQueued = new RowInsert((row: Insertable<JobsTable>) =>
    this.kysely
      .insertInto('jobs')
      .values(row)
      .onConflict((oc) => oc.column('dedupe_key').doNothing()),
  );

  private get kysely(): Kysely<Database> {
    return this.deps.db.kysely;
  }

  /**
   * Enqueues on the given executor (pass the caller's transaction). Returns the job id, or undefined when deduplicated.
   */
  async enqueue(executor: Executor, opts: EnqueueOptions): Promise<string | undefined> {
    const row = this.#row(opts);
    const id = row.id;
    if (opts.dedupeKey === undefined) {
      await this.#insert.run(executor, row);
      return id;
    }
    // ON CONFLICT keeps a surrounding PostgreSQL transaction usable, unlike a caught error.
    const res = await this.#insertUnlessQueued.run(executor, row).catch((err: unknown) => {
      if (isUniqueViolation(err)) return { numAffectedRows: 0n };
      throw err;
    });
    return Number(res.numAffectedRows ?? 0n) > 0 ? id : undefined;
  }

  #row(opts: EnqueueOptions) {
    const at = this.deps.clock.now();
    const now = at.toISOString();
    // Time-ordered: a job row is appended to the key's index, not written to a random page of it.
    const id = timeOrderedUuid(at.getTime());
    return {
      id,
      kind: opts.kind,
      payload: JSON.stringify(opts.payload ?? null),
      status: 'queued' as const,
      attempts: 0,
      max_attempts: opts.maxAttempts ?? 8,
      run_at: (opts.runAt ?? this.deps.clock.now()).toISOString(),
      lease_until: null,
      locked_by: null,
      last_error: null,
      dedupe_key: opts.dedupeKey ?? null,
      created_at: now,
      updated_at: now,
    };
  }

  /**
   * Enqueues without reading anything back, so it also runs in a write-only unit of work
   * (db/unit-of-work.ts): whether a job with the same dedupe key was queued already stays
   * unknown. Needs a dedupe key (without one, use `enqueue`).
   */
  async enqueueUnlessQueued(executor: Executor, opts: EnqueueOptions & { dedupeKey: string }): Promise<void> {
    await this.#insertUnlessQueued.run(executor, this.#row(opts));
  }

  /**
   * Enqueues several jobs in one statement, without reading anything back; a job whose
   * dedupe key is queued already is left out.
   */
  async enqueueMany(executor: Executor, jobs: readonly EnqueueOptions[]): Promise<void> {
    if (jobs.length === 0) return;
    const rows = jobs.map((j) => this.#row(j));
    // PostgreSQL: one statement of constant text for any number of jobs (PgJsonInsert).
    if (this.deps.db.kind === 'postgres') return PG_INSERT_JOBS.run(executor, rows);
    await executor
      .insertInto('jobs')
      .values(rows)
      .onConflict((oc) => oc.column('dedupe_key').doNothing())
      .execute();
  }

  /** Claims up to `limit` due jobs for `workerId`, including running jobs whose lease expired. */
  async claim(workerId: string, limit: number, leaseSeconds: number): Promise<Job[]> {
    const now = this.deps.clock.now();
    const nowIso = now.toISOString();
    const due = this.kysely
      .selectFrom('jobs')
      .select('id')
      .where((eb) =>
        eb.or([
          eb.and([eb('status', '=', 'queued'), eb('run_at', '<=', nowIso)]),
          eb.and([eb('status', '=', 'running'), eb('lease_until', '<', nowIso)]),
        ]),
      )
      .orderBy('run_at')
      .limit(limit)
      .modifyEnd(skipLockedClause(this.deps.db.kind));
    const rows = await this.kysely
      .updateTable('jobs')
      .set((eb) => ({
        status: 'running',
        attempts: eb('attempts', '+', 1),
        lease_until: addSeconds(now, leaseSeconds).toISOString(),
        locked_by: workerId,
        dedupe_key: null,
        updated_at: nowIso,
      }))
      .where('id', 'in', due)
      .returningAll()
      .execute();
    return rows.map(toJob);
  }

  /** Extends the lease of a job this worker still holds. */
  async heartbeat(jobId: string, workerId: string, leaseSeconds: number): Promise<boolean> {
    const now = this.deps.clock.now();
    const res = await this.kysely
      .updateTable('jobs')
      .set({ lease_until: addSeconds(now, leaseSeconds).toISOString(), updated_at: now.toISOString() })
      .where('id', '=', jobId)
      .where('locked_by', '=', workerId)
      .where('status', '=', 'running')
      .executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  async complete(jobId: string, workerId: string): Promise<void> {
    await this.kysely
      .updateTable('jobs')
      .set({
        status: 'done',
        lease_until: null,
        dedupe_key: null,
        last_error: null,
        updated_at: this.deps.clock.now().toISOString(),
      })
      .where('id', '=', jobId)
      .where('locked_by', '=', workerId)
      .execute();
  }

  /** Records a failure: back to the queue after a backoff, or dead when out of attempts. */
  async fail(job: Job, workerId: string, error: string, permanent = false): Promise<'retry' | 'dead'> {
    const now = this.deps.clock.now();
    const dead = permanent || job.attempts >= job.maxAttempts;
    await this.kysely
      .updateTable('jobs')
      .set({
        status: dead ? 'dead' : 'queued',
        run_at: dead ? job.runAt.toISOString() : addSeconds(now, backoffSeconds(job.attempts)).toISOString(),
        lease_until: null,
        locked_by: null,
        last_error: error.slice(0, 2000),
        updated_at: now.toISOString(),
      })
      .where('id', '=', job.id)
      .where('locked_by', '=', workerId)
      .execute();
    return dead ? 'dead' : 'retry';
  }

  /**
   * Puts every running job back in the queue. Only for a single-node SQLite start, where
   * no other process can hold a lease, so a crash's leftovers run at once.
   */
  async requeueAllRunning(): Promise<number> {
    const res = await this.kysely
      .updateTable('jobs')
      .set({ status: 'queued', lease_until: null, locked_by: null, updated_at: this.deps.clock.now().toISOString() })
      .where('status', '=', 'running')
      .executeTakeFirst();
    return Number(res.numUpdatedRows);
  }

  /** Jobs by status, for /metrics and tests. */
  async depth(): Promise<Record<JobsTable['status'], number>> {
    const rows = await this.kysely
      .selectFrom('jobs')
      .select(['status', (eb) => eb.fn.countAll<number>().as('n')])
      .groupBy('status')
      .execute();
    const out = { queued: 0, running: 0, done: 0, dead: 0 };
    for (const r of rows) out[r.status] = Number(r.n);
    return out;
  }

  async find(jobId: string): Promise<(Job & { status: JobsTable['status']; lastError: string | null }) | undefined> {
    const row = await this.kysely.selectFrom('jobs').selectAll().where('id', '=', jobId).executeTakeFirst();
    return row ? { ...toJob(row), status: row.status, lastError: row.last_error } : undefined;
  }

  /** Deletes finished jobs older than the cut-off, keeping the table small. */
  async purgeFinished(olderThan: Date): Promise<number> {
    const res = await this.kysely
      .deleteFrom('jobs')
      .where('status', '=', 'done')
      .where('updated_at', '<', olderThan.toISOString())
      .executeTakeFirst();
    return Number(res.numDeletedRows);
  }
}

/** 2, 4, 8 … seconds, capped at one hour, with up to 20% jitter. */
export function backoffSeconds(attempt: number): number {
  const base = Math.min(3600, 2 ** Math.max(1, attempt));
  return Math.ceil(base * (1 + Math.random() * 0.2));
}

function toJob(row: JobsTable): Job {
  return {
    id: row.id,
    kind: row.kind,
    payload: JSON.parse(row.payload) as unknown,
    attempts: row.attempts,
    maxAttempts: row.max_attempts,
    runAt: new Date(row.run_at),
  };
}
