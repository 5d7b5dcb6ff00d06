import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { buildGoProgram, goProblem, runProgram } from '../support/go-program.js';
import { dbKinds } from '../support/test-db.js';
import { startTestServer } from '../support/test-server.js';
import type { TestServer } from '../support/test-server.js';

/**
 * Compatibility with the official Go client: builds the program in test/go-tfe against go-tfe
 * (Debian: golang-go, golang-github-hashicorp-go-tfe-dev; GOPATH mode, offline) and runs
 * it against a real server on each database. Skips only when Go or the package is
 * missing and REQUIRE_GO_TFE is not 1; with REQUIRE_GO_TFE=1 a missing toolchain fails.
 */

const required = process.env.REQUIRE_GO_TFE === '1';

function gopath(): string {
  const candidates = [process.env.GOPATH, '/usr/share/gocode'].filter((p): p is string => Boolean(p));
  return candidates.find((p) => existsSync(join(p, 'src/github.com/hashicorp/go-tfe/tfe.go'))) ?? '';
}

function toolchainProblem(): string | null {
  const go = goProblem();
  if (go !== null) return go;
  if (gopath() === '') return 'go-tfe is not installed (apt-get install golang-github-hashicorp-go-tfe-dev)';
  return null;
}

const problem = toolchainProblem();
const skip =
  problem !== null && !required
    ? `go-tfe compatibility skipped: ${problem}; set REQUIRE_GO_TFE=1 to make this a failure`
    : false;

describe('go-tfe compatibility', { skip }, () => {
  let binary = '';

  before(async () => {
    if (problem !== null) assert.fail(`REQUIRE_GO_TFE=1 but ${problem}`);
    binary = await buildGoProgram('go-tfe', gopath());
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
        const r = await runProgram(
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
