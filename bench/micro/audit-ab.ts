/**
 * Side-by-side cost of one file audit device on `POST /v1/pki/sign/:role` (EC P-256): server
 * processes with and without `--audit-file`, loaded by the same client in alternating
 * half-second slices, so that what else runs on the machine weighs on all alike. Reports
 * each server's CPU time per request (from /proc: the whole process, and its event-loop
 * thread) and its request rate. With `--before=DIR` (the `dist` directory of another build,
 * e.g. of the main branch), that build's servers, with and without the device, run in the
 * same slices, to compare a change against what it replaces. With `--autocannon` the load comes
 * from autocannon (as in `bench.js pki-sign-p256`) rather than from `fetch`, which costs the client
 * far less CPU per request, so that the servers' request rates weigh more than the client's.
 *
 *   npx tsc -p . && node dist/bench/micro/audit-ab.js [seconds] [connections] [--before=DIR] [--autocannon]
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { processCpuMs, threadCpuMs } from '../lib/processes.js';
import { spawnServer } from '../../test/support/spawn-server.js';
import type { SpawnedServer } from '../../test/support/spawn-server.js';
import { generateCsrs } from '../generators/csr.js';
import { runAutocannon } from '../lib/load.js';

const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const before = process.argv.find((a) => a.startsWith('--before='))?.slice('--before='.length);
const useAutocannon = process.argv.includes('--autocannon');
const seconds = Number(args[0] ?? 20);
const connections = Number(args[1] ?? 32);
const dir = mkdtempSync(join(tmpdir(), 'audit-ab-'));
/** Slices run before counting starts (JIT warm-up). */
const WARMUP_ROUNDS = 2;

async function call(url: string, method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${url}/v1/${path}`, {
    method,
    headers: { 'x-vault-token': 'root' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

async function setUp(s: SpawnedServer): Promise<void> {
  await call(s.url, 'POST', 'sys/mounts/pki', { type: 'pki', config: { max_lease_ttl: '87600h' } });
  await call(s.url, 'POST', 'pki/root/generate/internal', { common_name: 'Bench Root', key_type: 'ec', ttl: '8760h' });
  await call(s.url, 'POST', 'pki/roles/web', { allow_any_name: true, key_type: 'ec', no_store: false });
}

/** Half a second of signs from `connections` fetch loops; how many were answered. */
async function sliceByFetch(t: Target, csrs: Array<{ pem: string; commonName: string }>): Promise<number> {
  const stop = Date.now() + 500;
  let n = 0;
  await Promise.all(
    Array.from({ length: connections }, async (_, c) => {
      while (Date.now() < stop) {
        const csr = csrs[(n + c) % csrs.length]!;
        const r = await call(t.server.url, 'POST', 'pki/sign/web', {
          csr: csr.pem,
          common_name: csr.commonName,
          ttl: '1h',
        });
        await r.arrayBuffer();
        if (r.status !== 200) throw new Error(`${t.name}: ${r.status}`);
        n++;
      }
    }),
  );
  return n;
}

/** Half a second of signs from autocannon with `connections` connections; how many were answered. */
async function sliceByAutocannon(t: Target, bodies: string[]): Promise<number> {
  let i = 0;
  const m = await runAutocannon({
    url: t.server.url,
    connections,
    seconds: 0.5,
    requests: [
      {
        method: 'POST',
        path: '/v1/pki/sign/web',
        headers: { 'x-vault-token': 'root', 'content-type': 'application/json' },
        setupRequest: (req) => ({ ...req, body: bodies[i++ % bodies.length] }),
      },
    ],
  });
  if (m.failures > 0) throw new Error(`${t.name}: ${m.failures} failed requests`);
  return m.requests;
}

type Spawn = typeof spawnServer;
const builds: Array<[string, Spawn]> = [['', spawnServer]];
if (before) {
  const url = pathToFileURL(join(resolve(before), 'test/support/spawn-server.js')).href;
  builds.push(['before ', ((await import(url)) as { spawnServer: Spawn }).spawnServer]);
}
interface Target {
  name: string;
  server: SpawnedServer;
  n: number;
  cpu: number;
  loop: number;
}
const targets: Target[] = [];
for (const [label, spawn] of builds) {
  for (const on of [false, true]) {
    const flags = on ? ['--audit-file', join(dir, `${label.trim() || 'after'}.log`)] : [];
    const server = await spawn(['--dev', '--log-level', 'warn', ...flags]);
    targets.push({ name: `${label}audit ${on ? 'on' : 'off'}`, server, n: 0, cpu: 0, loop: 0 });
  }
}
try {
  const csrs = await generateCsrs({ count: 64, keyType: 'ec-p256' });
  const bodies = csrs.map((c) => JSON.stringify({ csr: c.pem, common_name: c.commonName, ttl: '1h' }));
  for (const t of targets) await setUp(t.server);
  const end = Date.now() + seconds * 1000;
  for (let round = 0; round < WARMUP_ROUNDS || Date.now() < end; round++) {
    // Half-second slices, each round starting with a different server.
    for (let k = 0; k < targets.length; k++) {
      const t = targets[(round + k) % targets.length]!;
      const pid = t.server.child.pid as number;
      const cpu0 = processCpuMs(pid);
      const loop0 = threadCpuMs(pid);
      const n = useAutocannon ? await sliceByAutocannon(t, bodies) : await sliceByFetch(t, csrs);
      if (round < WARMUP_ROUNDS) continue;
      t.n += n;
      t.cpu += processCpuMs(pid) - cpu0;
      t.loop += threadCpuMs(pid) - loop0;
    }
  }
  for (const t of targets) {
    console.log(
      `${t.name}: ${t.n} requests, ${((t.cpu * 1000) / t.n).toFixed(0)} µs of server CPU each ` +
        `(event loop ${((t.loop * 1000) / t.n).toFixed(0)}), ` +
        `${(t.n / seconds).toFixed(0)} req/s over its share of the time`,
    );
  }
  console.log(`load average at the end: ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
} finally {
  for (const t of targets) await t.server.stop();
  rmSync(dir, { recursive: true, force: true });
}
