/**
 * Side-by-side cost of one file audit device on `POST /v1/pki/sign/:role` (EC P-256): two
 * server processes, one with `--audit-file`, one without, loaded at the same time by the
 * same client in alternating slices, so that what else runs on the machine weighs on both
 * alike. Reports each server's CPU time per request (from /proc) and its request rate.
 *
 *   npx tsc -p . && node dist/bench/micro/audit-ab.js [seconds] [connections]
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnServer } from '../../test/support/spawn-server.js';
import type { SpawnedServer } from '../../test/support/spawn-server.js';
import { generateCsrs } from '../generators/csr.js';

const seconds = Number(process.argv[2] ?? 20);
const connections = Number(process.argv[3] ?? 32);
const dir = mkdtempSync(join(tmpdir(), 'audit-ab-'));
const TICKS = 100;

function cpuMs(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / TICKS;
}

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

const servers = {
  off: await spawnServer(['--dev', '--log-level', 'warn']),
  on: await spawnServer(['--dev', '--log-level', 'warn', '--audit-file', process.argv[4] ?? join(dir, 'audit.log')]),
};
try {
  const csrs = await generateCsrs({ count: 64, keyType: 'ec-p256' });
  for (const s of Object.values(servers)) await setUp(s);
  const stats = { off: { n: 0, cpu: 0 }, on: { n: 0, cpu: 0 } };
  const end = Date.now() + seconds * 1000;
  let slice = 0;
  while (Date.now() < end) {
    // Half-second slices, alternating which server goes first.
    const order = slice++ % 2 === 0 ? (['off', 'on'] as const) : (['on', 'off'] as const);
    for (const which of order) {
      const s = servers[which];
      const pid = s.child.pid as number;
      const before = cpuMs(pid);
      const stop = Date.now() + 500;
      let n = 0;
      await Promise.all(
        Array.from({ length: connections }, async (_, c) => {
          while (Date.now() < stop) {
            const csr = csrs[(n + c) % csrs.length]!;
            const r = await call(s.url, 'POST', 'pki/sign/web', {
              csr: csr.pem,
              common_name: csr.commonName,
              ttl: '1h',
            });
            await r.arrayBuffer();
            if (r.status !== 200) throw new Error(`${which}: ${r.status}`);
            n++;
          }
        }),
      );
      stats[which].n += n;
      stats[which].cpu += cpuMs(pid) - before;
    }
  }
  for (const which of ['off', 'on'] as const) {
    const st = stats[which];
    console.log(
      `audit ${which}: ${st.n} requests, ${((st.cpu * 1000) / st.n).toFixed(0)} µs of server CPU each, ` +
        `${(st.n / seconds).toFixed(0)} req/s over its half of the time`,
    );
  }
  console.log(`load average at the end: ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
} finally {
  await servers.off.stop();
  await servers.on.stop();
  rmSync(dir, { recursive: true, force: true });
}
