/**
 * Side-by-side cost of state encryption at rest: servers of this build with encryption on
 * and off (`--state-encryption=false`), and optionally the same pair of another build
 * (`--before=DIR`, the `dist` directory of e.g. the main branch), loaded by one client in
 * alternating slices so that what else runs on the machine weighs on all alike. Reports
 * each server's CPU time per operation (from /proc: the whole process, all threads) and
 * its garbage collector's time per operation (from /metrics).
 *
 *   npx tsc -p . && node dist/bench/micro/state-encryption-ab.js <inline|current|download|upload>
 *     [slices per server] [--before=DIR] [--db=postgres] [--cpu-prof=DIR] [--aa] [--off-first]
 *
 * inline: 10 KB inline creates, 32 connections, half-second slices. current: reads of the
 * current version, likewise. download: three 50 MB downloads per slice, one connection.
 * upload: one 200 MB upload per slice.
 */
import http from 'node:http';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { authHeaders } from '../lib/api.js';
import { httpRequest } from '../lib/load.js';
import { ProcessGroup, processCpuMs, processSysMs, threadCpuMs } from '../lib/processes.js';
import { BENCH_LINEAGE, StateTemplate, StateVariants, stateFile } from '../lib/state-data.js';
import { startStrongroom } from '../lib/strongroom.js';
import type { Strongroom } from '../lib/strongroom.js';
import { createBody, createStateVersion, lockedWorkspace, onServer } from '../lib/tfe.js';
import type { BenchWorkspace } from '../lib/tfe.js';

const MB = 1024 * 1024;
const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const flag = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const scenario = args[0] ?? 'inline';
const slices = Number(args[1] ?? 10);
const before = flag('before');
const db = flag('db') === 'postgres' ? 'postgres' : 'sqlite';
const cpuProfileDir = flag('cpu-prof') ?? null;
const postgresUrl = flag('postgres-url') ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** CPU milliseconds of a process's event-loop thread and of its other threads. */
function cpuByThread(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    // Threads are all called "node": the event loop is told apart by its id.
    const name = tid === String(pid) ? 'event loop' : 'other threads';
    out.set(name, (out.get(name) ?? 0) + threadCpuMs(pid, tid));
  }
  return out;
}

/** Bytes the process has written through write calls (files and sockets alike). */
function writtenBytes(pid: number): number {
  return Number(/^wchar: (\d+)/m.exec(readFileSync(`/proc/${pid}/io`, 'utf8'))?.[1] ?? 0);
}

/** Seconds the server's garbage collector has run so far (prom-client's default metrics). */
async function gcSeconds(sr: Strongroom): Promise<Record<string, number>> {
  const res = await httpRequest(`${sr.url}/metrics`, { method: 'GET', headers: authHeaders(sr, 'tfe') });
  const out: Record<string, number> = {};
  for (const line of res.body.toString('utf8').split('\n')) {
    const m = /^strongroom_nodejs_gc_duration_seconds_sum\{kind="(\w+)"\} (\S+)/.exec(line);
    if (m) out[m[1] as string] = Number(m[2]);
  }
  return out;
}

/** One GET whose body is counted and dropped. */
function download(url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((done, fail) => {
    http
      .get(url, { headers }, (res) => {
        let n = 0;
        res.on('data', (c: Buffer) => (n += c.length));
        res.on('end', () => (res.statusCode === 200 ? done(n) : fail(new Error(`GET answered ${res.statusCode}`))));
        res.on('error', fail);
      })
      .on('error', fail);
  });
}

type Work = () => Promise<{ ops: number; bytes: number }>;
type Slice = () => Promise<Work>;

interface Target {
  name: string;
  sr: Strongroom;
  /** Prepares a slice (not counted) and returns it; it resolves with the operations done and the bytes moved. */
  slice: Slice;
  ops: number;
  bytes: number;
  cpu: number;
  gc: number;
  sys: number;
  written: number;
  /** GC seconds by kind (major, minor, incremental, weakcb). */
  kinds: Record<string, number>;
  /** CPU ms of the event loop and of the other threads. */
  threads: Map<string, number>;
  perSlice: number[];
}

