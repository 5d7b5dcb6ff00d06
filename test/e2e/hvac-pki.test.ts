import { it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeWithServer } from '../support/test-server.js';

/**
 * hvac (Debian package python3-hvac) driving roles, issue, sign, stored certificates,
 * policies, tokens and leases against the real server; openssl checks the certificates.
 */
const PYTHON = '/usr/bin/python3';
const here = dirname(fileURLToPath(import.meta.url));
// Runs from dist/test/e2e; the script stays in the source tree.
const SCRIPT = [resolve(here, 'hvac-pki.py'), resolve(here, '../../../test/e2e/hvac-pki.py')].find((p) =>
  existsSync(p),
) as string;

const hvacAvailable = existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'import hvac'], { encoding: 'utf8' }).status === 0;
const skip = hvacAvailable ? false : 'python3-hvac is not installed (apt-get install -y python3-hvac)';

describeWithServer('hvac roles and issuance', { skip }, (server) => {
  it('creates roles, issues, signs, lists and reads certificates, and revokes through leases with hvac', async () => {
    const child = spawn(PYTHON, [SCRIPT], {
      env: { PATH: process.env.PATH ?? '', VAULT_ADDR: server.url, VAULT_TOKEN: server.rootToken },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const code = await new Promise<number | null>((done) => child.on('close', done));
    assert.equal(code, 0, out);
    for (const s of [
      'mount',
      'root',
      'roles',
      'issue',
      'sign',
      'list and read',
      'policies and tokens',
      'leases',
      'cleanup',
    ]) {
      assert.match(out, new RegExp(`^ok ${s}$`, 'm'));
    }
  });
});
