import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dbKinds } from '../support/test-db.js';
import { startTestServer } from '../support/test-server.js';
import type { TestServer } from '../support/test-server.js';

/**
 * Compatibility with the official Go client: builds the program in test/go-tfe against go-tfe
 * (Debian: golang-go, golang-github-hashicorp-go-tfe-dev; GOPATH mode, offline) and runs
 * it against a real server on each database. Skips only when Go or the package is
 * missing and REQUIRE_GO_TFE is not 1; with REQUIRE_GO_TFE=1 a missing toolchain fails.
 */

const SOURCE_DIR = fileURLToPath(new URL('../../../test/go-tfe', import.meta.url));
// The program's files, given to `go build` by name (GOPATH mode takes no absolute package path).
const SOURCES = readdirSync(SOURCE_DIR)
  .filter((f) => f.endsWith('.go'))
  .map((f) => join(SOURCE_DIR, f));
const required = process.env.REQUIRE_GO_TFE === '1';

function gopath(): string {
  const candidates = [process.env.GOPATH, '/usr/share/gocode'].filter((p): p is string => Boolean(p));
  return candidates.find((p) => existsSync(join(p, 'src/github.com/hashicorp/go-tfe/tfe.go'))) ?? '';
}

function toolchainProblem(): string | null {
  const go = spawnSync('go', ['version'], { encoding: 'utf8' });
  if (go.error || go.status !== 0) return 'the Go toolchain is not installed (apt-get install golang-go)';
  if (gopath() === '') return 'go-tfe is not installed (apt-get install golang-github-hashicorp-go-tfe-dev)';
  return null;
}

const problem = toolchainProblem();
const skip =
  problem !== null && !required
    ? `go-tfe compatibility skipped: ${problem}; set REQUIRE_GO_TFE=1 to make this a failure`
    : false;

function goEnv(cacheDir: string): NodeJS.ProcessEnv {
  return {
    ...process.env,
    GO111MODULE: 'off',
    GOPATH: gopath(),
    GOFLAGS: '',
    GOCACHE: process.env.GOCACHE ?? cacheDir,
    CGO_ENABLED: '0',
  };
}

function run(
  cmd: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { env, timeout: timeoutMs, maxBuffer: 8 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : null) : 0;
      resolve({ code, out: `${stdout}${stderr}` });
    });
  });
}

describe('go-tfe compatibility', { skip }, () => {
  let binary = '';

  before(async () => {
    if (problem !== null) assert.fail(`REQUIRE_GO_TFE=1 but ${problem}`);
    const dir = mkdtempSync(join(tmpdir(), 'strongroom-go-tfe-'));
    const cache = join(tmpdir(), 'strongroom-go-cache');
    mkdirSync(cache, { recursive: true });
    binary = join(dir, 'go-tfe-compat');
    const built = await run('go', ['build', '-o', binary, ...SOURCES], goEnv(cache), 300_000);
    assert.equal(built.code, 0, `go build failed:\n${built.out}`);
  });

  for (const kind of dbKinds()) {
    describe(`against a server [${kind}]`, () => {
      let srv: TestServer;
      before(async () => {
        srv = await startTestServer(kind);
        // Outputs come from the extraction job; let the worker run as in production.
        srv.deps.worker.start();
      });
      after(async () => srv.close());

      it('organizations, workspaces, state versions, teams, access, tokens, projects as go-tfe expects', async () => {
        const r = await run(
          binary,
          [],
          { ...process.env, STRONGROOM_URL: srv.url, STRONGROOM_TOKEN: srv.rootToken },
          120_000,
        );
        assert.equal(r.code, 0, `go-tfe program failed:\n${r.out}`);
        assert.match(r.out, /go-tfe compatibility: all checks passed/);
      });
    });
  }
});
