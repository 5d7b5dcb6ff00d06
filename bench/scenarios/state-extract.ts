import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { api, authHeaders, dig } from '../lib/api.js';
import { httpRequest, median, runAutocannon } from '../lib/load.js';
import { RssSampler } from '../lib/processes.js';
import { BENCH_LINEAGE, StateTemplate, stateFile } from '../lib/state-data.js';
import type { Strongroom } from '../lib/strongroom.js';
import { createStateVersion, lockedWorkspace, onServer } from '../lib/tfe.js';
import type { Measurement, RunContext, Scenario } from '../lib/types.js';

const MB = 1024 * 1024;

interface Extraction {
  seconds: number;
  peakMb: number;
  growthMb: number;
  resources: number;
}

/** Uploads `body` to a fresh pending version and waits for resources-processed, sampling the server's memory. */
async function extractOnce(
  ctx: RunContext,
  sr: Strongroom,
  body: Buffer,
  md5: string,
  timeoutSec: number,
): Promise<Extraction> {
  const ws = await lockedWorkspace(sr, 'extract');
  const v = await createStateVersion(sr, ws.id, { serial: 1, md5, lineage: BENCH_LINEAGE });
  if (!v.uploadUrl) throw new Error(`pending version ${v.id} has no hosted-state-upload-url`);
  const sampler = new RssSampler(sr.pid);
  try {
    const res = await httpRequest(onServer(sr, v.uploadUrl), {
      method: 'PUT',
      headers: { 'content-type': 'application/octet-stream' },
      body,
      timeoutMs: 600_000,
    });
    if (res.status === 404) throw new Error(`upload URL answered 404`);
    if (res.status < 200 || res.status >= 300)
      throw new Error(`upload answered ${res.status}: ${res.body.toString('utf8').slice(0, 300)}`);
    const t0 = performance.now();
    const deadline = t0 + timeoutSec * 1000;
    for (;;) {
      const doc = await api(sr, 'tfe', 'GET', `/api/v2/state-versions/${v.id}`);
      if (dig(doc.json, 'data', 'attributes', 'resources-processed') === true) {
        const resources = dig(doc.json, 'data', 'attributes', 'resources');
        const rss = sampler.stop();
        return {
          seconds: (performance.now() - t0) / 1000,
          peakMb: rss.peakMb,
          growthMb: rss.growthMb,
          resources: Array.isArray(resources) ? resources.length : 0,
        };
      }
      if (performance.now() > deadline) throw new Error(`resources-processed still false after ${timeoutSec} s`);
      await sleep(50);
    }
  } finally {
    sampler.stop();
  }
}

