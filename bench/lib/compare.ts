import { median } from './load.js';
import { RssSampler, treeCpuMicros } from './processes.js';
import type { ContenderRow, Measurement, Ratio, RunContext } from './types.js';

export interface Contender {
  label: string;
  kind: 'strongroom' | 'peer';
  /** Process whose tree RSS is sampled while this contender is measured. */
  pid: number | null;
  measure(seconds: number): Promise<Measurement>;
}

/**
 * Warms every contender up, then measures them in turn (A, B, A, B...) for the configured
 * rounds, so that drift of the machine (page cache, thermal, other load) hits all of them alike.
 */
export async function compareRounds(ctx: RunContext, contenders: Contender[]): Promise<ContenderRow[]> {
  const { rounds, seconds, warmupSeconds } = ctx.opts;
  const runs = new Map<Contender, { ms: Measurement[]; peak: number; growth: number; cpu: number[] }>();
  for (const c of contenders) runs.set(c, { ms: [], peak: 0, growth: 0, cpu: [] });
  if (warmupSeconds > 0) {
    for (const c of contenders) {
      ctx.log(`warm-up ${c.label}`);
      await c.measure(warmupSeconds);
    }
  }
  for (let r = 0; r < rounds; r++) {
    for (const c of contenders) {
      const sampler = c.pid ? new RssSampler(c.pid) : null;
      const cpuBefore = c.pid ? treeCpuMicros(c.pid) : 0;
      let m: Measurement;
      let cpu: number | undefined;
      try {
        m = await c.measure(seconds);
        // CPU per request is steadier than req/s when other work shares the machine.
        if (c.pid && m.requests > 0) cpu = (treeCpuMicros(c.pid) - cpuBefore) / m.requests;
        if (cpu !== undefined) runs.get(c)?.cpu.push(cpu);
      } finally {
        const rss = sampler?.stop();
        const entry = runs.get(c);
        if (rss && entry) {
          entry.peak = Math.max(entry.peak, rss.peakMb);
          entry.growth = Math.max(entry.growth, rss.growthMb);
        }
      }
      runs.get(c)?.ms.push(m);
      ctx.log(
        `round ${r + 1}/${rounds} ${c.label}: ` +
          `${fmtMeasurement(m)}${cpu !== undefined ? `, server CPU ${Math.round(cpu)} µs/request` : ''}`,
      );
    }
  }
  return contenders.map((c) => {
    const e = runs.get(c) as { ms: Measurement[]; peak: number; growth: number; cpu: number[] };
    return {
      label: c.label,
      kind: c.kind,
      rounds: e.ms,
      median: medianMeasurement(e.ms),
      peakRssMb: c.pid ? e.peak : null,
      rssGrowthMb: c.pid ? e.growth : null,
      cpuMicrosPerRequest: c.pid && e.cpu.length > 0 ? median(e.cpu) : null,
    };
  });
}

export function medianMeasurement(ms: Measurement[]): Measurement {
  const pick = (f: (m: Measurement) => number) => median(ms.map(f).filter((v) => Number.isFinite(v)));
  return {
    reqPerSec: pick((m) => m.reqPerSec),
    mbPerSec: pick((m) => m.mbPerSec),
    p50Ms: pick((m) => m.p50Ms),
    p99Ms: pick((m) => m.p99Ms),
    meanMs: pick((m) => m.meanMs ?? NaN),
    p999Ms: pick((m) => m.p999Ms ?? NaN),
    requests: ms.reduce((a, m) => a + m.requests, 0),
    failures: ms.reduce((a, m) => a + m.failures, 0),
    seconds: ms.reduce((a, m) => a + m.seconds, 0),
  };
}

/** Ratio of the Strongroom row to each peer row, per round, then the median. */
export function ratiosOf(rows: ContenderRow[], metric: 'req/s' | 'MB/s'): Ratio[] {
  const ours = rows.find((r) => r.kind === 'strongroom');
  if (!ours) return [];
  const get = (m: Measurement) => (metric === 'req/s' ? m.reqPerSec : m.mbPerSec);
  return rows
    .filter((r) => r.kind === 'peer')
    .map((peer) => {
      const n = Math.min(ours.rounds.length, peer.rounds.length);
      const per: number[] = [];
      for (let i = 0; i < n; i++) {
        const r = get(ours.rounds[i] as Measurement) / get(peer.rounds[i] as Measurement);
        if (Number.isFinite(r)) per.push(r);
      }
      return { against: peer.label, metric, value: per.length > 0 ? median(per) : NaN };
    });
}

export function fmtMeasurement(m: Measurement): string {
  return (
    `${m.reqPerSec.toFixed(1)} req/s, ${m.mbPerSec.toFixed(2)} MB/s, p50 ${m.p50Ms.toFixed(2)} ms, p99 ` +
    `${m.p99Ms.toFixed(2)} ms` +
    (m.failures > 0 ? `, ${m.failures} failed` : '') +
    (m.lastFailure ? ` (last: ${m.lastFailure.slice(0, 200)})` : '')
  );
}
