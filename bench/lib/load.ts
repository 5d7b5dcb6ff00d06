import http from 'node:http';
import autocannon from 'autocannon';
import type { AutocannonOptions, AutocannonRequest, AutocannonResult } from 'autocannon';
import type { Measurement } from './types.js';
import { runWrk } from './wrk.js';
import type { WrkLoad } from './wrk.js';

let generator: 'autocannon' | 'wrk' = 'autocannon';

/** The load generator of runAutocannon's runs that wrk can express (`--load-generator`). */
export function useLoadGenerator(g: 'autocannon' | 'wrk'): void {
  generator = g;
}

/** A request that sends `bodies` in turn (autocannon's setupRequest; wrk reads `rotatingBodies`). */
export function rotating(bodies: string[], base: AutocannonRequest): AutocannonRequest {
  let i = 0;
  const req = { ...base, setupRequest: (r: AutocannonRequest) => ({ ...r, body: bodies[i++ % bodies.length] }) };
  return Object.assign(req, { rotatingBodies: bodies });
}

/** The same load for wrk, when it can be said there: one fixed or rotating request, no rate or count. */
function asWrkLoad(opts: AutocannonOptions & { seconds: number }): WrkLoad | null {
  if (opts.overallRate !== undefined || opts.amount !== undefined || (opts.requests?.length ?? 0) > 1) return null;
  const req = opts.requests?.[0] as (AutocannonRequest & { rotatingBodies?: string[] }) | undefined;
  if (req?.setupRequest && !req.rotatingBodies) return null;
  const body = req?.body ?? opts.body;
  if (body !== undefined && typeof body !== 'string') return null;
  const url = new URL(opts.url as string);
  if (req?.path) url.pathname = req.path;
  return {
    url: url.href,
    connections: opts.connections ?? 10,
    seconds: opts.seconds,
    method: req?.method ?? opts.method,
    headers: { ...(opts.headers as Record<string, string>), ...(req?.headers as Record<string, string>) },
    bodies: req?.rotatingBodies ?? (body === undefined ? undefined : [body]),
  };
}

/** Runs autocannon for `seconds` (or until `amount` requests) and reduces the result to a Measurement. */
export async function runAutocannon(
  opts: AutocannonOptions & { seconds: number; signal?: AbortSignal },
): Promise<Measurement> {
  const { seconds, signal, ...rest } = opts;
  const wrkLoad = generator === 'wrk' ? asWrkLoad(opts) : null;
  if (wrkLoad) return runWrk(wrkLoad);
  const started = performance.now();
  const result = await new Promise<AutocannonResult>((resolve, reject) => {
    const inst = autocannon({ timeout: 30, excludeErrorStats: true, ...rest, duration: seconds }, (err, res) => {
      clearTimeout(guard);
      if (err) reject(err);
      else resolve(res);
    });
    // autocannon stops itself at `duration`; this guard only bounds a stuck run.
    const guard = setTimeout(() => inst.stop(), (seconds + 60) * 1000);
    signal?.addEventListener('abort', () => inst.stop(), { once: true });
  });
  const ok = result['2xx'];
  const failures = result.non2xx + result.errors + result.timeouts;
  // The elapsed time measured here, not autocannon's `duration`: that counts whole seconds, so a run that stops early
  // at `amount` (3.2 s, say) would be divided by 3 and report a rate capped by the amount, not by the server.
  const secs = (performance.now() - started) / 1000;
  if (ok === 0 && failures === 0) {
    // Nothing completed within the run (a very slow endpoint or a tiny duration): zero, not an error.
    return { reqPerSec: 0, mbPerSec: 0, p50Ms: NaN, p99Ms: NaN, requests: 0, failures: 0, seconds: secs };
  }
  if (ok === 0) {
    const codes = Object.entries(result.statusCodeStats)
      .map(([c, v]) => `${c}×${v.count}`)
      .join(', ');
    throw new Error(`no successful responses from ${opts.url} (${codes || `${result.errors} connection errors`})`);
  }
  return {
    reqPerSec: ok / secs,
    mbPerSec: result.throughput.total / secs / 1e6,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    meanMs: result.latency.mean,
    p999Ms: result.latency.p99_9,
    requests: ok,
    failures,
    seconds: secs,
  };
}

/**
 * Runs `task` with `concurrency` workers until `count` tasks are done or `seconds` pass.
 * For work autocannon cannot express (a fresh upload URL per request, streaming large bodies).
 */
export async function runTasks(opts: {
  concurrency: number;
  count: number;
  seconds: number;
  task: (i: number) => Promise<{ bytes: number }>;
}): Promise<Measurement> {
  const latencies: number[] = [];
  let next = 0;
  let bytes = 0;
  let failures = 0;
  let lastError: unknown = null;
  const start = performance.now();
  const deadline = start + opts.seconds * 1000;
  const worker = async () => {
    while (next < opts.count && performance.now() < deadline) {
      const i = next++;
      const t0 = performance.now();
      try {
        const r = await opts.task(i);
        latencies.push(performance.now() - t0);
        bytes += r.bytes;
      } catch (err) {
        failures++;
        lastError = err;
        if (failures > 3 && latencies.length === 0) break;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, opts.concurrency) }, worker));
  const secs = (performance.now() - start) / 1000;
  if (latencies.length === 0)
    throw lastError instanceof Error ? lastError : new Error(`no task succeeded (${String(lastError)})`);
  return {
    reqPerSec: latencies.length / secs,
    mbPerSec: bytes / secs / 1e6,
    p50Ms: percentile(latencies, 0.5),
    p99Ms: percentile(latencies, 0.99),
    meanMs: mean(latencies),
    p999Ms: percentile(latencies, 0.999),
    requests: latencies.length,
    failures,
    seconds: secs,
  };
}

export function mean(values: number[]): number {
  return values.length === 0 ? NaN : values.reduce((a, v) => a + v, 0) / values.length;
}

export function percentile(values: number[], q: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[idx] as number;
}

export function median(values: number[]): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

/** One HTTP request with a Buffer body over a keep-alive agent (or a new connection); resolves with status and body. */
export async function httpRequest(
  url: string,
  opts: {
    method: string;
    headers?: Record<string, string>;
    body?: Buffer;
    timeoutMs?: number;
    newConnection?: boolean;
  },
): Promise<{ status: number; body: Buffer }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: u.hostname,
        port: u.port,
        path: `${u.pathname}${u.search}`,
        method: opts.method,
        // A server that closes every connection after its answer is asked over a new connection each time.
        agent: opts.newConnection ? false : agent,
        headers: { ...opts.headers, ...(opts.body ? { 'content-length': String(opts.body.length) } : {}) },
        timeout: opts.timeoutMs ?? 120_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`timeout on ${opts.method} ${u.pathname}`)));
    req.on('error', reject);
    req.end(opts.body);
  });
}
