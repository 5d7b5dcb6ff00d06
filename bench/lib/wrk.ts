import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Measurement } from './types.js';

/**
 * wrk (C, one thread, from Debian's package) as the load generator: it costs the machine far
 * less CPU per request than autocannon, which runs on Node.js beside the server, so on a
 * 2-core machine the latencies and their tail are the server's rather than the generator's.
 * Latencies are in microseconds; p99.9 and the mean come from wrk's own histogram.
 */
export interface WrkLoad {
  url: string;
  connections: number;
  seconds: number;
  method?: string;
  headers?: Record<string, string>;
  /** Bodies sent in turn, one per request (each a single line: JSON text). */
  bodies?: string[];
}

export function wrkAvailable(): boolean {
  return spawnSync('wrk', ['--version'], { stdio: 'ignore' }).error === undefined;
}

// One Lua state per wrk thread: the bodies are read once, then each request takes the next one.
const SCRIPT = `
local bodies = {}
local n, i = 0, 0
local method, headers = os.getenv("WRK_METHOD") or "GET", {}
for line in io.lines(os.getenv("WRK_HEADERS")) do
  local k, v = line:match("^([^:]+): (.*)$")
  if k then headers[k] = v end
end
local path = os.getenv("WRK_PATH")
local file = os.getenv("WRK_BODIES")
if file ~= "" then
  for line in io.lines(file) do n = n + 1; bodies[n] = line end
end
request = function()
  local body = nil
  if n > 0 then i = i % n + 1; body = bodies[i] end
  return wrk.format(method, path, headers, body)
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("WRK_RESULT %d %d %d %d %d %d %d %d %.1f %d %d %d\\n",
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency.mean, latency:percentile(50), latency:percentile(99), latency:percentile(99.9)))
end
`;

/** Runs wrk for `seconds` with `connections` connections on one thread. */
export async function runWrk(load: WrkLoad): Promise<Measurement> {
  const dir = mkdtempSync(join(tmpdir(), 'wrk-'));
  try {
    const url = new URL(load.url);
    writeFileSync(join(dir, 'load.lua'), SCRIPT);
    const headers = { ...(load.headers ?? {}) };
    if (load.bodies && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type'))
      headers['content-type'] = 'application/json';
    writeFileSync(
      join(dir, 'headers'),
      Object.entries(headers)
        .map(([k, v]) => `${k}: ${v}\n`)
        .join(''),
    );
    if (load.bodies) {
      if (load.bodies.some((b) => b.includes('\n'))) throw new Error('wrk bodies must be single lines');
      writeFileSync(join(dir, 'bodies'), load.bodies.map((b) => `${b}\n`).join(''));
    }
    const args = [
      '-t1',
      `-c${load.connections}`,
      `-d${Math.max(1, Math.round(load.seconds))}s`,
      '--timeout',
      '30s',
      '-s',
      join(dir, 'load.lua'),
      `${url.protocol}//${url.host}/`,
    ];
    const env = {
      ...process.env,
      WRK_METHOD: load.method ?? (load.bodies ? 'POST' : 'GET'),
      WRK_PATH: `${url.pathname}${url.search}`,
      WRK_HEADERS: join(dir, 'headers'),
      WRK_BODIES: load.bodies ? join(dir, 'bodies') : '',
    };
    const out = await new Promise<string>((resolve, reject) => {
      const child = spawn('wrk', args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
      let text = '';
      child.stdout.on('data', (d: Buffer) => (text += d.toString()));
      child.stderr.on('data', (d: Buffer) => (text += d.toString()));
      child.on('error', reject);
      child.on('exit', (code) => (code === 0 ? resolve(text) : reject(new Error(`wrk exited with ${code}: ${text}`))));
    });
    const m = /WRK_RESULT (.*)/.exec(out);
    if (!m) throw new Error(`wrk printed no result: ${out}`);
    const [requests, durationUs, bytes, connect, read, write, status, timeout, meanUs, p50, p99, p999] = (
      m[1] as string
    )
      .trim()
      .split(/\s+/)
      .map(Number) as number[];
    const secs = (durationUs as number) / 1e6;
    const failures =
      (connect as number) + (read as number) + (write as number) + (status as number) + (timeout as number);
    const ok = (requests as number) - (status as number);
    if (ok <= 0 && (requests as number) > 0)
      throw new Error(`no successful responses from ${load.url} (wrk: ${out.trim()})`);
    return {
      reqPerSec: ok / secs,
      mbPerSec: (bytes as number) / secs / 1e6,
      p50Ms: (p50 as number) / 1000,
      p99Ms: (p99 as number) / 1000,
      meanMs: (meanUs as number) / 1000,
      p999Ms: (p999 as number) / 1000,
      requests: ok,
      failures,
      seconds: secs,
      loadGenerator: 'wrk',
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
