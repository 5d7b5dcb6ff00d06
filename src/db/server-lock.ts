import { dirname } from 'node:path';
import SqliteDatabase from 'better-sqlite3';
import { ensurePrivateDir, ensurePrivateFile } from '../shared/private-files.js';

/** Who holds a server lock, as the holder wrote it down. */
export interface LockHolder {
  pid: number;
  startedAt: string;
}

/** Another process holds the lock; `holder` is what it wrote down, when it could be read. */
export class ServerLockHeldError extends Error {
  constructor(
    readonly path: string,
    readonly holder: LockHolder | undefined,
  ) {
    super(`${path} is locked by another process${holder ? ` (pid ${holder.pid}, since ${holder.startedAt})` : ''}`);
    this.name = 'ServerLockHeldError';
  }
}

/**
 * One server at a time on a SQLite data directory. The lock is a small SQLite file of its
 * own whose write lock this process takes and never gives back while it lives, so the
 * operating system drops it when the process ends, however it ends: no stale lock file
 * after a crash. Readers are not blocked by it, so a second server can read who holds it.
 * The database itself stays open to other processes (`strongroom migrate`, `tfe`,
 * `admin-token`), which take SQLite's own locks per transaction.
 */
export class ServerLock {
  private constructor(private readonly db: SqliteDatabase.Database) {}

  /** Takes the lock at `path` or throws ServerLockHeldError at once (no waiting). */
  static acquire(path: string, holder: LockHolder): ServerLock {
    ensurePrivateDir(dirname(path));
    ensurePrivateFile(path);
    const db = new SqliteDatabase(path, { timeout: 0 });
    try {
      db.exec('CREATE TABLE IF NOT EXISTS holder (pid INTEGER NOT NULL, started_at TEXT NOT NULL)');
      const take = () => db.exec('BEGIN IMMEDIATE');
      tryTake(take, path, db);
      db.exec('DELETE FROM holder');
      db.prepare('INSERT INTO holder (pid, started_at) VALUES (?, ?)').run(holder.pid, holder.startedAt);
      db.exec('COMMIT');
      // Whoever slips in between the commit and this begin wins; we then report it.
      tryTake(take, path, db);
      return new ServerLock(db);
    } catch (err) {
      db.close();
      throw err;
    }
  }

  release(): void {
    if (!this.db.open) return;
    this.db.exec('ROLLBACK');
    this.db.close();
  }
}

function tryTake(take: () => void, path: string, db: SqliteDatabase.Database): void {
  try {
    take();
  } catch (err) {
    if ((err as { code?: string }).code !== 'SQLITE_BUSY') throw err;
    throw new ServerLockHeldError(path, readHolder(db));
  }
}

function readHolder(db: SqliteDatabase.Database): LockHolder | undefined {
  try {
    const row = db.prepare('SELECT pid, started_at FROM holder').get() as
      { pid: number; started_at: string } | undefined;
    return row ? { pid: row.pid, startedAt: row.started_at } : undefined;
  } catch {
    return undefined;
  }
}
