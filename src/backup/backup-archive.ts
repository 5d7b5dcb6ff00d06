import { createHash } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';

/**
 * The backup file: a POSIX tar archive (ustar), so `tar tvf` lists it, whose entries are the
 * database snapshot and the blobs, then `manifest.json` (what every entry holds and its
 * SHA-256) and last `manifest.sha256` (the manifest's own SHA-256). An archive that ends
 * before that last entry was cut short; one whose bytes disagree with the manifest was
 * damaged. The master key is never in it.
 */

export const MANIFEST_NAME = 'manifest.json';
export const MANIFEST_SUM_NAME = 'manifest.sha256';
export const BACKUP_FORMAT = 'strongroom-backup';
export const MASTER_KEY_NOTE =
  'This backup does not include the master key (STRONGROOM_MASTER_KEY or <data_dir>/master.key). ' +
  'Keep the key separately: a server restored from this backup needs the same key to open its secrets.';

export interface ManifestEntry {
  name: string;
  size: number;
  sha256: string;
}

export interface PostgresTableInfo {
  name: string;
  columns: string[];
  rows: number;
}

export interface BackupManifest {
  format: typeof BACKUP_FORMAT;
  version: 1;
  created_at: string;
  database: 'sqlite' | 'postgres';
  /** Migrations applied to the database at the snapshot, in order. */
  migrations: string[];
  master_key_included: false;
  note: string;
  /** PostgreSQL: every table exported, its columns and row count. */
  tables?: PostgresTableInfo[];
  /** SQLite: the blob files copied with the database. */
  blobs?: number;
  entries: ManifestEntry[];
}

const BLOCK = 512;
const ZERO = Buffer.alloc(BLOCK * 2);

/** The header block of a regular file entry. */
function header(name: string, size: number, mtime: Date): Buffer {
  const nameBytes = Buffer.from(name, 'utf8');
  if (nameBytes.length > 100) throw new Error(`archive entry name too long: ${name}`);
  const h = Buffer.alloc(BLOCK);
  nameBytes.copy(h, 0);
  h.write('0000600\0', 100, 'ascii');
  h.write('0000000\0', 108, 'ascii');
  h.write('0000000\0', 116, 'ascii');
  if (size < 8 ** 11) h.write(`${size.toString(8).padStart(11, '0')}\0`, 124, 'ascii');
  else {
    // GNU base-256 for sizes of 8 GiB and more.
    h[124] = 0x80;
    let n = BigInt(size);
    for (let i = 135; i > 124; i--) {
      h[i] = Number(n & 0xffn);
      n >>= 8n;
    }
  }
  h.write(
    `${Math.floor(mtime.getTime() / 1000)
      .toString(8)
      .padStart(11, '0')}\0`,
    136,
    'ascii',
  );
  h.write('        ', 148, 'ascii');
  h.write('0', 156, 'ascii');
  h.write('ustar\0', 257, 'ascii');
  h.write('00', 263, 'ascii');
  let sum = 0;
  for (const b of h) sum += b;
  h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'ascii');
  return h;
}

function padding(size: number): Buffer {
  const rest = size % BLOCK;
  return rest === 0 ? Buffer.alloc(0) : Buffer.alloc(BLOCK - rest);
}

/** One entry to write: its name, exact size, and its bytes. */
export interface ArchiveSource {
  name: string;
  size: number;
  body(): AsyncIterable<Buffer> | Iterable<Buffer>;
}

/**
 * Streams the archive: each source, then the manifest (completed with every entry's size and
 * SHA-256) and its checksum. A source that yields another number of bytes than it declared
 * (a file that changed while it was read) fails the backup instead of writing a bad archive.
 */
export async function* writeArchive(
  sources: AsyncIterable<ArchiveSource> | Iterable<ArchiveSource>,
  manifest: () => Omit<BackupManifest, 'entries'>,
  now: Date,
  onBytes: (n: number) => void = () => {},
): AsyncGenerator<Buffer> {
  const entries: ManifestEntry[] = [];
  for await (const src of sources) {
    yield header(src.name, src.size, now);
    const sha = createHash('sha256');
    let n = 0;
    for await (const chunk of src.body()) {
      n += chunk.length;
      if (n > src.size) break;
      sha.update(chunk);
      onBytes(chunk.length);
      yield chunk;
    }
    if (n !== src.size)
      throw new Error(
        `${src.name} changed while it was copied (${n} bytes instead of ${src.size}); run the backup again`,
      );
    yield padding(src.size);
    entries.push({ name: src.name, size: src.size, sha256: sha.digest('hex') });
  }
  const text = Buffer.from(JSON.stringify({ ...manifest(), entries }, null, 2) + '\n');
  yield header(MANIFEST_NAME, text.length, now);
  yield text;
  yield padding(text.length);
  const sum = Buffer.from(`${createHash('sha256').update(text).digest('hex')}  ${MANIFEST_NAME}\n`);
  yield header(MANIFEST_SUM_NAME, sum.length, now);
  yield sum;
  yield padding(sum.length);
  yield ZERO;
}

/** Why a backup file cannot be restored. */
export class BackupFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BackupFileError';
  }
}

/** An entry of an archive being read: where its bytes are in the file. */
export interface ArchiveEntry {
  name: string;
  size: number;
  offset: number;
}

function parseSize(h: Buffer): number {
  if ((h[124] as number) & 0x80) {
    let n = 0n;
    for (let i = 125; i < 136; i++) n = (n << 8n) | BigInt(h[i] as number);
    return Number(n);
  }
  return parseInt(h.toString('ascii', 124, 136).replace(/\0.*$/, '').trim() || '0', 8);
}

