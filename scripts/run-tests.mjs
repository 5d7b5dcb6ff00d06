#!/usr/bin/env node
// Runs every compiled test file with node's test runner, several files at a time.
// PostgreSQL: uses TEST_DATABASE_URL, or the local default when it answers.
// With REQUIRE_POSTGRES=1 the run fails unless PostgreSQL tests ran and passed.
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { availableParallelism } from 'node:os';

const root = new URL('..', import.meta.url).pathname;
const DEFAULT_PG = 'postgres://postgres@127.0.0.1:5432/test';

function findTests(dir, out = []) {
  let entries;
  try {
    entries = readdirSync(dir);
  } catch {
    return out;
  }
  for (const name of entries) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) findTests(p, out);
    else if (name.endsWith('.test.js')) out.push(p);
  }
  return out;
}

const env = { ...process.env };
if (!env.TEST_DATABASE_URL) {
  const probe = spawnSync('psql', [DEFAULT_PG, '-Atc', 'select 1'], { encoding: 'utf8', timeout: 5000 });
  if (probe.status === 0) env.TEST_DATABASE_URL = DEFAULT_PG;
}
if (env.REQUIRE_POSTGRES === '1' && !env.TEST_DATABASE_URL) {
  console.error('REQUIRE_POSTGRES=1 but no PostgreSQL is reachable (set TEST_DATABASE_URL)');
  process.exit(1);
}

const filter = process.argv.slice(2);
let files = [...findTests(join(root, 'dist/src')), ...findTests(join(root, 'dist/test'))].sort();
if (filter.length > 0) files = files.filter((f) => filter.some((x) => f.includes(x)));
if (files.length === 0) {
  console.error('no test files found (did the build run?)');
  process.exit(1);
}
console.log(`running ${files.length} test files; PostgreSQL: ${env.TEST_DATABASE_URL ? 'yes' : 'no (SQLite only)'}`);

mkdirSync(join(root, '.tmp'), { recursive: true });
const tap = join(root, '.tmp/test-results.tap');
const concurrency = Number(env.TEST_CONCURRENCY ?? Math.max(2, availableParallelism()));
const child = spawn(
  process.execPath,
  [
    '--test',
    `--test-concurrency=${concurrency}`,
    `--test-timeout=${env.TEST_TIMEOUT_MS ?? 300000}`,
    '--test-reporter=spec',
    '--test-reporter-destination=stdout',
    '--test-reporter=tap',
    `--test-reporter-destination=${tap}`,
    ...files,
  ],
  { stdio: 'inherit', env, cwd: root },
);
child.on('exit', (code, signal) => {
  if (code !== 0) process.exit(code ?? 1);
  if (signal) process.exit(1);
  if (env.TEST_DATABASE_URL) {
    const lines = readFileSync(tap, 'utf8').split('\n');
    const pgPassed = lines.filter((l) => /^\s*ok \d+ - .*\[postgres\]/.test(l) && !/# SKIP/.test(l)).length;
    const pgSkipped = lines.filter((l) => /\[postgres\].*# SKIP/.test(l)).length;
    console.log(`PostgreSQL tests passed: ${pgPassed}, skipped: ${pgSkipped}`);
    if (env.REQUIRE_POSTGRES === '1' && (pgPassed === 0 || pgSkipped > 0)) {
      console.error('PostgreSQL tests were required but did not all run');
      process.exit(1);
    }
  }
  process.exit(0);
});
