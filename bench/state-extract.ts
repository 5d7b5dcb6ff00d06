import { createReadStream } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { writeV4State } from './generators/tfstate.js';
import { extractState } from '../src/tfe/state-versions/state-extract.js';
import { extractFileInWorker } from '../src/tfe/state-versions/extract-worker.js';

/**
 * Measures state extraction time and memory.
 *
 *   node dist/bench/state-extract.js generate <file> <instances> <bytes>
 *   node dist/bench/state-extract.js measure <file> [inline|worker]
 *
 * Run `measure` in a fresh process so its peak RSS reflects extraction alone.
 */

async function main(argv: string[]): Promise<void> {
  const [cmd, file, a, b] = argv;
  if (cmd === 'generate' && file) {
    const t0 = performance.now();
    const s = await writeV4State(file, { resourceInstances: Number(a ?? 1000), targetBytes: Number(b ?? 1e6) });
    console.log(
      JSON.stringify({
        file,
        bytes: s.bytes,
        instanceObjects: s.instanceObjects,
        resources: s.resources.length,
        billableRumCount: s.billableRumCount,
        ms: Math.round(performance.now() - t0),
      }),
    );
    return;
  }
  if (cmd === 'measure' && file) {
    const baseline = process.memoryUsage().rss;
    let peak = baseline;
    const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
    const t0 = performance.now();
    const r =
      a === 'worker'
        ? await extractFileInWorker(file)
        : await extractState(createReadStream(file, { highWaterMark: 256 * 1024 }));
    const ms = performance.now() - t0;
    clearInterval(timer);
    peak = Math.max(peak, process.memoryUsage().rss);
    console.log(
      JSON.stringify({
        mode: a ?? 'inline',
        ok: r.ok,
        error: r.ok ? undefined : r.error,
        bytes: r.ok ? r.value.size : undefined,
        resources: r.ok ? r.value.resources.length : undefined,
        billableRumCount: r.ok ? r.value.billableRumCount : undefined,
        seconds: +(ms / 1000).toFixed(2),
        baselineRssMb: +(baseline / 2 ** 20).toFixed(1),
        peakRssGrowthMb: +((peak - baseline) / 2 ** 20).toFixed(1),
      }),
    );
    return;
  }
  console.error('usage: state-extract.js generate <file> <instances> <bytes> | measure <file> [inline|worker]');
  process.exitCode = 2;
}

await main(process.argv.slice(2));
