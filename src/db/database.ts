import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, sql } from 'kysely';
import pg from 'pg';
import type { Database } from './schema.js';

export type DatabaseKind = 'sqlite' | 'postgres';

export interface Db {
  readonly kind: DatabaseKind;
  readonly kysely: Kysely<Database>;
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
    const pool = new pg.Pool({ connectionString: opts.url, max: opts.poolSize ?? 10 });
    // A dropped idle connection must not crash the process; the pool replaces it.
    pool.on('error', () => {});
    const kysely = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    return { kind: 'postgres', kysely, destroy: () => kysely.destroy() };
  }
  const path = opts.url.replace(/^sqlite:/, '');
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const sqlite = new SqliteDatabase(path);
  sqlite.pragma('journal_mode = WAL');
  sqlite.pragma('synchronous = FULL');
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 10000');
  const kysely = new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(sqlite) }) });
  return { kind: 'sqlite', kysely, destroy: () => kysely.destroy() };
}

/**
 * Kysely prepares every query anew, and preparing costs more than running most of our
 * queries. Statements are reusable (the driver runs one query at a time), so they are
 * kept by SQL text, a bounded number of them.
 */
function withStatementCache(db: SqliteDatabase.Database, max = 1000) {
  const cache = new Map<string, SqliteDatabase.Statement>();
  return {
    close: () => db.close(),
    prepare(sql: string): SqliteDatabase.Statement {
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
