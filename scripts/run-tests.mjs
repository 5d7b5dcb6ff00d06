#!/usr/bin/env node
// Runs every compiled test file with node's test runner, one process per file, several files at a time.
// PostgreSQL: uses TEST_DATABASE_URL, or the local default when it answers.
// After the run it prints the slowest files, every skipped test grouped by reason, and how many PostgreSQL tests
// ran (at any depth). With REQUIRE_POSTGRES=1 the run fails unless PostgreSQL tests ran and none was skipped.
// With CI=true (or REQUIRE_NO_SKIPS=1) the run fails on any skip whose reason is not on the allow-list in
// scripts/test-skips.json. With REQUIRE_TERRAFORM=1 it fails unless the real Terraform CLI tests ran, none skipped.
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { availableParallelism } from 'node:os';
import { parseTap, summarizeSkips, unexpectedSkips } from './tap-summary.mjs';

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
const strictSkips = env.CI === 'true' || env.CI === '1' || env.REQUIRE_NO_SKIPS === '1';

const filter = process.argv.slice(2);
let files = [...findTests(join(root, 'dist/src')), ...findTests(join(root, 'dist/test'))].sort();
if (filter.length > 0) files = files.filter((f) => filter.some((x) => f.includes(x)));
if (files.length === 0) {
  console.error('no test files found (did the build run?)');
  process.exit(1);
}
const concurrency = Math.max(1, Number(env.TEST_CONCURRENCY ?? Math.max(2, availableParallelism())));
console.log(
  `running ${files.length} test files, ${concurrency} at a time; ` +
    `PostgreSQL: ${env.TEST_DATABASE_URL ? 'yes' : 'no (SQLite only)'}`,
);

const outDir = join(root, '.tmp/test-results');
mkdirSync(outDir, { recursive: true });
const started = Date.now();

/** Runs one file in its own test process; resolves with its outcome, timing and TAP text. */
function runFile(file) {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const name = relative(join(root, 'dist'), file);
    const tapFile = join(outDir, name.replaceAll('/', '__') + '.tap');
    const child = spawn(
      process.execPath,
      [
        '--test',
        `--test-timeout=${env.TEST_TIMEOUT_MS ?? 300000}`,
        '--test-reporter=spec',
        '--test-reporter-destination=stdout',
        '--test-reporter=tap',
        `--test-reporter-destination=${tapFile}`,
        file,
      ],
      { env, cwd: root, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('close', (code, signal) => {
      let tap = '';
      try {
        tap = readFileSync(tapFile, 'utf8');
      } catch {
        // a process that died before writing any TAP is reported by its exit status below
      }
      resolve({ name, ok: code === 0 && !signal, code, signal, out, tap, seconds: (Date.now() - t0) / 1000 });
    });
  });
}

const results = [];
let next = 0;
async function worker() {
  while (next < files.length) {
    const file = files[next++];
    const r = await runFile(file);
    results.push(r);
    const mark = r.ok ? 'ok  ' : 'FAIL';
    console.log(`${mark} ${r.name} (${r.seconds.toFixed(1)} s)`);
    if (!r.ok || env.TEST_VERBOSE === '1') {
      process.stdout.write(r.out.endsWith('\n') ? r.out : r.out + '\n');
      if (r.signal) console.log(`  (killed by ${r.signal})`);
    }
  }
}
await Promise.all(Array.from({ length: Math.min(concurrency, files.length) }, worker));

const tests = results.flatMap((r) => parseTap(r.tap).map((t) => ({ ...t, file: r.name })));
writeFileSync(join(root, '.tmp/test-results.tap'), results.map((r) => r.tap).join('\n'));
const failedFiles = results.filter((r) => !r.ok);
const leaves = tests.filter((t) => t.leaf);
const passed = leaves.filter((t) => t.ok && !t.skip && !t.todo).length;
const failed = leaves.filter((t) => !t.ok).length;
const skipped = leaves.filter((t) => t.skip);

console.log('');
console.log(`tests: ${leaves.length}, passed: ${passed}, failed: ${failed}, skipped: ${skipped.length}`);
console.log(
  `files: ${results.length}, failed: ${failedFiles.length}; wall time ${((Date.now() - started) / 1000).toFixed(0)} s`,
);
console.log('slowest files:');
for (const r of [...results].sort((a, b) => b.seconds - a.seconds).slice(0, 10)) {
  console.log(`  ${r.seconds.toFixed(1).padStart(7)} s  ${r.name}`);
}

let exit = failedFiles.length > 0 ? 1 : 0;

const skipGroups = summarizeSkips(skipped);
if (skipGroups.length > 0) {
  console.log('skipped tests by reason:');
  for (const g of skipGroups) console.log(`  ${String(g.count).padStart(4)}  ${g.reason}`);
}
const allowList = JSON.parse(readFileSync(join(root, 'scripts/test-skips.json'), 'utf8')).allowed;
const unexpected = unexpectedSkips(skipped, allowList);
if (unexpected.length > 0) {
  const say = strictSkips ? console.error : console.log;
  say(`${unexpected.length} skipped test(s) are not on the allow-list (scripts/test-skips.json):`);
  for (const t of unexpected) say(`  ${t.file}: ${t.path.join(' > ')} (${t.reason || 'no reason given'})`);
  if (strictSkips) exit = 1;
}

if (env.TEST_DATABASE_URL) {
  const pg = leaves.filter((t) => t.path.some((p) => p.includes('[postgres]')));
  const pgPassed = pg.filter((t) => t.ok && !t.skip).length;
  const pgSkipped = pg.filter((t) => t.skip).length;
  console.log(`PostgreSQL tests passed: ${pgPassed}, skipped: ${pgSkipped}`);
  const pgUnexpected = unexpectedSkips(
    pg.filter((t) => t.skip),
    allowList,
  ).length;
  if (env.REQUIRE_POSTGRES === '1' && (pgPassed === 0 || pgUnexpected > 0)) {
    console.error('PostgreSQL tests were required but did not all run');
    exit = 1;
  }
}
// With REQUIRE_TERRAFORM=1 (.ci/run sets it when `terraform` is on PATH) the real Terraform CLI tests must have run:
// in a whole run their file must be there, and wherever it ran, tests passed and none was skipped.
const TERRAFORM_FILE = 'test/e2e/terraform-cli.test.js';
if (env.REQUIRE_TERRAFORM === '1' && (filter.length === 0 || results.some((r) => r.name === TERRAFORM_FILE))) {
  const tf = leaves.filter((t) => t.file === TERRAFORM_FILE);
  const tfPassed = tf.filter((t) => t.ok && !t.skip).length;
  const tfSkipped = tf.filter((t) => t.skip).length;
  console.log(`real Terraform CLI tests passed: ${tfPassed}, skipped: ${tfSkipped}`);
  if (tfPassed === 0 || tfSkipped > 0) {
    console.error('the real Terraform CLI tests were required (REQUIRE_TERRAFORM=1) but did not all run');
    exit = 1;
  }
}
process.exit(exit);
