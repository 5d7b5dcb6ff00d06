#!/usr/bin/env node
// Builds the server (src/ without its tests, tsconfig.build.json) into dist/, and only when
// it must: `npm ci` (prepare) builds it once; `npm start` (prestart) rebuilds only when a
// source file, a tsconfig or the lock file is newer than the last build. Says what it does,
// so the first build is not a silent wait.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Where a successful build leaves its mark; its mtime is the build's time. */
export const STAMP = 'dist/.server-build-stamp';
const INPUTS = ['tsconfig.json', 'tsconfig.build.json', 'package-lock.json'];

function newestIn(dir, newest = { path: undefined, mtimeMs: 0 }) {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return newest;
  }
  for (const e of entries) {
    const p = join(dir, e.name);
    if (e.isDirectory()) newestIn(p, newest);
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.test.ts')) {
      const m = statSync(p).mtimeMs;
      if (m > newest.mtimeMs) Object.assign(newest, { path: p, mtimeMs: m });
    }
  }
  return newest;
}

/** Why the server under `root` needs a build, or undefined when dist/ is current. */
export function staleReason(root) {
  const stamp = join(root, STAMP);
  if (!existsSync(stamp) || !existsSync(join(root, 'dist/src/cli.js'))) return 'no build yet';
  const built = statSync(stamp).mtimeMs;
  const newest = newestIn(join(root, 'src'));
  for (const f of INPUTS) {
    const p = join(root, f);
    if (existsSync(p) && statSync(p).mtimeMs > newest.mtimeMs)
      Object.assign(newest, { path: p, mtimeMs: statSync(p).mtimeMs });
  }
  return newest.mtimeMs > built ? `${relative(root, newest.path)} changed` : undefined;
}

function main() {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const ifStale = process.argv.includes('--if-stale');
  const reason = staleReason(root);
  if (ifStale && !reason) return 0;
  const tsc = join(root, 'node_modules/typescript/bin/tsc');
  if (!existsSync(tsc)) {
    process.stderr.write(
      'strongroom: TypeScript is not installed (npm ci without --omit=dev installs it); cannot build\n',
    );
    return existsSync(join(root, 'dist/src/cli.js')) ? 0 : 1;
  }
  const first = reason === 'no build yet' ? '; the first build takes a minute or two' : '';
  process.stderr.write(`strongroom: building the server into dist/ (${reason ?? 'requested'})${first} ...\n`);
  const started = Date.now();
  const r = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
  if (r.status !== 0) return r.status ?? 1;
  mkdirSync(join(root, 'dist'), { recursive: true });
  writeFileSync(join(root, STAMP), `${new Date().toISOString()}\n`);
  process.stderr.write(`strongroom: built in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  return 0;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) process.exitCode = main();
