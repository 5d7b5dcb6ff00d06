/**
 * What a change of a cached setting costs with several workers (decision 0056): the latency
 * of `POST /v1/<mount>/roles/:name` (a role written, then reported to every other worker and
 * acknowledged before the answer) on a server with `--workers 1` and one with `--workers N`,
 * one request at a time, in alternating rounds. Also reports each server's resident memory
 * (the whole process tree) after the writes, so the memory a worker adds is visible.
 *
 *   npx tsc -p . && node dist/bench/micro/peer-change.js [writes per round] [--workers=2] [--rounds=4]
 */
import { api } from '../lib/api.js';
import { ProcessGroup, treeRssBytes } from '../lib/processes.js';
import { startStrongroom } from '../lib/strongroom.js';
import type { Strongroom } from '../lib/strongroom.js';

const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const flag = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const writes = Number(args[0] ?? 300);
const workers = Number(flag('workers') ?? 2);
const rounds = Number(flag('rounds') ?? 4);

const group = new ProcessGroup();
try {
  const servers: Array<[string, Strongroom]> = [];
  for (const n of [1, workers]) {
    const sr = await startStrongroom(group, { db: 'sqlite', postgresUrl: '', extraArgs: ['--workers', String(n)] });
    await api(sr, 'vault', 'POST', '/v1/sys/mounts/pki', { body: { type: 'pki' } });
    servers.push([`${n} worker${n > 1 ? 's' : ''}`, sr]);
  }
  const samples = new Map<string, number[]>(servers.map(([name]) => [name, []]));
  for (let round = 0; round < rounds; round++) {
    for (const [name, sr] of servers) {
      const out = samples.get(name)!;
      for (let i = 0; i < writes; i++) {
        const t = performance.now();
        await api(sr, 'vault', 'POST', '/v1/pki/roles/web', { body: { allowed_domains: `d${i}.example.com` } });
        // The first round warms up.
        if (round > 0) out.push(performance.now() - t);
      }
    }
  }
  for (const [name, sr] of servers) {
    const xs = samples.get(name)!.sort((a, b) => a - b);
    const at = (q: number) => xs[Math.min(xs.length - 1, Math.floor(q * xs.length))]!.toFixed(2);
    console.log(
      `${name}: role write p50 ${at(0.5)} ms, p90 ${at(0.9)} ms, p99 ${at(0.99)} ms over ${xs.length}; ` +
        `RSS ${(treeRssBytes(sr.pid) / 1048576).toFixed(0)} MB`,
    );
  }
} finally {
  await group.stopAll();
}
