/**
 * Units of work: the one way the server writes (docs/decisions/0050-one-unit-of-work-api.md).
 *
 * A unit is a function given a transaction; its mode is named at the call site:
 *
 * - `readWrite(fn)`: an ordinary transaction, reads see its own writes. On a SQLite file the
 *   COMMIT is written without waiting for the disk and the WAL is fsynced on the threadpool
 *   (decisions 0016 and 0027); the promise resolves once the commit is on disk.
 * - `writeOnly(fn)`: `fn` only records statements, which run together in one transaction
 *   after it returns: on a SQLite file on the writer thread (sqlite-writer.ts), on
 *   PostgreSQL as one statement where they allow it (`asOneStatement`), elsewhere on a
 *   connection of the pool. Nothing in it can be read: a SELECT or RETURNING throws at
 *   once, and so does reading a statement's rows or affected row count, which are not known
 *   until the commit. Statements go in with `write(tx, query)`, the compiled statements of
 *   one-param-query.ts (ParamQuery.run, RowInsert, RowsInsert) and `sql\`…\`.execute(tx)`.
 * - `group(...)`: a group commit of read-write units; `batches(...)`: a group commit of items
 *   whose writer opens the units itself (write-only for pure data). Both share BatchQueue.
 *
 * Every unit is durable when its promise resolves.
 */
import { open } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import {
  CompiledQuery,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  sql,
} from 'kysely';
import type { Compilable, DatabaseConnection, Driver, QueryResult, RootOperationNode, Transaction } from 'kysely';
import { BatchQueue } from '../shared/batch-queue.js';
import type { DatabaseKind } from './database.js';
import type { Database } from './schema.js';
import type { SqliteWriter, Statement } from './sqlite-writer.js';

/** The transaction of a read-write unit. */
export type ReadWriteTx = Transaction<Database>;

declare const writeOnlyBrand: unique symbol;
/** The transaction of a write-only unit: statements are recorded, nothing can be read. */
export type WriteOnlyTx = Kysely<Database> & { readonly [writeOnlyBrand]: true };

/** A read attempted inside a write-only unit. */
export class WriteOnlyReadError extends Error {
  constructor(what: string) {
    super(`a write-only unit of work cannot read (${what}): use a read-write unit`);
    this.name = 'WriteOnlyReadError';
  }
}

/** Adds a statement to a write-only unit (or runs it in a read-write one) without reading its result. */
export async function write(tx: Kysely<Database>, query: Compilable<unknown>): Promise<void> {
  await tx.executeQuery(query.compile());
}

/**
 * On a write-only transaction: records a compiled statement at once, without Kysely's
 * executor (RowsInsert uses it for the rows of a group commit).
 */
export const RECORD_STATEMENT = Symbol('strongroom.recordStatement');

export type RecordStatement = (sql: string, parameters: readonly unknown[]) => void;

export interface UnitsOfWorkDeps {
  kind: DatabaseKind;
  kysely: Kysely<Database>;
  /** SQLite file: the writer thread that runs write-only units. */
  writer?: SqliteWriter;
  /** SQLite file: the WAL, fsynced off the event loop after read-write commits. */
  walPath?: string;
}

export interface GroupOptions {
  /** Most units one commit carries; more wait for the next one. */
  maxBatch: number;
  /** Whether units are grouped at all; when false each unit is a transaction of its own at once. */
  grouped?: boolean;
}

/** Units that may share a commit (UnitsOfWork.group). */
export interface UnitGroup {
  /**
   * A read-write unit that may share its commit with concurrent ones. It runs inside its own
   * savepoint: when it throws, only its own writes are undone and only its promise rejects.
   * When the shared COMMIT itself fails, every unit of the group rejects with that error.
   */
  readWrite<T>(fn: (tx: ReadWriteTx) => Promise<T>): Promise<T>;
  /** Resolves once nothing is queued or being committed (shutdown). */
  drain(): Promise<void>;
}

type Settled = { ok: true; value: unknown } | { ok: false; err: unknown };

interface QueuedUnit {
  fn: (tx: ReadWriteTx) => Promise<unknown>;
  resolve(v: unknown): void;
  reject(err: unknown): void;
}

/** The units of work of one database (Db.units). */
export class UnitsOfWork {
  readonly #lazy: LazySync | undefined;
  readonly #dialect: () => DialectParts;

