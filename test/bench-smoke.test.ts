// Runs every benchmark scenario for about a second with tiny data, so the harness cannot rot:
// each scenario must produce a result row (or its facts) or skip cleanly with a message.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { SCENARIOS } from '../bench/scenarios/all-scenarios.js';
import type { ScenarioResult } from '../bench/lib/types.js';

const BENCH = fileURLToPath(new URL('../bench/bench.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'bench-smoke-'));
after(() => rmSync(dir, { recursive: true, force: true }));

async function runBench(
  args: string[],
  name: string,
): Promise<{ code: number | null; results: ScenarioResult[]; output: string }> {
  const json = join(dir, `${name}.json`);
  const child = spawn(process.execPath, [BENCH, ...args, '--smoke', '--json', json], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString('utf8')));
  child.stderr.on('data', (c: Buffer) => (output += c.toString('utf8')));
  const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
  let results: ScenarioResult[] = [];
  try {
    results = JSON.parse(readFileSync(json, 'utf8')) as ScenarioResult[];
  } catch {
    // asserted below with the output attached
  }
  return { code, results, output };
}

function assertProducedOrSkipped(r: ScenarioResult, output: string): void {
  const context = `${r.name}: ${r.message ?? ''}\n--- harness output ---\n${output.slice(-4000)}`;
  assert.notEqual(r.status, 'failed', context);
  if (r.status === 'skipped') {
    assert.match(r.message ?? '', /^(skipped: feature not available yet|peer )/, context);
    return;
  }
  assert.ok(r.rows.length > 0 || r.facts.length > 0, `${r.name} produced neither rows nor facts`);
  for (const row of r.rows) {
    assert.ok(row.rounds.length >= 1, `${r.name}/${row.label} has no rounds`);
    assert.ok(Number.isFinite(row.median.reqPerSec), `${r.name}/${row.label} has no req/s`);
  }
}

describe('benchmark harness smoke run', () => {
  it(
    'runs every scenario for about a second and reports a row or a clean skip for each',
    { timeout: 300_000 },
    async () => {
      const { code, results, output } = await runBench(['all'], 'all');
      assert.equal(results.length, SCENARIOS.length, `expected one result per scenario\n${output.slice(-4000)}`);
      assert.deepEqual(
        results.map((r) => r.name),
        SCENARIOS.map((s) => s.name),
      );
      for (const r of results) assertProducedOrSkipped(r, output);
      assert.equal(code, 0, output.slice(-4000));
    },
  );

  it('loads with wrk where it can, and reports the mean and the p99.9 it measured', { timeout: 120_000 }, async () => {
    const { code, results, output } = await runBench(['pki-sign-p256', '--load-generator', 'wrk'], 'wrk');
    assert.equal(code, 0, output.slice(-4000));
    const ours = results[0]?.rows.find((r) => r.kind === 'strongroom');
    assert.ok(ours, output.slice(-4000));
    for (const m of ours.rounds) {
      assert.ok(m.requests > 0, 'wrk counted answered requests');
      // wrk's histogram is in microseconds (autocannon's whole milliseconds cannot give a mean like this).
      assert.ok(Number.isFinite(m.meanMs) && (m.meanMs as number) > 0, `mean ${m.meanMs}`);
      assert.ok((m.p999Ms as number) >= m.p99Ms && m.p99Ms >= m.p50Ms, `percentiles ${JSON.stringify(m)}`);
    }
  });

  const pgUrl = process.env.TEST_DATABASE_URL;
  it(
    'runs a state scenario against PostgreSQL [postgres]',
    { skip: pgUrl ? false : 'TEST_DATABASE_URL is not set', timeout: 120_000 },
    async () => {
      const { code, results, output } = await runBench(
        ['state-current', '--db', 'postgres', '--postgres-url', pgUrl as string],
        'pg',
      );
      assert.equal(results.length, 1, output.slice(-4000));
      assertProducedOrSkipped(results[0] as ScenarioResult, output);
      assert.equal(code, 0, output.slice(-4000));
    },
  );
});
