/**
 * A quick load check of issue/sign run by hand (not part of the suite):
 *   node dist/test/e2e/pki-issue-load.js [sign-p256|issue-p256|issue-rsa|latency-rsa|latency-ec|read-role] [seconds]
 * [connections] [--prof] Starts the built server as its own process on 127.0.0.1 with a fresh SQLite directory,
 * creates a P-256 root and roles, then drives the endpoint with autocannon and prints
 * req/s and latency. `--prof` writes a V8 CPU profile of the server into the current directory.
 * latency-rsa issues one RSA-2048 certificate a second (after the key pool warmed up) and
 * reports p50/p99, the 1 req/s target of the RSA key pool; latency-ec is the same with EC keys, for comparison.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import type { AutocannonResult } from 'autocannon';
import { opensslCsr } from './pki-issue-helpers.js';

const CLI = fileURLToPath(new URL('../../src/cli.js', import.meta.url));
const [mode = 'sign-p256', secondsArg = '5', connArg = '64'] = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const prof = process.argv.includes('--prof');

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
}

const port = await freePort();
const token = `load-${randomBytes(8).toString('hex')}`;
const dataDir = mkdtempSync(join(tmpdir(), 'pki-load-'));
const child = spawn(
  process.execPath,
  [
    ...(prof ? ['--cpu-prof'] : []),
    CLI,
    'server',
    '--dev',
    '--dev-root-token',
    token,
    '--listen',
    `127.0.0.1:${port}`,
    '--log-level',
    'warn',
    '--data-dir',
    dataDir,
  ],
  { stdio: ['ignore', 'inherit', 'inherit'] },
);
const base = `http://127.0.0.1:${port}`;
/** User+system CPU milliseconds of the server process so far (Linux /proc). */
function serverCpuMs(): number {
  const fields = readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  if (process.env.LOAD_SPLIT) console.log(`utime ${fields[11]} stime ${fields[12]}`);
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}
const headers = { 'x-vault-token': token, 'content-type': 'application/json' };
async function call(
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; json: { data?: Record<string, unknown> } }> {
  const r = await fetch(`${base}/v1/${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  return { status: r.status, json: text ? (JSON.parse(text) as { data?: Record<string, unknown> }) : {} };
}

try {
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`${base}/readyz`)).ok) break;
    } catch {
      /* not up yet */
    }
    if (i > 300) throw new Error('server did not start');
    await new Promise((r) => setTimeout(r, 100));
  }
  await call('POST', 'sys/mounts/pki', { type: 'pki', config: { max_lease_ttl: '87600h' } });
  await call('POST', 'pki/root/generate/internal', { common_name: 'Load Root', key_type: 'ec', ttl: '8760h' });
  await call('POST', 'pki/config/urls', {
    issuing_certificates: `${base}/v1/pki/ca`,
    crl_distribution_points: `${base}/v1/pki/crl`,
  });
  await call('POST', 'pki/roles/ec', {
    allowed_domains: 'example.com',
    allow_subdomains: true,
    key_type: 'ec',
    ttl: '24h',
  });
  await call('POST', 'pki/roles/rsa', {
    allowed_domains: 'example.com',
    allow_subdomains: true,
    key_type: 'rsa',
    ttl: '24h',
  });

  if (mode === 'latency-rsa' || mode === 'latency-ec') {
    await new Promise((r) => setTimeout(r, 3000));
    const times: number[] = [];
    const n = Number(secondsArg);
    for (let i = 0; i < n; i++) {
      const t = performance.now();
      const r = await call('POST', mode === 'latency-rsa' ? 'pki/issue/rsa' : 'pki/issue/ec', {
        common_name: `h${i}.example.com`,
      });
      times.push(performance.now() - t);
      if (r.status !== 200) throw new Error(`status ${r.status}`);
      await new Promise((res) => setTimeout(res, 1000));
    }
    times.sort((a, b) => a - b);
    const q = (p: number) => times[Math.min(times.length - 1, Math.floor(p * times.length))]!.toFixed(1);
    console.log(`${mode}: ${n} requests at 1/s: p50 ${q(0.5)} ms, p99 ${q(0.99)} ms, max ${q(1)} ms`);
  } else {
    let bodies: string[];
    let path: string;
    if (mode === 'sign-p256') {
      bodies = Array.from({ length: 16 }, (_, i) =>
        JSON.stringify({ csr: opensslCsr('EC:P-256', `/CN=h${i}.example.com`).csr, common_name: `h${i}.example.com` }),
      );
      path = '/v1/pki/sign/ec';
    } else if (mode === 'read-role') {
      // Baseline: token check, ACL, dispatch and one small query, no certificate work.
      bodies = [''];
      path = '/v1/pki/roles/ec';
    } else {
      bodies = [JSON.stringify({ common_name: 'h.example.com' })];
      path = mode === 'issue-rsa' ? '/v1/pki/issue/rsa' : '/v1/pki/issue/ec';
    }
    let i = 0;
    const run = (seconds: number) =>
      new Promise<AutocannonResult>((resolve, reject) => {
        autocannon(
          {
            url: base,
            connections: Number(connArg),
            duration: seconds,
            requests: [
              {
                method: mode === 'read-role' ? 'GET' : 'POST',
                path,
                headers,
                setupRequest: (req) => (mode === 'read-role' ? req : { ...req, body: bodies[i++ % bodies.length] }),
              },
            ],
          },
          (err, res) => (err ? reject(err) : resolve(res)),
        );
      });
    await run(1);
    const cpuBefore = serverCpuMs();
    const res = await run(Number(secondsArg));
    const cpuMs = serverCpuMs() - cpuBefore;
    const ok = res.requests.total - res.non2xx;
    console.log(
      `${mode}: ${(ok / Number(secondsArg)).toFixed(0)} req/s ok (${res.non2xx} non-2xx), p50 ${res.latency.p50} ` +
        `ms, p99 ${res.latency.p99} ms, ${Number(connArg)} connections`,
    );
    // CPU time is what the load on a shared machine does not distort much.
    console.log(
      `server CPU per request: ${((cpuMs * 1000) / Math.max(1, res.requests.total)).toFixed(0)} µs ` +
        `(user+system, all threads)`,
    );
    const list = await fetch(`${base}/v1/pki/certs?list=true&limit=1`, { headers });
    console.log(`stored certificates listed: ${list.status === 200 ? 'yes' : list.status}`);
  }
} finally {
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  rmSync(dataDir, { recursive: true, force: true });
}
