import { randomBytes } from 'node:crypto';
import { chmod, mkdir, open, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * Returns the master key: from STRONGROOM_MASTER_KEY when set, otherwise from
 * `<dataDir>/master.key`, generating that file (mode 0600) on first start.
 */
export async function loadMasterKey(opts: {
  dataDir: string;
  fromEnv: string | undefined;
}): Promise<{ key: Buffer; created: boolean; path?: string }> {
  if (opts.fromEnv) return { key: Buffer.from(opts.fromEnv, 'base64'), created: false };
  await mkdir(opts.dataDir, { recursive: true, mode: 0o700 });
  const path = join(opts.dataDir, 'master.key');
  const existing = await readFile(path, 'utf8').catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return undefined;
    throw err;
  });
  if (existing !== undefined) {
    const key = Buffer.from(existing.trim(), 'base64');
    if (key.length !== 32) throw new Error(`${path} does not hold a base64 32-byte key`);
    const mode = (await stat(path)).mode & 0o777;
    if (mode & 0o077) await chmod(path, 0o600);
    return { key, created: false, path };
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
  return { key, created: true, path };
}
