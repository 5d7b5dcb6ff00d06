import { chmodSync, closeSync, mkdirSync, openSync, statSync } from 'node:fs';

/**
 * What the server keeps on disk (database, WAL, blobs, keys, locks, backups) is readable by
 * the server's user only: files 0600, directories 0700. Paths made before this rule (0644,
 * 0755) are tightened when the server opens them.
 */
export const PRIVATE_FILE_MODE = 0o600;
export const PRIVATE_DIR_MODE = 0o700;

/**
 * Makes the directory (and missing parents) 0700; with `tightenExisting`, an existing one of
 * ours that is looser is made 0700 too. A shared directory (sticky, such as /tmp) is never
 * tightened.
 */
export function ensurePrivateDir(path: string, opts: { tightenExisting?: boolean } = {}): void {
  mkdirSync(path, { recursive: true, mode: PRIVATE_DIR_MODE });
  if (opts.tightenExisting && (statSync(path).mode & 0o1000) === 0) tighten(path, PRIVATE_DIR_MODE);
}

/**
 * Creates the file empty with mode 0600 when it is missing, and tightens it when it exists
 * looser. SQLite creates a database's WAL and shared-memory files with the database file's
 * mode, so a database file made here keeps them private too.
 */
export function ensurePrivateFile(path: string): void {
  closeSync(openSync(path, 'a', PRIVATE_FILE_MODE));
  tighten(path, PRIVATE_FILE_MODE);
}

/** Tightens an existing path to `mode`; a missing path is left alone. */
export function tightenIfPresent(path: string, mode = PRIVATE_FILE_MODE): void {
  try {
    tighten(path, mode);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}

function tighten(path: string, mode: number): void {
  const st = statSync(path);
  // Only the owner may chmod; a file of another user is left for the operator to fix.
  if ((st.mode & 0o077) !== 0 && (typeof process.getuid !== 'function' || st.uid === process.getuid()))
    chmodSync(path, mode);
}