  constructor(private readonly deps: UnitsOfWorkDeps) {
    this.#lazy = deps.walPath ? new LazySync(deps.kysely, deps.walPath) : undefined;
    this.#dialect = deps.kind === 'postgres' ? postgresParts : sqliteParts;
  }

  get kind(): DatabaseKind {
    return this.deps.kind;
  }

  /** Whether read-write commits fsync off the event loop (a SQLite file). */
  get lazySync(): boolean {
    return this.#lazy !== undefined;
  }

  /** One read-write transaction, durable when the promise resolves. */
  readWrite<T>(fn: (tx: ReadWriteTx) => Promise<T>): Promise<T> {
    if (this.#lazy) return this.#lazy.transaction(fn);
    return this.deps.kysely.transaction().execute(fn);
  }

  /**
   * One write-only transaction: `fn` records its statements, which then run together in one
   * transaction (on a SQLite file on the writer thread), durable when the promise resolves.
   * Fails with the driver's error (a unique violation stays recognisable) and undoes all.
   */
  async writeOnly(fn: (tx: WriteOnlyTx) => Promise<void>): Promise<void> {
    const statements: Statement[] = [];
    const copy = this.deps.writer !== undefined;
    await fn(recorder(statements, this.#dialect(), copy));
    if (statements.length === 0) return;
    if (this.deps.writer) return this.deps.writer.run(statements);
    const one = this.deps.kind === 'postgres' ? asOneStatement(statements) : undefined;
    if (one) {
      await this.deps.kysely.executeQuery(CompiledQuery.raw(one.sql, [...one.parameters]));
      return;
    }
    await this.deps.kysely.transaction().execute(async (trx) => {
      for (const s of statements) await trx.executeQuery(CompiledQuery.raw(s.sql, [...s.parameters]));
    });
  }

  /**
   * A group commit of read-write units. Alone, a unit commits at once (after the current
   * tick, so that requests already running can join it); units that arrive while a commit
   * runs form the next one, one commit in flight at a time (decision 0016). Where a single
   * writer makes commits the bottleneck (SQLite) this shares one fsync among many requests;
   * PostgreSQL groups concurrent commits itself, so callers pass `grouped: false` there.
   */
  group(opts: GroupOptions): UnitGroup {
    if (opts.grouped === false) return { readWrite: (fn) => this.readWrite(fn), drain: () => Promise.resolve() };
    const queue = new BatchQueue<QueuedUnit>((batch) => this.#commitGroup(batch), opts.maxBatch);
    return {
      readWrite: <T>(fn: (tx: ReadWriteTx) => Promise<T>) =>
        new Promise<T>((resolve, reject) => queue.push({ fn, resolve: resolve as (v: unknown) => void, reject })),
      drain: () => queue.drain(),
    };
  }

  async #commitGroup(batch: QueuedUnit[]): Promise<void> {
    const results: Settled[] = [];
    let failure: { err: unknown } | null = null;
    try {
      await this.readWrite(async (trx) => {
        for (const unit of batch) {
          await sql`savepoint unit`.execute(trx);
          try {
            const value = await unit.fn(trx);
            await sql`release savepoint unit`.execute(trx);
            results.push({ ok: true, value });
          } catch (err) {
            await sql`rollback to savepoint unit`.execute(trx);
            await sql`release savepoint unit`.execute(trx);
            results.push({ ok: false, err });
          }
        }
      });
    } catch (err) {
      failure = { err };
    }
    batch.forEach((unit, i) => {
      const r = results[i];
      if (failure) unit.reject(failure.err);
      else if (r?.ok) unit.resolve(r.value);
      else unit.reject(r?.err);
    });
  }

  /**
   * A group commit of items: `commit` gets up to `maxBatch` items queued together and opens
   * the units that write them (`writeOnly` for pure data), settling each item itself.
   * `inFlight` commits may run at once: one where a single writer serialises them (SQLite),
   * a few on PostgreSQL, which overlaps concurrent commits (decision 0049).
   */
  batches<I>(commit: (batch: I[]) => Promise<void>, opts: { maxBatch: number; inFlight?: number }): BatchQueue<I> {
    return new BatchQueue<I>(commit, opts.maxBatch, opts.inFlight ?? 1);
  }

  /** Waits for the fsyncs in flight and closes the WAL's descriptor. */
  async close(): Promise<void> {
    await this.#lazy?.close();
  }
}

/** PostgreSQL's limit on the parameters of one statement. */
const PG_MAX_PARAMETERS = 65_535;

/**
 * The statements of a write-only unit as one statement for PostgreSQL, one round trip
 * instead of a BEGIN, each statement and a COMMIT, or undefined where that could change
 * their meaning. One statement is atomic on its own. INSERTs into different tables become
 * the data-modifying WITH clauses of one statement, which PostgreSQL runs atomically too, in
 * one snapshot, checking foreign keys at its end. One snapshot would change what a
 * statement sees of another's rows (an ON CONFLICT against a row inserted just before it
 * fails instead of doing nothing), so two statements on one table, or any statement but an
 * INSERT, stay in a transaction; so do statements with a string literal or several
 * commands, and more parameters in all than one statement may carry.
 */
export function asOneStatement(statements: readonly Statement[]): Statement | undefined {
  if (statements.length === 1) return statements[0];
  const parts: string[] = [];
  const parameters: unknown[] = [];
  const tables = new Set<string>();
  for (const st of statements) {
    const table = /^\s*insert\s+into\s+"?([a-z_][a-z0-9_]*)"?[\s(]/i.exec(st.sql)?.[1];
    if (!table || tables.has(table) || /['$;]/.test(st.sql.replace(/\$\d+/g, ''))) return undefined;
    tables.add(table);
    const offset = parameters.length;
    if (offset + st.parameters.length > PG_MAX_PARAMETERS) return undefined;
    parts.push(offset === 0 ? st.sql : st.sql.replace(/\$(\d+)/g, (_m, n: string) => `$${Number(n) + offset}`));
    parameters.push(...st.parameters);
  }
  const last = parts.pop()!;
  return { sql: `with ${parts.map((p, i) => `w${i} as (${p})`).join(', ')} ${last}`, parameters };
}

// ---- write-only recording ----------------------------------------------------

interface DialectParts {
  adapter: SqliteAdapter | PostgresAdapter;
  compiler: SqliteQueryCompiler | PostgresQueryCompiler;
  introspector: (db: Kysely<unknown>) => SqliteIntrospector | PostgresIntrospector;
}

const sqliteParts = (): DialectParts => ({
  adapter: new SqliteAdapter(),
  compiler: new SqliteQueryCompiler(),
  introspector: (db) => new SqliteIntrospector(db),
});

const postgresParts = (): DialectParts => ({
  adapter: new PostgresAdapter(),
  compiler: new PostgresQueryCompiler(),
  introspector: (db) => new PostgresIntrospector(db),
});

/**
 * What a statement of a write-only unit answers: nothing. Kysely's builders read the
 * affected row count of every INSERT, UPDATE and DELETE they execute, so `.execute()` on
 * a builder throws too; `write(tx, query)` adds a builder's statement without reading.
 */
const UNREADABLE: QueryResult<never> = Object.freeze({
  get rows(): never {
    throw new WriteOnlyReadError('the rows of a statement');
  },
  get numAffectedRows(): never {
    throw new WriteOnlyReadError('the affected row count of a statement; add it with write(tx, query)');
  },
  get numChangedRows(): never {
    throw new WriteOnlyReadError('the changed row count of a statement');
  },
  get insertId(): never {
    throw new WriteOnlyReadError('the id of an inserted row');
  },
});

const READING_SQL = /^\s*(select|with|values|pragma|explain)\b|\breturning\b/i;

/** Why a compiled statement would read, or undefined when it only writes. */
function readsRows(q: CompiledQuery): string | undefined {
  const node = q.query as RootOperationNode & { returning?: unknown };
  if (node.kind === 'SelectQueryNode') return 'a SELECT';
  if (node.returning !== undefined) return 'a RETURNING clause';
  if (node.kind === 'RawNode' && READING_SQL.test(q.sql)) return 'a statement that answers rows';
  return undefined;
}

/**
 * Buffers copied into memory of their own when the statements are posted to the writer
 * thread: a Buffer is often a view into a larger allocation (Node's 8 KB pool), and
 * posting a view clones all of the memory behind it.
 */
function exact(v: unknown): unknown {
  return Buffer.isBuffer(v) && (v.byteOffset !== 0 || v.byteLength !== v.buffer.byteLength) ? new Uint8Array(v) : v;
}

/** A Kysely whose queries are only recorded into `into` (a write-only unit's transaction). */
function recorder(into: Statement[], parts: DialectParts, copy: boolean): WriteOnlyTx {
  const keep = copy ? (ps: readonly unknown[]) => ps.map(exact) : (ps: readonly unknown[]) => ps;
  const connection: DatabaseConnection = {
    executeQuery<R>(q: CompiledQuery): Promise<QueryResult<R>> {
      const reads = readsRows(q);
      if (reads) return Promise.reject(new WriteOnlyReadError(reads));
      into.push({ sql: q.sql, parameters: keep(q.parameters) });
      return Promise.resolve(UNREADABLE);
    },
    // eslint-disable-next-line require-yield
    async *streamQuery() {
      throw new WriteOnlyReadError('a streamed query');
    },
  };
  const driver: Driver = {
    init: async () => {},
    acquireConnection: async () => connection,
    beginTransaction: async () => {},
    commitTransaction: async () => {},
    rollbackTransaction: async () => {},
    releaseConnection: async () => {},
    destroy: async () => {},
  };
  const kysely = new Kysely<Database>({
    dialect: {
      createAdapter: () => parts.adapter,
      createDriver: () => driver,
      createIntrospector: (db) => parts.introspector(db),
      createQueryCompiler: () => parts.compiler,
    },
  });
  const record: RecordStatement = (sql, parameters) => {
    into.push({ sql, parameters: keep(parameters) });
  };
  return Object.assign(kysely, { [RECORD_STATEMENT]: record }) as unknown as WriteOnlyTx;
}

// ---- the fsync off the event loop (SQLite file) --------------------------------

/**
 * The commit runs with synchronous=NORMAL, which in WAL mode writes the transaction's frames
 * to the WAL without an fsync; the setting is switched inside the connection's lock, so no
 * other commit runs with it. fsync is per file, not per descriptor: once an fsync of the WAL
 * that began after the commit returns, the commit's frames (and the WAL header) are on disk,
 * which is what synchronous=FULL would have waited for inside COMMIT. Concurrent commits
 * share their fsyncs (see `#syncWal`).
 */
class LazySync {
  // One descriptor of the WAL for the life of the database: the event-loop connection keeps
  // the WAL file in place (checkpoints reset it, they do not replace it). On an error the
  // descriptor is dropped and the next sync opens a fresh one.
  #wal: Promise<FileHandle> | null = null;
  #running: Promise<void> | null = null;
  #next: Promise<void> | null = null;

  constructor(
    private readonly kysely: Kysely<Database>,
    private readonly walPath: string,
  ) {}

  async transaction<T>(fn: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
    const value = await this.kysely.connection().execute(async (conn) => {
      await sql`pragma synchronous = NORMAL`.execute(conn);
      try {
        return await conn.transaction().execute(fn);
      } finally {
        await sql`pragma synchronous = FULL`.execute(conn);
      }
    });
    await this.#syncWal();
    return value;
  }

  async #fsyncWal(): Promise<void> {
    this.#wal ??= open(this.walPath, 'r');
    const handle = this.#wal;
    try {
      await (await handle).sync();
    } catch (err) {
      if (this.#wal === handle) this.#wal = null;
      void handle.then((h) => h.close()).catch(() => undefined);
      throw err;
    }
  }

  /**
   * Group commit of the fsyncs: commits made while an fsync runs share the next one, which
   * begins after that fsync ends (so after each of those commits). Under concurrency this is
   * one fsync per batch of commits instead of one per commit queued on the threadpool.
   */
  #syncWal(): Promise<void> {
    if (!this.#running) {
      this.#running = this.#fsyncWal().finally(() => {
        this.#running = null;
      });
      return this.#running;
    }
    this.#next ??= this.#running
      .catch(() => undefined)
      .then(() => {
        this.#next = null;
        return this.#syncWal();
      });
    return this.#next;
  }

  async close(): Promise<void> {
    while (this.#running || this.#next) await (this.#next ?? this.#running)?.catch(() => undefined);
    const handle = this.#wal;
    this.#wal = null;
    if (handle) await (await handle.catch(() => undefined))?.close();
  }
}
