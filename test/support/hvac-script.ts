import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** hvac comes from Debian's python3-hvac, which installs for the system Python only. */
const PYTHON = '/usr/bin/python3';
const here = dirname(fileURLToPath(import.meta.url));

const hvacAvailable = existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'import hvac'], { encoding: 'utf8' }).status === 0;

/** The `skip` option for suites that need hvac. */
export const hvacSkip: false | string = hvacAvailable
  ? false
  : 'python3-hvac is not installed (apt-get install -y python3-hvac)';

/**
 * Runs a script of test/e2e with hvac against a server (VAULT_ADDR, VAULT_TOKEN, VAULT_CACERT set);
 * resolves with its exit code and everything it printed.
 */
export async function runHvacScript(
  name: string,
  env: { url: string; token: string; caFile?: string },
  args: string[] = [],
): Promise<{ code: number | null; out: string }> {
  // Runs from dist/test/support; the scripts stay in the source tree.
  const script = [resolve(here, '../e2e', name), resolve(here, '../../../test/e2e', name)].find((p) => existsSync(p));
  if (!script) throw new Error(`hvac script ${name} not found`);
  const child = spawn(PYTHON, [script, ...args], {
    env: {
      PATH: process.env.PATH ?? '',
      VAULT_ADDR: env.url,
      VAULT_TOKEN: env.token,
      ...(env.caFile ? { VAULT_CACERT: env.caFile } : {}),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((done) => child.on('close', done));
  return { code, out };
}
