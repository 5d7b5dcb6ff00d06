import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readdirSync, rmdirSync } from 'node:fs';
import { copyFile, mkdir, open, rename, rm, unlink } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { openDatabase } from '../db/database.js';
import { knownMigrations, migrateUpTo } from '../db/migrate.js';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE, ensurePrivateDir } from '../shared/private-files.js';
import { BackupFileError, readEntry, verifyArchive } from './backup-archive.js';
import type { ArchiveEntry, BackupManifest } from './backup-archive.js';
import type { BackupTarget } from './backup-service.js';
import { POSTGRES_PREFIX, connectRaw, listTables, quoteIdent } from './postgres-backup.js';
import { BLOB_PREFIX, SQLITE_ENTRY } from './sqlite-backup.js';

export interface RestoreProgress {
  phase: 'verify' | 'restore';
  done: number;
  total: number;
}

export interface RestoreResult {
  manifest: BackupManifest;
  /** What was restored, for the operator: "1 database, 12 blobs" or "34 tables, 5,120 rows". */
  summary: string;
}

/**
 * Restores a backup onto empty storage: a SQLite data directory (absent, empty or holding
 * only the master key) or an empty PostgreSQL database. The whole file is checked against
 * its manifest first; a damaged or truncated file, a non-empty target, or a backup of the
 * other database kind is refused before anything is written. A failure while writing
 * removes what was written, so the target is left as it was.
 */
export async function restoreBackup(
  file: string,
  target: BackupTarget,
  onProgress: (p: RestoreProgress) => void = () => {},
): Promise<RestoreResult> {
  const fh = await open(file, 'r').catch((err: NodeJS.ErrnoException) => {
    throw new BackupFileError(`cannot read ${file}: ${err.code === 'ENOENT' ? 'no such file' : err.message}`);
  });
  try {
    const total = (await fh.stat()).size;
    let done = 0;
    const { manifest, entries } = await verifyArchive(fh, file, (n) => {
      done += n;
      onProgress({ phase: 'verify', done, total });
    });
    // Verified to its end (headers and trailer included, which the steps above do not count).
    onProgress({ phase: 'verify', done: total, total });
    const postgres = /^postgres(ql)?:\/\//.test(target.databaseUrl);
    if (manifest.database !== (postgres ? 'postgres' : 'sqlite'))
      throw new BackupFileError(
        manifest.database === 'postgres'
          ? `${file} is a backup of a PostgreSQL server; restore it onto an empty PostgreSQL database ` +
              '(--database-url postgres://…)'
          : `${file} is a backup of a SQLite server; restore it onto a SQLite data directory ` +
              '(--data-dir, no postgres:// --database-url)',
      );
    const known = knownMigrations();
    const unknown = manifest.migrations.filter((m) => !known.includes(m));
    if (unknown.length > 0)
      throw new BackupFileError(
        `${file} was taken by a newer version of Strongroom (migrations ${unknown.join(', ')} are unknown here); ` +
          `restore it with that version`,
      );
    const ordered = manifest.entries.map((m) => entries.get(m.name) as ArchiveEntry);
    const restoreTotal = ordered.reduce((n, e) => n + e.size, 0);
    let restored = 0;
    const progress = (n: number) => {
      restored += n;
      onProgress({ phase: 'restore', done: restored, total: restoreTotal });
    };
    const summary = postgres
      ? await restorePostgres(fh, manifest, ordered, target.databaseUrl, progress)
      : await restoreSqlite(fh, manifest, ordered, target, progress);
    return { manifest, summary };
  } finally {
    await fh.close();
  }
}

