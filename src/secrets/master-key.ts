import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { chmod, mkdir, open, readFile, rename, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';

/**
 * Returns the master key: from STRONGROOM_MASTER_KEY when set, otherwise from
 * `<dataDir>/master.key`, generating that file (mode 0600) on first start.
 *
 * The file holds one base64 key per line: the current one first, then keys that still
 * open values while a rotation re-seals them (`others`, written and removed by
 * secrets/master-key-rotation.ts).
 */
export async function loadMasterKey(opts: {
  dataDir: string;
  fromEnv: string | undefined;
}): Promise<{ key: Buffer; others: Buffer[]; created: boolean; path?: string }> {
  if (opts.fromEnv) return { key: Buffer.from(opts.fromEnv, 'base64'), others: [], created: false };
  await mkdir(opts.dataDir, { recursive: true, mode: 0o700 });
  const path = join(opts.dataDir, 'master.key');
  const existing = await readFile(path, 'utf8').catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return undefined;
    throw err;
  });
  if (existing !== undefined) {
    const keys = parseKeyFile(path, existing);
    const mode = (await stat(path)).mode & 0o777;
    if (mode & 0o077) await chmod(path, 0o600);
    return { key: keys[0] as Buffer, others: keys.slice(1), created: false, path };
  }
  const key = randomBytes(32);
  // 'wx' fails if another process created it first; then read theirs.
  try {
    const fh = await open(path, 'wx', 0o600);
    await fh.writeFile(key.toString('base64') + '\n');
    await fh.sync();
    await fh.close();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return loadMasterKey(opts);
    throw err;
  }
  return { key, others: [], created: true, path };
}

/** The keys of a key file, the current one first. */
function parseKeyFile(path: string, text: string): Buffer[] {
  const keys = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '')
    .map((l) => Buffer.from(l, 'base64'));
  if (keys.length === 0 || keys.some((k) => k.length !== 32)) {
    throw new Error(`${path} does not hold base64 32-byte keys, one a line`);
  }
  return keys;
}

/** The key file as it is now (another worker may have rotated it), the current key first. */
export function readMasterKeyFileSync(path: string): Buffer[] {
  return parseKeyFile(path, readFileSync(path, 'utf8'));
}

/** Replaces the key file atomically (temporary file, fsync, rename, directory fsync): the current key first. */
export async function writeMasterKeyFile(path: string, keys: Buffer[]): Promise<void> {
  const tmp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  const fh = await open(tmp, 'wx', 0o600);
  try {
    await fh.writeFile(keys.map((k) => k.toString('base64') + '\n').join(''));
    await fh.sync();
  } finally {
    await fh.close();
  }
  await rename(tmp, path);
  const dir = await open(dirname(path), 'r');
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
}
