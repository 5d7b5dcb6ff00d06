import { createWriteStream, existsSync } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ConfigError, loadConfig } from '../config.js';
import { BackupFileError, MASTER_KEY_NOTE } from '../backup/backup-archive.js';
import { takeBackup } from '../backup/backup-service.js';
import { restoreBackup } from '../backup/restore.js';
import { PRIVATE_FILE_MODE } from '../shared/private-files.js';
import { parseSettingFlags } from './server-flags.js';

export const BACKUP_USAGE = `Usage: strongroom backup --out FILE [settings]

Takes a consistent snapshot of the server's storage while it runs and writes it to FILE (a tar
archive with a manifest of SHA-256 checksums; mode 0600). SQLite: the database (copied with
VACUUM INTO, on the server's machine) and every blob file it refers to. PostgreSQL: every table,
read in one REPEATABLE READ transaction. Everything committed before the snapshot is in it;
nothing committed after. Shows progress on a terminal.

The backup does NOT include the master key (STRONGROOM_MASTER_KEY or <data_dir>/master.key):
keep it separately; the restored server needs the same key.

Settings that name the storage: --data-dir, --database-url, --config (as for strongroom server).
Over HTTP, root or sudo tokens can GET /v1/sys/storage/raft/snapshot for the same archive.
`;

export const RESTORE_USAGE = `Usage: strongroom restore --from FILE [settings]

Checks FILE against its manifest (every entry's size and SHA-256; a damaged or truncated
file is refused), then restores it onto empty storage: with SQLite a new or empty --data-dir
(a master.key may already be there), with PostgreSQL an empty database (--database-url
postgres://…, no tables). Anything else is refused before a byte is written, and a failure
while restoring leaves the target as it was. Then start the server with the same master key.

Settings that name the storage: --data-dir, --database-url, --config (as for strongroom server).
`;

interface Io {
  out(text: string): void;
  err(text: string): void;
  tty: boolean;
}

/** `--out FILE` / `--from FILE` taken out of the arguments; the rest are settings. */
function fileFlag(argv: string[], flag: string): { file: string | undefined; rest: string[] } {
  const rest: string[] = [];
  let file: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === flag) file = argv[++i];
    else if (a.startsWith(`${flag}=`)) file = a.slice(flag.length + 1);
    else rest.push(a);
  }
  return { file, rest };
}

function settingsOf(argv: string[]) {
  const { flags, positionals } = parseSettingFlags(argv);
  if (positionals.length > 0) throw new ConfigError([`unexpected argument: ${positionals.join(' ')}`]);
  return loadConfig(undefined, flags);
}

/** A one-line progress bar on stderr, redrawn at most every 100 ms, and once more with the last figures at the end. */
function progressBar(io: Io, label: string) {
  let last = 0;
  let latest: [number, number | undefined] | undefined;
  const draw = (done: number, total: number | undefined, force = false) => {
    if (!io.tty) return;
    latest = [done, total];
    const now = Date.now();
    if (!force && now - last < 100) return;
    last = now;
    const mb = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MB`;
    if (total === undefined || total === 0) io.err(`\r${label} ${mb(done)}   `);
    else {
      const f = Math.min(1, done / total);
      const width = 30;
      const bar = '#'.repeat(Math.round(f * width)).padEnd(width, '.');
      io.err(`\r${label} [${bar}] ${(f * 100).toFixed(0).padStart(3)}% ${mb(done)} / ${mb(total)}   `);
    }
  };
  const end = () => {
    if (!io.tty) return;
    if (latest) draw(latest[0], latest[1], true);
    io.err('\n');
  };
  return { draw, end };
}

export async function runBackupCommand(argv: string[], io: Io): Promise<number> {
  const { file, rest } = fileFlag(argv, '--out');
  if (!file) {
    io.err(`backup needs --out FILE\n\n${BACKUP_USAGE}`);
    return 2;
  }
  const config = settingsOf(rest);
  if (existsSync(file)) {
    io.err(`${file} already exists; name a new file (a backup never overwrites one)\n`);
    return 1;
  }
  const partial = `${file}.partial`;
  const bar = progressBar(io, 'backup');
  try {
    const backup = await takeBackup(config, { onProgress: (p) => bar.draw(p.done, p.total) });
    await pipeline(Readable.from(backup.bytes), createWriteStream(partial, { flags: 'wx', mode: PRIVATE_FILE_MODE }));
    await rename(partial, file);
    bar.end();
    io.out(`backup of the ${backup.database === 'postgres' ? 'PostgreSQL' : 'SQLite'} storage written to ${file}\n`);
    io.out(`${MASTER_KEY_NOTE}\n`);
    return 0;
  } catch (err) {
    bar.end();
    await rm(partial, { force: true });
    io.err(`backup failed: ${(err as Error).message}\n`);
    return 1;
  }
}

export async function runRestoreCommand(argv: string[], io: Io): Promise<number> {
  const { file, rest } = fileFlag(argv, '--from');
  if (!file) {
    io.err(`restore needs --from FILE\n\n${RESTORE_USAGE}`);
    return 2;
  }
  const config = settingsOf(rest);
  let phase = '';
  const bars = { verify: progressBar(io, 'verify '), restore: progressBar(io, 'restore') };
  try {
    const result = await restoreBackup(file, config, (p) => {
      if (phase !== p.phase && phase !== '') bars.verify.end();
      phase = p.phase;
      bars[p.phase].draw(p.done, p.total);
    });
    if (phase !== '') bars.restore.end();
    const where = config.databaseKind === 'postgres' ? 'the PostgreSQL database' : config.dataDir;
    io.out(`restored ${result.summary} from ${file} (taken ${result.manifest.created_at}) into ${where}\n`);
    io.out('Start the server with the master key of the server the backup was taken from.\n');
    return 0;
  } catch (err) {
    if (phase !== '' && io.tty) io.err('\n');
    if (!(err instanceof BackupFileError)) {
      io.err(`restore failed: ${(err as Error).message}\nnothing was restored\n`);
      return 1;
    }
    io.err(`restore refused: ${err.message}\nnothing was restored\n`);
    return 1;
  }
}