async function restoreSqlite(
  fh: FileHandle,
  manifest: BackupManifest,
  entries: ArchiveEntry[],
  target: BackupTarget,
  progress: (n: number) => void,
): Promise<string> {
  const dbPath = target.databaseUrl.replace(/^sqlite:/, '');
  const dataDir = target.dataDir;
  const existing = existsSync(dataDir) ? readdirSync(dataDir).filter((n) => n !== 'master.key') : [];
  if (existing.length > 0)
    throw new BackupFileError(
      `the data directory ${dataDir} is not empty (it holds ` +
        `${existing.slice(0, 5).join(', ')}${existing.length > 5 ? ', …' : ''}); ` +
        'restore into a new or empty directory (only a master.key may be there already)',
    );
  for (const p of [dbPath, `${dbPath}-wal`])
    if (existsSync(p))
      throw new BackupFileError(`the database file ${p} already exists; restore only onto no database`);
  const madeDir = !existsSync(dataDir);
  ensurePrivateDir(dataDir);
  const staging = join(dataDir, `.restore-${randomBytes(6).toString('hex')}`);
  const sums = new Map(manifest.entries.map((e) => [e.name, e.sha256]));
  let blobs = 0;
  const moved: string[] = [];
  try {
    await mkdir(staging, { mode: PRIVATE_DIR_MODE });
    for (const e of entries) {
      let rel: string;
      if (e.name === SQLITE_ENTRY) rel = 'strongroom.db';
      else if (e.name.startsWith(BLOB_PREFIX) && /^blobs\/sha256\/[0-9a-f]{2}\/[0-9a-f]{64}$/.test(e.name)) {
        rel = e.name;
        blobs++;
      } else throw new BackupFileError(`unexpected entry ${e.name} in a SQLite backup`);
      const path = join(staging, rel);
      await mkdir(dirname(path), { recursive: true, mode: PRIVATE_DIR_MODE });
      await writeChecked(fh, e, path, sums.get(e.name) as string, progress);
    }
    await mkdir(join(staging, 'blobs', 'sha256'), { recursive: true, mode: PRIVATE_DIR_MODE });
    await mkdir(join(staging, 'blobs', 'tmp'), { recursive: true, mode: PRIVATE_DIR_MODE });
    await rename(join(staging, 'blobs'), join(dataDir, 'blobs'));
    moved.push(join(dataDir, 'blobs'));
    await mkdir(dirname(dbPath), { recursive: true, mode: PRIVATE_DIR_MODE });
    await moveFile(join(staging, 'strongroom.db'), dbPath);
    moved.push(dbPath);
    await rm(staging, { recursive: true, force: true });
  } catch (err) {
    await rm(staging, { recursive: true, force: true });
    for (const p of moved) await rm(p, { recursive: true, force: true });
    if (madeDir) rmdirSync(dataDir);
    throw err;
  }
  return `the SQLite database and ${blobs} blob file${blobs === 1 ? '' : 's'}`;
}

async function moveFile(from: string, to: string): Promise<void> {
  try {
    await rename(from, to);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw err;
    await copyFile(from, to);
    await unlink(from);
  }
}

/** Writes an entry to a new file (0600), checking its SHA-256 again as it goes, and fsyncs it. */
async function writeChecked(
  fh: FileHandle,
  e: ArchiveEntry,
  path: string,
  sha256: string,
  progress: (n: number) => void,
): Promise<void> {
  const out = await open(path, 'wx', PRIVATE_FILE_MODE);
  try {
    const sha = createHash('sha256');
    for await (const chunk of readEntry(fh, e)) {
      sha.update(chunk);
      await out.write(chunk);
      progress(chunk.length);
    }
    if (sha.digest('hex') !== sha256)
      throw new BackupFileError(`the backup file changed while it was restored (${e.name})`);
    await out.sync();
  } finally {
    await out.close();
  }
}

/** Rows per INSERT are bounded by PostgreSQL's 65,535 parameters and by this many bytes. */
const INSERT_BYTES = 4 * 1024 * 1024;
const INSERT_PARAMS = 30_000;

