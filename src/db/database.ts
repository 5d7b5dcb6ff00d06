import { randomUUID } from 'node:crypto';
import { dirname } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, sql } from 'kysely';
import pg from 'pg';
import type { Database } from './schema.js';
import { PgChangeFeed } from './pg-change-feed.js';
import { configureSqlite } from './sqlite-pragmas.js';
import { SqliteWriter } from './sqlite-writer.js';
import { UnitsOfWork } from './unit-of-work.js';
import { ensurePrivateDir, ensurePrivateFile, tightenIfPresent } from '../shared/private-files.js';

export type DatabaseKind = 'sqlite' | 'postgres';

export interface Db {
  readonly kind: DatabaseKind;
  readonly kysely: Kysely<Database>;
  /**
   * Every write goes through a unit of work, whose mode is named at the call site:
   * read-write, write-only, or grouped with concurrent units (unit-of-work.ts, decision 0050).
   */
  readonly units: UnitsOfWork;
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
      units: new UnitsOfWork({ kind: 'postgres', kysely }),
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
  const units = new UnitsOfWork({
    kind: 'sqlite',
    kysely,
    ...(writer ? { writer, walPath: `${path}-wal` } : {}),
  });
  return {
    kind: 'sqlite',
    kysely,
    units,
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
      await units.close();
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

/** Resolves when the database answers a trivial query. */
export async function pingDatabase(db: Db): Promise<void> {
  await sql`select 1`.execute(db.kysely);
}
