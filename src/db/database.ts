import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely';
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
  const kysely = new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }) });
  return { kind: 'sqlite', kysely, destroy: () => kysely.destroy() };
}