async function timed(ms: number, connections: number, one: (c: number) => Promise<number>) {
  const stop = Date.now() + ms;
  let ops = 0;
  let bytes = 0;
  await Promise.all(
    Array.from({ length: connections }, async (_, c) => {
      while (Date.now() < stop) {
        bytes += await one(c);
        ops++;
      }
    }),
  );
  return { ops, bytes };
}

async function prepare(sr: Strongroom): Promise<Slice> {
  const headers = authHeaders(sr, 'tfe');
  if (scenario === 'inline' || scenario === 'current') {
    const template = new StateTemplate(10_240);
    const pool: { ws: BenchWorkspace; serial: number }[] = [];
    for (let i = 0; i < 32; i++) {
      const ws = await lockedWorkspace(sr, 'ab');
      const s = template.withSerial(1);
      await createStateVersion(sr, ws.id, { serial: 1, md5: s.md5, lineage: BENCH_LINEAGE, state: s.bytes });
      pool.push({ ws, serial: 1 });
    }
    if (scenario === 'current') {
      return async () => () =>
        timed(500, 32, async (c) => {
          const p = pool[c] as { ws: BenchWorkspace };
          const r = await httpRequest(`${sr.url}/api/v2/workspaces/${p.ws.id}/current-state-version`, {
            method: 'GET',
            headers,
          });
          if (r.status !== 200) throw new Error(`current: ${r.status}`);
          return r.body.length;
        });
    }
    return async () => () =>
      timed(500, 32, async (c) => {
        const p = pool[c] as { ws: BenchWorkspace; serial: number };
        const serial = ++p.serial;
        const s = template.withSerial(serial);
        const body = Buffer.from(
          JSON.stringify(createBody({ serial, md5: s.md5, lineage: BENCH_LINEAGE, state: s.bytes })),
        );
        const r = await httpRequest(`${sr.url}/api/v2/workspaces/${p.ws.id}/state-versions`, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/vnd.api+json' },
          body,
        });
        if (r.status !== 201) throw new Error(`create: ${r.status} ${r.body.toString().slice(0, 200)}`);
        return s.bytes.length;
      });
  }
  const file = await stateFile(scenario === 'upload' ? 200 * MB : 50 * MB);
  const body = readFileSync(file.path);
  const pending = async (content: { serial: number; md5: string }) => {
    const ws = await lockedWorkspace(sr, 'ab');
    const v = await createStateVersion(sr, ws.id, { serial: content.serial, md5: content.md5, lineage: BENCH_LINEAGE });
    if (!v.uploadUrl) throw new Error('no upload url');
    return { ws, url: onServer(sr, v.uploadUrl) };
  };
  const put = async (url: string, bytes: Buffer) => {
    const r = await httpRequest(url, { method: 'PUT', body: bytes, timeoutMs: 600_000 });
    if (r.status < 200 || r.status >= 300) throw new Error(`PUT ${r.status}`);
  };
  if (scenario === 'upload') {
    const variants = new StateVariants(file, body);
    let serial = 1;
    return async () => {
      const v = variants.variant(++serial);
      const { url } = await pending(v);
      // Only the upload is counted: the create before it is outside the slice's CPU.
      return async () => {
        await put(url, v.bytes);
        return { ops: 1, bytes: v.bytes.length };
      };
    };
  }
  const { ws, url } = await pending(file);
  await put(url, body);
  const cur = await httpRequest(`${sr.url}/api/v2/workspaces/${ws.id}/current-state-version`, {
    method: 'GET',
    headers,
  });
  const dl = (JSON.parse(cur.body.toString()) as { data: { attributes: Record<string, string> } }).data.attributes[
    'hosted-state-download-url'
  ] as string;
  const target = onServer(sr, dl);
  return async () => async () => {
    let bytes = 0;
    for (let i = 0; i < 3; i++) bytes += await download(target, { authorization: headers.authorization as string });
    return { ops: 3, bytes };
  };
}