function checksumOk(h: Buffer): boolean {
  const stored = parseInt(h.toString('ascii', 148, 156).replace(/\0.*$/, '').trim(), 8);
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 32 : (h[i] as number);
  return stored === sum;
}

/** Lists the entries of the archive in `fh` (headers only), checking that none is cut short. */
export async function listArchive(fh: FileHandle, path: string): Promise<ArchiveEntry[]> {
  const size = (await fh.stat()).size;
  const entries: ArchiveEntry[] = [];
  const h = Buffer.alloc(BLOCK);
  let pos = 0;
  for (;;) {
    if (pos + BLOCK > size)
      throw new BackupFileError(
        `${path} is truncated: it ends at byte ${size}${entries.length > 0 ? ` after ${entries.at(-1)?.name}` : ''}, ` +
          `before its manifest (${MANIFEST_SUM_NAME} is the last entry of a complete backup)`,
      );
    await fh.read(h, 0, BLOCK, pos);
    if (h.every((b) => b === 0)) break;
    if (!checksumOk(h))
      throw new BackupFileError(`${path} is damaged or not a Strongroom backup: bad archive header at byte ${pos}`);
    const name = h.toString('utf8', 0, 100).replace(/\0.*$/s, '');
    const entrySize = parseSize(h);
    const offset = pos + BLOCK;
    if (offset + entrySize > size)
      throw new BackupFileError(
        `${path} is truncated: ${name} needs ${entrySize} bytes but the file ends ${size - offset} bytes into it`,
      );
    entries.push({ name, size: entrySize, offset });
    pos = offset + entrySize + ((BLOCK - (entrySize % BLOCK)) % BLOCK);
  }
  if (entries.at(-1)?.name !== MANIFEST_SUM_NAME)
    throw new BackupFileError(
      entries.length === 0
        ? `${path} is not a Strongroom backup: it holds no entries`
        : `${path} is truncated or not a Strongroom backup: its last entry is ${entries.at(-1)?.name}, not ` +
            `${MANIFEST_SUM_NAME}`,
    );
  return entries;
}

/** The bytes of one entry, in chunks. */
export async function* readEntry(fh: FileHandle, e: ArchiveEntry, chunkSize = 1024 * 1024): AsyncGenerator<Buffer> {
  let done = 0;
  while (done < e.size) {
    const len = Math.min(chunkSize, e.size - done);
    const buf = Buffer.allocUnsafe(len);
    const { bytesRead } = await fh.read(buf, 0, len, e.offset + done);
    if (bytesRead !== len) throw new BackupFileError(`the backup file changed while it was read (${e.name})`);
    done += len;
    yield buf;
  }
}

async function readWhole(fh: FileHandle, e: ArchiveEntry): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of readEntry(fh, e)) parts.push(c);
  return Buffer.concat(parts);
}

/**
 * Reads and checks the manifest, then every entry's size and SHA-256 against it. Throws
 * BackupFileError naming what is wrong; nothing is written anywhere.
 */
export async function verifyArchive(
  fh: FileHandle,
  path: string,
  onBytes: (n: number) => void = () => {},
): Promise<{ manifest: BackupManifest; entries: Map<string, ArchiveEntry> }> {
  const list = await listArchive(fh, path);
  const byName = new Map(list.map((e) => [e.name, e]));
  const manifestEntry = byName.get(MANIFEST_NAME);
  if (!manifestEntry) throw new BackupFileError(`${path} has no ${MANIFEST_NAME}: not a Strongroom backup`);
  const text = await readWhole(fh, manifestEntry);
  const sumLine = (await readWhole(fh, byName.get(MANIFEST_SUM_NAME) as ArchiveEntry)).toString('ascii');
  if (sumLine.slice(0, 64) !== createHash('sha256').update(text).digest('hex'))
    throw new BackupFileError(
      `${path} is damaged: ${MANIFEST_NAME} does not match its checksum in ${MANIFEST_SUM_NAME}`,
    );
  let manifest: BackupManifest;
  try {
    manifest = JSON.parse(text.toString('utf8')) as BackupManifest;
  } catch {
    throw new BackupFileError(`${path} is damaged: ${MANIFEST_NAME} is not JSON`);
  }
  if (manifest.format !== BACKUP_FORMAT || manifest.version !== 1)
    throw new BackupFileError(
      `${path} is not a Strongroom backup of a version this server reads (format ${manifest.format} ` +
        `${manifest.version})`,
    );
  const listed = new Set(manifest.entries.map((e) => e.name));
  for (const e of list)
    if (e.name !== MANIFEST_NAME && e.name !== MANIFEST_SUM_NAME && !listed.has(e.name))
      throw new BackupFileError(`${path} is damaged: it holds ${e.name}, which its manifest does not list`);
  for (const m of manifest.entries) {
    const e = byName.get(m.name);
    if (!e) throw new BackupFileError(`${path} is damaged: ${m.name}, listed in its manifest, is missing`);
    if (e.size !== m.size)
      throw new BackupFileError(`${path} is damaged: ${m.name} holds ${e.size} bytes, its manifest says ${m.size}`);
    const sha = createHash('sha256');
    for await (const c of readEntry(fh, e)) {
      sha.update(c);
      onBytes(c.length);
    }
    if (sha.digest('hex') !== m.sha256)
      throw new BackupFileError(`${path} is damaged: the SHA-256 of ${m.name} does not match its manifest`);
  }
  return { manifest, entries: byName };
}
