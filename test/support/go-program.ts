import { execFile, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Go programs of the test suite (test/go-tfe, test/vault-go): built offline in GOPATH mode
 * (GO111MODULE=off) from the files of one directory, then run against a real server.
 */

/** Why Go programs cannot be built here, or null when they can. */
export function goProblem(): string | null {
  const go = spawnSync('go', ['version'], { encoding: 'utf8' });
  return go.error || go.status !== 0 ? 'the Go toolchain is not installed (apt-get install golang-go)' : null;
}

/** Runs a command to its end: its exit code (null when killed) and everything it printed. */
export function runProgram(
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

/**
 * Builds the program in `test/<dir>` (every .go file, given by name: GOPATH mode takes no
 * absolute package path) against the packages under `gopath`; resolves with the binary.
 */
export async function buildGoProgram(dir: string, gopath = ''): Promise<string> {
  const source = fileURLToPath(new URL(`../../../test/${dir}`, import.meta.url));
  const files = readdirSync(source)
    .filter((f) => f.endsWith('.go'))
    .map((f) => join(source, f));
  const cache = join(tmpdir(), 'strongroom-go-cache');
  mkdirSync(cache, { recursive: true });
  const binary = join(mkdtempSync(join(tmpdir(), `strongroom-${basename(dir)}-`)), basename(dir));
  const env = {
    ...process.env,
    GO111MODULE: 'off',
    GOPATH: gopath,
    GOFLAGS: '',
    GOCACHE: process.env.GOCACHE ?? cache,
    CGO_ENABLED: '0',
  };
  const built = await runProgram('go', ['build', '-o', binary, ...files], env, 300_000);
  if (built.code !== 0) throw new Error(`go build of test/${dir} failed:\n${built.out}`);
  return binary;
}
