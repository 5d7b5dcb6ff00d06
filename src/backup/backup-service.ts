import type { Clock } from '../shared/clock.js';
import { systemClock } from '../shared/clock.js';
import { BACKUP_FORMAT, MASTER_KEY_NOTE, writeArchive } from './backup-archive.js';
import type { ArchiveSource, BackupManifest } from './backup-archive.js';
import { snapshotPostgres } from './postgres-backup.js';
import { snapshotSqlite } from './sqlite-backup.js';

/** Where the server keeps its data: the settings a backup is taken from. */
export interface BackupTarget {
  databaseUrl: string;
  dataDir: string;
}

export interface BackupProgress {
  /** Bytes of entries written so far. */
  done: number;
  /** Bytes expected in all (SQLite: known once the snapshot is taken); undefined when unknown (PostgreSQL). */
  total: number | undefined;
  /** The entry being written. */
  entry: string;
}

/** A backup being taken: the archive's bytes, to be written to a file or a response. */
export interface Backup {
  database: 'sqlite' | 'postgres';
  /** Streams the archive; the snapshot is released when it ends (or fails, or is abandoned). */
  bytes: AsyncGenerator<Buffer>;
}

/**
 * Takes a consistent snapshot of a running server's storage (see sqlite-backup.ts and
 * postgres-backup.ts) and streams it as one archive with a manifest of checksums. The
 * snapshot is taken before this resolves: whatever was acknowledged before the call is in
 * the backup, whatever commits after the snapshot is not. The master key is never included.
 */
export async function takeBackup(
  target: BackupTarget,
  opts: { clock?: Clock; onProgress?: (p: BackupProgress) => void } = {},
): Promise<Backup> {
  const now = (opts.clock ?? systemClock).now();
  const createdAt = now.toISOString();
  const onProgress = opts.onProgress ?? (() => {});
  if (/^postgres(ql)?:\/\//.test(target.databaseUrl)) {
    const snap = await snapshotPostgres(target.databaseUrl);
    const manifest = (): Omit<BackupManifest, 'entries'> => ({
      ...common(createdAt, 'postgres', snap.migrations),
      tables: snap.tables,
    });
    return { database: 'postgres', bytes: stream(snap.sources(), manifest, now, undefined, snap.dispose, onProgress) };
  }
  const snap = await snapshotSqlite({ dbPath: target.databaseUrl.replace(/^sqlite:/, ''), dataDir: target.dataDir });
  const manifest = (): Omit<BackupManifest, 'entries'> => ({
    ...common(createdAt, 'sqlite', snap.migrations),
    blobs: snap.blobs,
  });
  return { database: 'sqlite', bytes: stream(snap.sources, manifest, now, snap.bytes, snap.dispose, onProgress) };
}

function common(createdAt: string, database: 'sqlite' | 'postgres', migrations: string[]) {
  return {
    format: BACKUP_FORMAT as typeof BACKUP_FORMAT,
    version: 1 as const,
    created_at: createdAt,
    database,
    migrations,
    master_key_included: false as const,
    note: MASTER_KEY_NOTE,
  };
}

async function* stream(
  sources: AsyncIterable<ArchiveSource> | Iterable<ArchiveSource>,
  manifest: () => Omit<BackupManifest, 'entries'>,
  mtime: Date,
  total: number | undefined,
  dispose: () => Promise<void>,
  onProgress: (p: BackupProgress) => void,
): AsyncGenerator<Buffer> {
  let done = 0;
  let entry = '';
  const named = async function* () {
    for await (const s of sources) {
      entry = s.name;
      yield s;
    }
  };
  try {
    yield* writeArchive(named(), manifest, mtime, (n) => {
      done += n;
      onProgress({ done, total, entry });
    });
  } finally {
    await dispose();
  }
}
