/**
 * Side-by-side `state-current` (GET of a workspace's current state version, 10 KB state) on
 * a server of this build and one of another build (`--before=DIR`, the `dist` directory of
 * e.g. the main branch), loaded by autocannon in alternating one-second slices so that what
 * else runs on the machine weighs on both alike. Reports each server's request rate over
 * its share of the time, its CPU time per request (from /proc: the whole process, and its
 * event-loop thread) and, on PostgreSQL, the CPU time per request of the database's backends
 * serving it and the commits per request (pg_stat_database). With `--aa` both servers are
 * of this build, to see how far two alike servers differ. The server started first has
 * measured worse than the other (more CPU on threads other than the event loop), so compare
 * builds in both orders: `--before-first` starts the other build's server first.
 *
 *   npx tsc -p . && node dist/bench/micro/state-current-ab.js [slices per server] [--before=DIR]
 *     [--db=postgres] [--connections=64] [--aa] [--before-first]
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { authHeaders } from '../lib/api.js';
import { runAutocannon } from '../lib/load.js';
import { ProcessGroup, processCpuMs, threadCpuMs } from '../lib/processes.js';
import { BENCH_LINEAGE, StateTemplate } from '../lib/state-data.js';
import { startStrongroom } from '../lib/strongroom.js';
import type { Strongroom } from '../lib/strongroom.js';
import { createStateVersion, lockedWorkspace } from '../lib/tfe.js';

const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const flag = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const slices = Number(args[0] ?? 10);
const before = flag('before');
const db = flag('db') === 'postgres' ? 'postgres' : 'sqlite';
const connections = Number(flag('connections') ?? 64);
const postgresUrl = flag('postgres-url') ?? 'postgres://postgres@127.0.0.1:5432/postgres';

interface Target {
  name: string;
  sr: Strongroom;
  path: string;
  database: string | null;
  n: number;
  seconds: number;
  cpu: number;
  loop: number;
  pgCpu: number;
  commits: number;
}

const admin = db === 'postgres' ? new pg.Client({ connectionString: postgresUrl }) : null;
await admin?.connect();

/** The backends serving a database (on this machine: their CPU is read from /proc). */
async function backends(database: string | null): Promise<number[]> {
  if (!admin || !database) return [];
  const r = await admin.query<{ pid: number }>('select pid from pg_stat_activity where datname = $1', [database]);
  return r.rows.map((row) => row.pid);
}

async function commits(database: string | null): Promise<number> {
  if (!admin || !database) return 0;
  const r = await admin.query<{ n: string }>('select xact_commit as n from pg_stat_database where datname = $1', [
    database,
  ]);
  return Number(r.rows[0]?.n ?? 0);
}

const group = new ProcessGroup();
const builds: Array<[string, typeof startStrongroom]> = [
  ['this', startStrongroom],
  ['this (a)', startStrongroom],
];
if (before && !process.argv.includes('--aa')) {
  const url = pathToFileURL(join(resolve(before), 'bench/lib/strongroom.js')).href;
  builds[1] = ['before', ((await import(url)) as { startStrongroom: typeof startStrongroom }).startStrongroom];
} else if (!process.argv.includes('--aa')) {
  builds.pop();
}
if (process.argv.includes('--before-first')) builds.reverse();
const targets: Target[] = [];
try {
  for (const [name, start] of builds) {
    const sr = await start(group, { db, postgresUrl });
    const ws = await lockedWorkspace(sr, 'current');
    const state = new StateTemplate(10_240).withSerial(1);
    await createStateVersion(sr, ws.id, { serial: 1, md5: state.md5, lineage: BENCH_LINEAGE, state: state.bytes });
    const path = `/api/v2/workspaces/${ws.id}/current-state-version`;
    const database = sr.databaseUrl ? new URL(sr.databaseUrl).pathname.slice(1) : null;
    targets.push({ name, sr, path, database, n: 0, seconds: 0, cpu: 0, loop: 0, pgCpu: 0, commits: 0 });
  }
  // Pooled connections open as the load rises: the first round is a warm-up, not counted.
  for (let round = -1; round < slices; round++) {
    for (let k = 0; k < targets.length; k++) {
      const t = targets[(round + 1 + k) % targets.length]!;
      const pids = await backends(t.database);
      if (round === 0) t.commits = -(await commits(t.database));
      const pg0 = pids.reduce((a, p) => a + threadCpuMs(p), 0);
      const cpu0 = processCpuMs(t.sr.pid);
      const loop0 = threadCpuMs(t.sr.pid);
      const m = await runAutocannon({
        url: `${t.sr.url}${t.path}`,
        headers: authHeaders(t.sr, 'tfe'),
        connections,
        seconds: 1,
      });
      const cpu = processCpuMs(t.sr.pid) - cpu0;
      const loop = threadCpuMs(t.sr.pid) - loop0;
      const pgCpu = pids.reduce((a, p) => a + threadCpuMs(p), 0) - pg0;
      if (round < 0) continue;
      t.n += m.requests;
      t.seconds += m.seconds;
      t.cpu += cpu;
      t.loop += loop;
      t.pgCpu += pgCpu;
    }
  }
  // A backend's statistics reach pg_stat_database when it goes idle, within a second. The
  // commits are counted over the whole run (the server's idle slices commit next to nothing).
  await new Promise((r) => setTimeout(r, 1500));
  for (const t of targets) t.commits += await commits(t.database);
  for (const t of targets) {
    const perReq = (ms: number) => ((ms * 1000) / t.n).toFixed(0);
    const pgPart = t.database
      ? `, database backends ${perReq(t.pgCpu)} µs/request, ${(t.commits / t.n).toFixed(3)} commits/request`
      : '';
    console.log(
      `${t.name.padEnd(8)} ${(t.n / t.seconds).toFixed(0)} req/s, server ${perReq(t.cpu)} µs CPU/request ` +
        `(event loop ${perReq(t.loop)})${pgPart}`,
    );
  }
  console.log(`load average at the end: ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
} finally {
  for (const t of targets) await t.sr.stop();
  await group.stopAll();
  await admin?.end();
}
