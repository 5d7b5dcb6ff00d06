import { it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeWithServer } from '../support/test-server.js';

/**
 * The hvac client (Debian package python3-hvac, hvac 0.11.2) against the real server:
 * the strongest check that the /v1 plumbing is what Vault clients expect.
 */
const PYTHON = '/usr/bin/python3';
const here = dirname(fileURLToPath(import.meta.url));
// Runs from dist/test/e2e; the script stays in the source tree.
const SCRIPT = [resolve(here, 'vault-hvac.py'), resolve(here, '../../../test/e2e/vault-hvac.py')].find((p) =>
  existsSync(p),
) as string;

function hvacAvailable(): boolean {
  return existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'import hvac'], { encoding: 'utf8' }).status === 0;
}

const skip = hvacAvailable() ? false : 'python3-hvac is not installed (apt-get install -y python3-hvac)';

describeWithServer('hvac against /v1', { skip }, (server) => {
  it('manages mounts, tunes, policies and tokens through hvac', async () => {
    const { spawn } = await import('node:child_process');
    const child = spawn(PYTHON, [SCRIPT], {
      env: { PATH: process.env.PATH ?? '', VAULT_ADDR: server.url, VAULT_TOKEN: server.rootToken },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const code = await new Promise<number | null>((done) => child.on('close', done));
    assert.equal(code, 0, out);
    for (const step of ['health', 'mounts', 'policies', 'tokens', 'cleanup'])
      assert.match(out, new RegExp(`^ok ${step}$`, 'm'));
  });
});
