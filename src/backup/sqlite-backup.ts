import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { chmod, link, mkdir, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import SqliteDatabase from 'better-sqlite3';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE, ensurePrivateDir } from '../shared/private-files.js';
import type { ArchiveSource } from './backup-archive.js';

const SNAPSHOT_THREAD = new URL('./sqlite-snapshot-thread.js', import.meta.url);

/** The database entry of a SQLite backup, and the directory its blobs go back to. */
export const SQLITE_ENTRY = 'sqlite/strongroom.db';
export const BLOB_PREFIX = 'blobs/sha256/';

/** A consistent copy of a SQLite server: the database file and the blob files it refers to. */
export interface SqliteSnapshot {
  sources: ArchiveSource[];
  migrations: string[];
  blobs: number;
  bytes: number;
  /** Removes the staging copy. */
  dispose(): Promise<void>;
}

/**
 * Takes the snapshot: `VACUUM INTO` a staging directory under `<dataDir>/backups` (on a
 * worker thread), then hard links into it every blob file the copy refers to. Blobs are
 * written before the rows that name them commit, so each one named is on disk; a link keeps
 * its bytes even if the collector removes the file afterwards. One removed between the
 * copy and its link (its version deleted meanwhile) makes the snapshot start again.
 */
export async function snapshotSqlite(opts: { dbPath: string; dataDir: string }): Promise<SqliteSnapshot> {
  const root = join(opts.dataDir, 'backups');
  ensurePrivateDir(root, { tightenExisting: true });
  await removeStaleStaging(root);
  for (let attempt = 1; ; attempt++) {
    const staging = join(root, `snapshot-${randomBytes(6).toString('hex')}`);
    await mkdir(staging, { mode: PRIVATE_DIR_MODE });
    try {
      const taken = await tryOnce(opts, staging);
      if (taken) return taken;
    } catch (err) {
      await rm(staging, { recursive: true, force: true });
      throw err;
    }
    await rm(staging, { recursive: true, force: true });
    if (attempt >= 5) throw new Error('blobs kept being removed while the backup was taken; run it again');
  }
}

async function tryOnce(opts: { dbPath: string; dataDir: string }, staging: string): Promise<SqliteSnapshot | null> {
  const dbCopy = join(staging, 'strongroom.db');
  await vacuumInto(opts.dbPath, dbCopy);
  await chmod(dbCopy, PRIVATE_FILE_MODE);
  const copy = new SqliteDatabase(dbCopy, { readonly: true });
  let shas: { sha256: string; deleting: number }[];
  let migrations: string[];
  try {
    migrations = (copy.prepare('SELECT name FROM kysely_migration ORDER BY name').all() as { name: string }[]).map(
      (r) => r.name,
    );
    shas = copy.prepare('SELECT sha256, deleting FROM tfe_state_blobs WHERE data IS NULL ORDER BY sha256').all() as {
      sha256: string;
      deleting: number;
    }[];
  } finally {
    copy.close();
  }
  const blobsDir = join(opts.dataDir, 'blobs', 'sha256');
  const sources: ArchiveSource[] = [];
  let bytes = (await stat(dbCopy)).size;
  sources.push(fileSource(SQLITE_ENTRY, dbCopy, bytes));
  await mkdir(join(staging, 'blobs'), { mode: PRIVATE_DIR_MODE });
  for (const { sha256, deleting } of shas) {
    const linked = join(staging, 'blobs', sha256);
    try {
      await link(join(blobsDir, sha256.slice(0, 2), sha256), linked);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      // A row being removed already (a tombstone) may have lost its file: the restored server finishes the removal.
      if (deleting) continue;
      return null;
    }
    const size = (await stat(linked)).size;
    bytes += size;
    sources.push(fileSource(`${BLOB_PREFIX}${sha256.slice(0, 2)}/${sha256}`, linked, size));
  }
  return {
    sources,
    migrations,
    blobs: sources.length - 1,
    bytes,
    dispose: () => rm(staging, { recursive: true, force: true }),
  };
}

/** Staging left by a backup that was killed: a day old is far older than any backup still running. */
async function removeStaleStaging(root: string): Promise<void> {
  const cutoff = Date.now() - 24 * 3600 * 1000;
  for (const name of await readdir(root)) {
    if (!name.startsWith('snapshot-')) continue;
    const st = await stat(join(root, name)).catch(() => undefined);
    if (st && st.mtimeMs < cutoff) await rm(join(root, name), { recursive: true, force: true });
  }
}

function fileSource(name: string, path: string, size: number): ArchiveSource {
  return {
    name,
    size,
    body: () => createReadStream(path, { highWaterMark: 1024 * 1024 }) as AsyncIterable<Buffer>,
  };
}

function vacuumInto(source: string, target: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(SNAPSHOT_THREAD, { workerData: { source, target } });
    worker.once('message', (m: { ok: boolean; message?: string }) =>
      m.ok ? resolve() : reject(new Error(`could not copy the SQLite database ${source}: ${m.message}`)),
    );
    worker.once('error', reject);
    worker.once('exit', (code) => {
      if (code !== 0) reject(new Error(`the SQLite snapshot thread exited with code ${code}`));
    });
  });
}