function extractScenario(
  name: string,
  bytes: number,
  smokeBytes: number,
  rounds: number,
  withApiLatency: boolean,
): Scenario {
  const big = bytes >= 100 * MB;
  return {
    name,
    title:
      `Time from the end of a ${Math.round(bytes / MB)} MB upload to resources-processed, and the ` +
      `worker's peak memory` +
      (withApiLatency ? '; API p99 while it runs' : ''),
    target: big
      ? '< 20 s and < 256 MB; API p99 during the extraction within 2x of idle'
      : 'none (context for the 200 MB target)',
    peer: 'none',
    defaultConnections: 8,
    notes:
      'The extraction job streams the stored state through a JSON scanner and writes outputs and resource summaries; ' +
      'its time grows with the size of the state and its memory should not. Memory is the peak RSS of the server ' +
      'process tree while the job runs minus its RSS just before the upload (the worker runs inside the server). ' +
      'Times include up to one job poll interval between the upload and the start of the job.',
    async run(ctx) {
      const sr = await ctx.strongroom();
      const file = await stateFile(ctx.size(bytes, smokeBytes));
      const body = readFileSync(file.path);
      const timeout = ctx.size(300, 60);
      const runs: Extraction[] = [];
      const n = ctx.opts.smoke ? 1 : Math.min(rounds, ctx.opts.rounds);
      let idle: Measurement | null = null;
      let busy: Measurement | null = null;
      for (let r = 0; r < n; r++) {
        if (withApiLatency && r === n - 1) {
          const probe = await apiProbe(sr);
          idle = await probe(ctx.opts.seconds, ctx.connections);
          const stop = new AbortController();
          const during = probe(600, ctx.connections, stop.signal);
          try {
            runs.push(await extractOnce(ctx, sr, body, file.md5, timeout));
          } finally {
            stop.abort();
          }
          busy = await during;
        } else {
          runs.push(await extractOnce(ctx, sr, body, file.md5, timeout));
        }
        const last = runs[runs.length - 1] as Extraction;
        ctx.log(
          `round ${r + 1}/${n}: processed in ${last.seconds.toFixed(2)} s, peak RSS ${last.peakMb.toFixed(0)} MB ` +
            `(+${last.growthMb.toFixed(0)} MB)`,
        );
      }
      const secs = median(runs.map((x) => x.seconds));
      const growth = Math.max(...runs.map((x) => x.growthMb));
      const peak = Math.max(...runs.map((x) => x.peakMb));
      const facts = [
        { label: 'state size', value: `${(file.bytes / MB).toFixed(1)} MB, ${file.instances} resource instances` },
        { label: 'time to resources-processed', value: `${secs.toFixed(2)} s (median of ${runs.length})` },
        { label: 'throughput', value: `${(file.bytes / MB / secs).toFixed(1)} MB/s` },
        {
          label: 'server peak RSS during extraction',
          value: `${peak.toFixed(0)} MB (+${growth.toFixed(0)} MB over before the upload)`,
        },
        { label: 'resources reported', value: String(runs[0]?.resources ?? 0) },
      ];
      if (idle && busy) {
        facts.push({
          label: 'API p99 idle / during extraction',
          value: `${idle.p99Ms.toFixed(2)} ms / ${busy.p99Ms.toFixed(2)} ms (GET current-state-version at 200 req/s)`,
        });
      }
      let verdict: { met: boolean; detail: string } | null = null;
      if (big) {
        const latencyOk = idle && busy ? busy.p99Ms <= 2 * Math.max(idle.p99Ms, 1) : false;
        verdict = {
          met: secs < 20 && growth < 256 && latencyOk,
          detail:
            `${secs.toFixed(1)} s (target < 20 s), +${growth.toFixed(0)} MB (target < 256 MB)` +
            (idle && busy ? `, API p99 ${(busy.p99Ms / Math.max(idle.p99Ms, 1)).toFixed(2)}x idle (target <= 2x)` : ''),
        };
      }
      return { rows: [], facts, verdict };
    },
  };
}

/** GET current-state-version of a small workspace: the API call whose latency the extraction must not spoil. */
async function apiProbe(
  sr: Strongroom,
): Promise<(seconds: number, connections: number, signal?: AbortSignal) => Promise<Measurement>> {
  const ws = await lockedWorkspace(sr, 'probe');
  const s = new StateTemplate(10_240).withSerial(1);
  await createStateVersion(sr, ws.id, { serial: 1, md5: s.md5, lineage: BENCH_LINEAGE, state: s.bytes });
  const url = `${sr.url}/api/v2/workspaces/${ws.id}/current-state-version`;
  const headers = authHeaders(sr, 'tfe');
  // A fixed request rate, so the p99 shows what a client waits, not how deep a saturated queue is.
  return (seconds, connections, signal) =>
    runAutocannon({ url, headers, connections, overallRate: 200, seconds, signal });
}

export const stateExtract1m = extractScenario('state-extract-1m', 1 * MB, 64 * 1024, 3, false);
export const stateExtract50m = extractScenario('state-extract-50m', 50 * MB, 256 * 1024, 2, false);
export const stateExtract200m = extractScenario('state-extract-200m', 200 * MB, 1 * MB, 1, true);
