import { it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ManualClock } from '../../src/shared/clock.js';
import { describeWithServer } from '../support/test-server.js';

/** hvac (Debian package python3-hvac) driving tidy, tidy-status, tidy-cancel and config/auto-tidy. */
const PYTHON = '/usr/bin/python3';
const here = dirname(fileURLToPath(import.meta.url));
// Runs from dist/test/e2e; the script stays in the source tree.
const SCRIPT = [resolve(here, 'hvac-tidy.py'), resolve(here, '../../../test/e2e/hvac-tidy.py')].find((p) =>
  existsSync(p),
) as string;

const hvacAvailable = existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'import hvac'], { encoding: 'utf8' }).status === 0;
const skip = hvacAvailable ? false : 'python3-hvac is not installed (apt-get install -y python3-hvac)';

describeWithServer('hvac tidy', { skip }, (server) => {
  const clock = new ManualClock('2030-06-01T00:00:00.000Z');

  const hvac = async (...args: string[]): Promise<string> => {
    const child = spawn(PYTHON, [SCRIPT, ...args], {
      env: { PATH: process.env.PATH ?? '', VAULT_ADDR: server.url, VAULT_TOKEN: server.rootToken },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const code = await new Promise<number | null>((done) => child.on('close', done));
    assert.equal(code, 0, out);
    return out;
  };

  it('hvac starts a tidy, reads its status and auto-tidy config; the worker removes the expired cert', async () => {
    const out = await hvac('start');
    for (const s of ['setup', 'status before', 'auto-tidy config', 'tidy started'])
      assert.match(out, new RegExp(`^ok ${s}$`, 'm'));
    const serial = /^serial (\S+)$/m.exec(out)?.[1];
    assert.ok(serial, out);
    clock.advance(2 * 3600);
    await server.deps.worker.runUntilIdle();
    assert.match(await hvac('check', serial), /^ok tidy finished$/m);
  });

  return { clock };
});
