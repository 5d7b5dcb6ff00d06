import { Worker } from 'node:worker_threads';

/**
 * Write-only units of work on a thread of their own, for SQLite. better-sqlite3 runs
 * every statement synchronously, so on the event loop a commit blocks the whole server
 * for its fsync (synchronous=FULL). A write-only unit (UnitsOfWork.writeOnly in
 * unit-of-work.ts) is instead recorded on the event loop with Kysely, as SQL text and
 * parameters, and run by a worker thread with its own connection, in one
 * `BEGIN IMMEDIATE … COMMIT`. The promise resolves once the commit is
 * durable, or rejects with the driver's error code (unique violations stay recognisable).
 *
 * The database has then two writers, which SQLite serialises with its write lock; the
 * event-loop connection opens its transactions with BEGIN IMMEDIATE (see database.ts) so
 * that a transaction that reads and then writes waits for the lock instead of failing
 * with a stale snapshot.
 *
 * The thread is also the only connection that checkpoints: the event-loop connection has
 * automatic checkpoints off, and the thread copies the WAL back into the database file
 * every second and whenever the WAL passes 10,000 pages. Hot index pages rewritten by
 * many commits are then copied once, and no request waits behind a checkpoint.
 */
export interface Statement {
  sql: string;
  parameters: readonly unknown[];
}

/** Consecutive statements with the same SQL, sent as one text and its parameter lists. */
export interface StatementRun {
  sql: string;
  parameters: (readonly unknown[])[];
}

/** What the thread is started with. */
export interface WriterData {
  path: string;
  walRestartPages?: number;
  checkpointIntervalMs?: number;
}

export type WriterRequest = { type: 'run'; id: number; statements: StatementRun[] } | { type: 'close' };
export type WriterReply =
  { id: number; ok: true } | { id: number; ok: false; code: string | undefined; message: string };

const WORKER_URL = new URL('./sqlite-writer-thread.js', import.meta.url);

export class SqliteWriter {
  #worker: Worker | undefined;
  #nextId = 1;
  readonly #pending = new Map<number, { resolve(): void; reject(err: unknown): void }>();
  #closed = false;

  /**
   * `walRestartPages`: the WAL size (pages) beyond which the thread starts it over
   * (sqlite-writer-thread.ts), and `checkpointIntervalMs` how often it looks (1 s); both
   * smaller only in tests.
   */
  constructor(
    private readonly path: string,
    private readonly opts: { walRestartPages?: number; checkpointIntervalMs?: number } = {},
  ) {}

  run(statements: Statement[]): Promise<void> {
    if (this.#closed) return Promise.reject(new Error('the SQLite writer is closed'));
    const worker = this.start();
    const id = this.#nextId++;
    return new Promise<void>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      worker.postMessage({ type: 'run', id, statements: runsOf(statements) } satisfies WriterRequest);
    });
  }

  /** Lets queued batches finish, then stops the thread and closes its connection. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const worker = this.#worker;
    if (!worker) return;
    while (this.#pending.size > 0) await new Promise((r) => setTimeout(r, 5));
    const exited = new Promise((r) => worker.once('exit', r));
    worker.postMessage({ type: 'close' } satisfies WriterRequest);
    await exited;
  }

  /** Starts the thread (also its WAL checkpoints) unless it runs already; `run` starts it too. */
  start(): Worker {
    if (this.#worker) return this.#worker;
    const worker = new Worker(WORKER_URL, {
      workerData: {
        path: this.path,
        walRestartPages: this.opts.walRestartPages,
        checkpointIntervalMs: this.opts.checkpointIntervalMs,
      } satisfies WriterData,
    });
    worker.on('message', (m: WriterReply) => {
      const p = this.#pending.get(m.id);
      if (!p) return;
      this.#pending.delete(m.id);
      if (m.ok) p.resolve();
      else p.reject(Object.assign(new Error(m.message), { code: m.code }));
    });
    const fail = (err: unknown) => {
      for (const p of this.#pending.values()) p.reject(err);
      this.#pending.clear();
      if (this.#worker === worker) this.#worker = undefined;
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the SQLite writer thread exited with code ${code}`)));
    this.#worker = worker;
    return worker;
  }
}

/** Groups consecutive statements of the same SQL (a batch's rows), so each text is posted once. */
function runsOf(statements: readonly Statement[]): StatementRun[] {
  const runs: StatementRun[] = [];
  let last: StatementRun | undefined;
  for (const st of statements) {
    if (last && last.sql === st.sql) last.parameters.push(st.parameters);
    else runs.push((last = { sql: st.sql, parameters: [st.parameters] }));
  }
  return runs;
}
