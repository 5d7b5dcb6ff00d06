import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CLI } from '../support/spawn-server.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const TOOLS = ['curl', 'jq', 'openssl', 'terraform', 'bash'];

/** Every ```sh block of the README's "Quick start" section, in order, as written. */
export function quickStartBlocks(readme: string): string[] {
  const start = readme.indexOf('\n## Quick start\n');
  assert.ok(start >= 0, 'the README has a Quick start section');
  const end = readme.indexOf('\n## ', start + 1);
  const section = readme.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1] as string);
}

/** Stand-ins for `npm ci`, `npm start` and `npx strongroom` (what they do is said in the file). */
const PRELUDE = readFileSync(join(ROOT, 'test/e2e/readme-quickstart.sh'), 'utf8');

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

const missing = TOOLS.filter((t) => spawnSync('sh', ['-c', `command -v ${t}`]).status !== 0);

describe("the README's quick start", () => {
  it(
    'runs as written: state by curl and by strongroom tfe, a certificate by curl, state by Terraform over TLS',
    { skip: missing.length > 0 && process.env.CI !== 'true' ? `missing: ${missing.join(', ')}` : false },
    async () => {
      assert.deepEqual(missing, [], 'tools the quick start uses');
      const blocks = quickStartBlocks(readFileSync(join(ROOT, 'README.md'), 'utf8'));
      assert.ok(blocks.length >= 8, `sh blocks found: ${blocks.length}`);
      const port = await freePort();
      // The README's port becomes a free one; its token placeholder the token the server printed.
      const script = blocks
        .join('\n')
        .replaceAll('127.0.0.1:8200', `127.0.0.1:${port}`)
        .replaceAll('localhost:8200', `localhost:${port}`)
        .replaceAll('sr.…', '$(head -n 1 "$QS_WORK/token")');
      assert.ok(script.includes('terraform apply'), 'the Terraform steps are part of what runs');
      const work = mkdtempSync(join(tmpdir(), 'quickstart-'));
      symlinkSync(join(ROOT, 'docs'), join(work, 'docs'));
      try {
        const child = spawn('bash', ['-c', `${PRELUDE}\n${script}`], {
          cwd: work,
          env: {
            PATH: process.env.PATH,
            HOME: work,
            QS_CLI: CLI,
            QS_PORT: String(port),
            QS_WORK: work,
            // Terraform's update check would reach out to the internet.
            CHECKPOINT_DISABLE: '1',
          },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let out = '';
        let err = '';
        child.stdout.on('data', (d: Buffer) => (out += d.toString()));
        child.stderr.on('data', (d: Buffer) => (err += d.toString()));
        const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
        const all = `--- stdout\n${out}\n--- stderr\n${err}`;
        assert.equal(code, 0, all);

        // curl: the organization, workspace, lock, the state version, reads, outputs, unlock.
        assert.match(out, /^acme$/m, all);
        assert.match(out, /^ws-[1-9A-Za-z]{16}$/m, all);
        assert.match(out, /"status": "finalized",\s+"serial": 2/, all);
        assert.match(out, /"serial": 2,\s+"status": "finalized"/, all);
        assert.match(out, /"name": "greeting",\s+"value": "hello"/, all);
        assert.match(out, /^false$/m, 'unlocked');
        // strongroom tfe: create, lock, push, pull.
        assert.match(err, /locked acme\/demo-cli/, all);
        assert.match(err, /pushed serial 2 of docs\/examples\/terraform\.tfstate as sv-/, all);
        assert.match(out, /"serial": 2,\s+"lineage": "95c505ea-1ab5-38d2-e67f-2c40103ee27c"/, all);
        // The certificate authority: a role, and a certificate for www.example.com.
        assert.match(out, /^\["example\.com"\]$/m, all);
        assert.match(out, /subject=CN ?= ?www\.example\.com/, all);
        // Terraform with a cloud block over TLS, and its state read back.
        assert.match(out, /Apply complete! Resources: 1 added, 0 changed, 0 destroyed\./, all);
        assert.match(out, /"serial": 1,\s+"outputs": \{\s+"greeting": \{\s+"value": "hello from terraform"/, all);
        const firstStart = readFileSync(join(work, 'server.1.log'), 'utf8');
        assert.match(firstStart, /Initial admin token/);
      } finally {
        rmSync(work, { recursive: true, force: true });
      }
    },
  );
});
