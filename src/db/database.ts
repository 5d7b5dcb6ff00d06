import { randomUUID } from 'node:crypto';
import { open } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, sql } from 'kysely';
import pg from 'pg';
import type { Database } from './schema.js';
import { PgChangeFeed } from './pg-change-feed.js';
import { configureSqlite } from './sqlite-pragmas.js';
import { SqliteWriter } from './sqlite-writer.js';
import { ensurePrivateDir, ensurePrivateFile, tightenIfPresent } from '../shared/private-files.js';

export type DatabaseKind = 'sqlite' | 'postgres';

export interface Db {
  readonly kind: DatabaseKind;
  readonly kysely: Kysely<Database>;
  /**
   * Runs a write-only transaction: `fn` may only write, and must not depend on what its
   * statements return (they answer no rows on SQLite). On a SQLite file it runs on the
   * writer thread (sqlite-writer.ts) so the commit's fsync does not block the event loop;
   * elsewhere it is an ordinary transaction.
   */
  writeTransaction(fn: (tx: Kysely<Database>) => Promise<void>): Promise<void>;
  /**
   * SQLite file only: runs `fn` as one transaction on the event-loop connection whose COMMIT
   * writes the WAL without waiting for the disk, then fsyncs the WAL on the threadpool, and
   * resolves with `fn`'s value once the commit is on disk. Meanwhile the event loop serves
   * other requests (decision 0016).
   */
  readonly lazySyncTransaction?: <T>(fn: (trx: Kysely<Database>) => Promise<T>) => Promise<T>;
  /**
   * A number that changes whenever another process commits: on SQLite any commit by another
   * connection to the database file (`data_version`); on PostgreSQL a commit by another node
   * to the tables in-process caches hold (pg-change-feed.ts). Commits made through `kysely`
   * do not move it. In-process caches use it to drop what they hold when someone else wrote.
   */
  readonly externalChanges?: () => number;
  /**
   * SQLite file only: rebuilds the database file (VACUUM) and empties the WAL (checkpoint
   * TRUNCATE), so freed pages and old WAL frames keep none of the bytes they held. Blocks
   * the event loop for about as long as copying the file takes: for rare maintenance only.
   */
  readonly scrub?: () => Promise<{ walEmptied: boolean }>;
  /** Closes every connection. */
  destroy(): Promise<void>;
}

// int8 (count(*), sums) arrives as a string from pg; every integer we keep fits a double.
pg.types.setTypeParser(20, (v) => Number(v));

export interface OpenDatabaseOptions {
  url: string;
  poolSize?: number;
}

/** Opens SQLite (WAL, foreign keys, synchronous=FULL) or a PostgreSQL pool from a URL. */
export function openDatabase(opts: OpenDatabaseOptions): Db {
  if (/^postgres(ql)?:\/\//.test(opts.url)) {
    const feed = new PgChangeFeed(opts.url, randomUUID());
    // application_name lets an operator count the server's connections in pg_stat_activity; the URL may name another.
    // strongroom.node tells the change triggers which node wrote (pg-change-feed.ts).
    const pool = new pg.Pool({
      connectionString: opts.url,
      max: opts.poolSize ?? 10,
      application_name: 'strongroom',
      options: `-c strongroom.node=${feed.nodeId}`,
    });
    // A dropped idle connection must not crash the process; the pool replaces it.
    pool.on('error', () => {});
    const kysely = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    return {
      kind: 'postgres',
      kysely,
      writeTransaction: (fn) => kysely.transaction().execute(fn),
      externalChanges: () => feed.version(),
      destroy: async () => {
        await feed.close();
        await kysely.destroy();
      },
    };
  }
  const path = opts.url.replace(/^sqlite:/, '');
  const inMemory = path === ':memory:' || path === '';
  if (!inMemory) {
    ensurePrivateDir(dirname(path));
    ensurePrivateFile(path);
    for (const extra of ['-wal', '-shm']) tightenIfPresent(`${path}${extra}`);
  }
  const sqlite = new SqliteDatabase(path);
  configureSqlite(sqlite);
  const kysely = new Kysely<Database>({
    dialect: new SqliteDialect({ database: withStatementCache(sqlite, { beginImmediate: !inMemory }) }),
  });
  // An in-memory database is private to its connection: no second writer there.
  const writer = inMemory ? undefined : new SqliteWriter(path);
  if (writer) {
    // The writer thread folds the WAL back into the database file (sqlite-writer-thread.ts),
    // so the event loop never runs a checkpoint inside one of its commits.
    sqlite.pragma('wal_autocheckpoint = 0');
    writer.start();
  }
  const dataVersion = sqlite.prepare('pragma data_version').pluck();
  const lazy = inMemory ? undefined : lazySync(kysely, `${path}-wal`);
  return {
    kind: 'sqlite',
    kysely,
    writeTransaction: (fn) => (writer ? writer.transaction(fn) : kysely.transaction().execute(fn)),
    ...(lazy ? { lazySyncTransaction: lazy.transaction } : {}),
    externalChanges: () => dataVersion.get() as number,
    // Inside the connection's lock, so no transaction of ours is open on it.
    scrub: () =>
      kysely.connection().execute(async () => {
        sqlite.exec('VACUUM');
        const r = sqlite.pragma('wal_checkpoint(TRUNCATE)') as Array<{ busy: number }>;
        return { walEmptied: r[0]?.busy === 0 };
      }),
    destroy: async () => {
      await writer?.close();
      await lazy?.close();
      await kysely.destroy();
    },
  };
}