async function restorePostgres(
  fh: FileHandle,
  manifest: BackupManifest,
  entries: ArchiveEntry[],
  url: string,
  progress: (n: number) => void,
): Promise<string> {
  const client = connectRaw(url);
  await client.connect();
  try {
    const present = await listTables(client);
    if (present.length > 0)
      throw new BackupFileError(
        `the database is not empty: it holds ${present.length} table${present.length === 1 ? '' : 's'} ` +
          `(${present.slice(0, 5).join(', ')}${present.length > 5 ? ', …' : ''}); restore only onto an empty database`,
      );
    const last = manifest.migrations.at(-1);
    if (!last) throw new BackupFileError('the backup names no migrations: it is not a Strongroom backup');
    const known = knownMigrations();
    if (known.slice(0, known.indexOf(last) + 1).join() !== manifest.migrations.join())
      throw new BackupFileError(
        `the backup's migrations (${manifest.migrations.join(', ')}) are not the first ones of this version; ` +
          'restore it with the version that took it',
      );
    const tables = manifest.tables ?? [];
    let rows = 0;
    try {
      // The schema of the backup's version, then its rows in one transaction.
      const db = openDatabase({ url, poolSize: 1 });
      try {
        await migrateUpTo(db, last);
      } finally {
        await db.destroy();
      }
      await client.query('BEGIN');
      const fks = await client.query<{ tbl: string; name: string; def: string }>(
        `SELECT c.conrelid::regclass::text AS tbl, c.conname AS name, pg_get_constraintdef(c.oid) AS def
           FROM pg_constraint c WHERE c.contype = 'f' AND c.connamespace = current_schema()::regnamespace`,
      );
      // Rows go in table by table: the foreign keys are checked once, when they are added back.
      for (const fk of fks.rows) await client.query(`ALTER TABLE ${fk.tbl} DROP CONSTRAINT ${quoteIdent(fk.name)}`);
      const own = tables.filter((t) => !t.name.startsWith('kysely_migration'));
      const now = new Set(await listTables(client));
      for (const t of own) {
        if (!now.has(t.name)) throw new BackupFileError(`the backup's table ${t.name} is not in this version's schema`);
        await client.query(`DELETE FROM ${quoteIdent(t.name)}`);
      }
      const byTable = new Map(own.map((t) => [t.name, t]));
      for (const e of entries) {
        if (!e.name.startsWith(POSTGRES_PREFIX))
          throw new BackupFileError(`unexpected entry ${e.name} in a PostgreSQL backup`);
        const name = e.name.slice(POSTGRES_PREFIX.length).split('/')[0] as string;
        const t = byTable.get(name);
        if (!t) {
          if (name.startsWith('kysely_migration')) {
            progress(e.size);
            continue;
          }
          throw new BackupFileError(`entry ${e.name} names a table the manifest does not list`);
        }
        rows += await insertPart(client, fh, e, t.name, t.columns, progress);
      }
      for (const fk of fks.rows)
        await client.query(`ALTER TABLE ${fk.tbl} ADD CONSTRAINT ${quoteIdent(fk.name)} ${fk.def}`);
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      // The database was empty: leave it so.
      for (const t of await listTables(client).catch(() => [] as string[]))
        await client.query(`DROP TABLE IF EXISTS ${quoteIdent(t)} CASCADE`).catch(() => {});
      throw err;
    }
    return `${tables.length} tables, ${rows} rows`;
  } finally {
    await client.end().catch(() => {});
  }
}

async function insertPart(
  client: ReturnType<typeof connectRaw>,
  fh: FileHandle,
  e: ArchiveEntry,
  table: string,
  columns: string[],
  progress: (n: number) => void,
): Promise<number> {
  const head = `INSERT INTO ${quoteIdent(table)} (${columns.map(quoteIdent).join(', ')}) VALUES `;
  let params: (string | null)[] = [];
  let tuples: string[] = [];
  let bytes = 0;
  let count = 0;
  const flush = async () => {
    if (tuples.length === 0) return;
    await client.query(head + tuples.join(', '), params);
    params = [];
    tuples = [];
    bytes = 0;
  };
  let carry = '';
  // A chunk may end inside a multi-byte character: the decoder keeps its first bytes for the next one.
  const decoder = new StringDecoder('utf8');
  for await (const chunk of readEntry(fh, e)) {
    progress(chunk.length);
    const text = carry + decoder.write(chunk);
    const lines = text.split('\n');
    carry = lines.pop() as string;
    for (const line of lines) {
      if (line === '') continue;
      const row = JSON.parse(line) as (string | null)[];
      if (row.length !== columns.length)
        throw new BackupFileError(`a row of ${e.name} has ${row.length} columns, not ${columns.length}`);
      const base = params.length;
      tuples.push(`(${row.map((_, i) => `$${base + i + 1}`).join(', ')})`);
      params.push(...row);
      bytes += line.length;
      count++;
      if (bytes >= INSERT_BYTES || params.length + columns.length > INSERT_PARAMS) await flush();
    }
  }
  carry += decoder.end();
  if (carry.trim() !== '') throw new BackupFileError(`${e.name} ends in the middle of a row`);
  await flush();
  return count;
}
