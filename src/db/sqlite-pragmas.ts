import type SqliteDatabase from 'better-sqlite3';

/** How long a connection waits for SQLite's write lock before SQLITE_BUSY. */
export const BUSY_TIMEOUT_MS = 10_000;

/** The size the WAL file is cut back to when it starts over after a checkpoint. */
export const WAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024;

/**
 * Settings of every connection to the SQLite file: WAL, durable commits, foreign keys, waiting for the lock, and a
 * WAL cut back to WAL_SIZE_LIMIT_BYTES whenever it starts over.
 */
export function configureSqlite(db: SqliteDatabase.Database): void {
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.pragma('foreign_keys = ON');
  db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
  db.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
}