/**
 * Kysely prepares every query anew, and preparing costs more than running most of our
 * queries. Statements are reusable (the driver runs one query at a time), so they are
 * kept by SQL text, a bounded number of them.
 *
 * With `beginImmediate`, Kysely's transactions take the write lock when they begin: the
 * writer thread is a second writer, and a deferred transaction that read before that
 * thread committed could not write afterwards (SQLITE_BUSY_SNAPSHOT, which no wait cures).
 */
function withStatementCache(db: SqliteDatabase.Database, opts: { beginImmediate: boolean }, max = 1000) {
  const cache = new Map<string, SqliteDatabase.Statement>();
  return {
    close: () => db.close(),
    prepare(text: string): SqliteDatabase.Statement {
      const sql = opts.beginImmediate && text === 'begin' ? 'begin immediate' : text;
      let stmt = cache.get(sql);
      if (stmt) return stmt;
      stmt = db.prepare(sql);
      if (cache.size >= max) cache.delete(cache.keys().next().value as string);
      cache.set(sql, stmt);
      return stmt;
    },
  };
}

/**
 * The commit runs with synchronous=NORMAL, which in WAL mode writes the transaction's frames
 * to the WAL without an fsync; the setting is switched inside the connection's lock, so no
 * other commit runs with it. fsync is per file, not per descriptor: once an fsync of the WAL
 * that began after the commit returns, the commit's frames (and the WAL header) are on disk,
 * which is what synchronous=FULL would have waited for inside COMMIT. Concurrent commits
 * share their fsyncs (see syncWal below).
 */
function lazySync(kysely: Kysely<Database>, walPath: string) {
  // One descriptor of the WAL for the life of the database: the event-loop connection keeps
  // the WAL file in place (checkpoints reset it, they do not replace it). On an error the
  // descriptor is dropped and the next sync opens a fresh one.
  let wal: Promise<FileHandle> | null = null;
  const fsyncWal = async (): Promise<void> => {
    wal ??= open(walPath, 'r');
    const handle = wal;
    try {
      await (await handle).sync();
    } catch (err) {
      if (wal === handle) wal = null;
      void handle.then((h) => h.close()).catch(() => undefined);
      throw err;
    }
  };
  // Group commit of the fsyncs: commits made while an fsync runs share the next one, which
  // begins after that fsync ends (so after each of those commits). Under concurrency this is
  // one fsync per batch of commits instead of one per commit queued on the threadpool.
  let running: Promise<void> | null = null;
  let next: Promise<void> | null = null;
  const syncWal = (): Promise<void> => {
    if (!running) {
      running = fsyncWal().finally(() => {
        running = null;
      });
      return running;
    }
    next ??= running
      .catch(() => undefined)
      .then(() => {
        next = null;
        return syncWal();
      });
    return next;
  };
  const transaction = async <T>(fn: (trx: Kysely<Database>) => Promise<T>): Promise<T> => {
    const value = await kysely.connection().execute(async (conn) => {
      await sql`pragma synchronous = NORMAL`.execute(conn);
      try {
        return await conn.transaction().execute(fn);
      } finally {
        await sql`pragma synchronous = FULL`.execute(conn);
      }
    });
    await syncWal();
    return value;
  };
  const close = async (): Promise<void> => {
    while (running || next) await (next ?? running)?.catch(() => undefined);
    const handle = wal;
    wal = null;
    if (handle) await (await handle.catch(() => undefined))?.close();
  };
  return { transaction, close };
}

/** Resolves when the database answers a trivial query. */
export async function pingDatabase(db: Db): Promise<void> {
  await sql`select 1`.execute(db.kysely);
}