const group = new ProcessGroup();
const builds: Array<[string, typeof startStrongroom]> = [['', startStrongroom]];
if (before) {
  const url = pathToFileURL(join(resolve(before), 'bench/lib/strongroom.js')).href;
  builds.push(['before ', ((await import(url)) as { startStrongroom: typeof startStrongroom }).startStrongroom]);
}
const targets: Target[] = [];
try {
  for (const [label, start] of builds) {
    // --off-first: each build's server without encryption is started first. Two alike servers
    // differ by a few percent by the order they were started in (--aa shows how much), so a
    // comparison is run in both orders.
    for (const on of process.argv.includes('--off-first') ? [false, true] : [true, false]) {
      // --aa: both servers without encryption, to see how far two alike servers differ.
      const plain = !on || process.argv.includes('--aa');
      const extraArgs = ['--job-worker', 'false', ...(plain ? ['--state-encryption=false'] : [])];
      const sr = await start(group, {
        db,
        postgresUrl,
        extraArgs,
        cpuProfileDir: cpuProfileDir && join(cpuProfileDir, `${label.trim() || 'this'}-${on ? 'on' : 'off'}`),
      });
      const slice = await prepare(sr);
      targets.push({
        name: `${label}encryption ${on ? 'on' : 'off'}`,
        sr,
        slice,
        ops: 0,
        bytes: 0,
        cpu: 0,
        gc: 0,
        sys: 0,
        written: 0,
        kinds: {},
        threads: new Map(),
        perSlice: [],
      });
    }
  }
  for (let round = -1; round < slices; round++) {
    for (let k = 0; k < targets.length; k++) {
      const t = targets[(round + 1 + k) % targets.length] as Target;
      const run = await t.slice();
      const gc0 = await gcSeconds(t.sr);
      const cpu0 = processCpuMs(t.sr.pid);
      const sys0 = processSysMs(t.sr.pid);
      const th0 = cpuByThread(t.sr.pid);
      const w0 = writtenBytes(t.sr.pid);
      const work = await run();
      const cpu = processCpuMs(t.sr.pid) - cpu0;
      const sys = processSysMs(t.sr.pid) - sys0;
      const th1 = cpuByThread(t.sr.pid);
      const w1 = writtenBytes(t.sr.pid);
      const gc1 = await gcSeconds(t.sr);
      if (round < 0) continue; // warm-up
      t.ops += work.ops;
      t.bytes += work.bytes;
      t.cpu += cpu;
      for (const [kind, v] of Object.entries(gc1)) {
        const d = v - (gc0[kind] ?? 0);
        t.gc += d;
        t.kinds[kind] = (t.kinds[kind] ?? 0) + d;
      }
      t.sys += sys;
      t.written += w1 - w0;
      for (const [name, v] of th1) t.threads.set(name, (t.threads.get(name) ?? 0) + v - (th0.get(name) ?? 0));
      t.perSlice.push(cpu / work.ops);
    }
  }
  const per = (t: Target) => (t.cpu * 1000) / t.ops;
  const transfer = scenario === 'download' || scenario === 'upload';
  for (const t of targets) {
    const perMb = transfer ? `, ${((t.cpu * 1000) / (t.bytes / MB)).toFixed(0)} µs CPU/MB` : '';
    const kinds = Object.entries(t.kinds).map(([k, v]) => `${k} ${((v * 1e6) / t.ops).toFixed(0)}`);
    const slices = t.perSlice.map((x) => x.toFixed(transfer ? 0 : 2));
    console.log(
      `${t.name.padEnd(24)} ${t.ops} ops, ${per(t).toFixed(0)} µs CPU/op${perMb}` +
        ` (system ${((t.sys * 1000) / t.ops).toFixed(0)}), GC ${((t.gc * 1e6) / t.ops).toFixed(0)} µs/op` +
        ` (${kinds.join(', ')}), written ${(t.written / t.ops / 1024).toFixed(1)} KiB/op;` +
        ` slices (ms/op): ${slices.join(' ')}`,
    );
  }
  for (const t of targets) {
    const rows = [...t.threads].filter(([, v]) => v > 0).sort((a, b) => b[1] - a[1]);
    console.log(
      `${t.name}: by thread, µs/op: ${rows.map(([k, v]) => `${k} ${((v * 1000) / t.ops).toFixed(0)}`).join(', ')}`,
    );
  }
  for (let i = 0; i + 1 < targets.length; i += 2) {
    const [on, off] = (targets[i] as Target).name.endsWith(' on')
      ? [targets[i] as Target, targets[i + 1] as Target]
      : [targets[i + 1] as Target, targets[i] as Target];
    console.log(`${on.name.replace(' on', '')}: on/off ${(per(on) / per(off)).toFixed(3)}`);
  }
  console.log(`load average at the end: ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
} finally {
  for (const t of targets) await t.sr.stop();
  await group.stopAll();
}
