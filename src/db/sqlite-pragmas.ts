import type SqliteDatabase from 'better-sqlite3';

/** Settings of every connection to the SQLite file: WAL, durable commits, foreign keys, waiting for the lock. */
export function configureSqlite(db: SqliteDatabase.Database): void {
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 10000');
}
