import { randomBytes } from 'node:crypto';
import { existsSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { freePort, waitForHttp } from './processes.js';
import type { Managed, ProcessGroup } from './processes.js';

export interface Strongroom {
  url: string;
  port: number;
  pid: number;
  token: string;
  db: 'sqlite' | 'postgres';
  /** The throwaway data directory the server reported (SQLite file and blobs), if it did. */
  dataDir(): string | null;
  /** The fresh PostgreSQL database, with --db postgres. */
  databaseUrl: string | null;
  /** False once the process has exited. */
  alive(): boolean;
  /** The last lines the server printed. */
  output(): string;
  /** Fixtures built once per server (organization, PKI mount...), keyed by name. */
  fixtures: Map<string, Promise<unknown>>;
  stop(): Promise<void>;
}

const CLI = fileURLToPath(new URL('../../src/cli.js', import.meta.url));

function childEnv(): NodeJS.ProcessEnv {
  // Settings come from flags only, so a developer's STRONGROOM_* variables cannot change what is measured.
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('STRONGROOM_')) env[k] = v;
  return env;
}

/**
 * Starts the built server as its own process on 127.0.0.1 with throwaway storage:
 * a fresh SQLite data directory, or a freshly created PostgreSQL database that is dropped at stop.
 */
export async function startStrongroom(
  group: ProcessGroup,
  opts: { db: 'sqlite' | 'postgres'; postgresUrl: string; extraArgs?: string[]; cpuProfileDir?: string | null },
): Promise<Strongroom> {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run the build first (npm run bench builds)`);
  const port = await freePort();
  const token = `bench-${randomBytes(12).toString('hex')}`;
  const profile = opts.cpuProfileDir ? ['--cpu-prof', `--cpu-prof-dir=${opts.cpuProfileDir}`] : [];
  const args = [
    ...profile,
    CLI,
    'server',
    '--dev',
    '--dev-root-token',
    token,
    '--listen',
    `127.0.0.1:${port}`,
    '--log-level',
    'warn',
  ];
  let dropDb: (() => Promise<void>) | null = null;
  let databaseUrl: string | null = null;
  if (opts.db === 'postgres') {
    const { url, drop } = await createFreshDatabase(opts.postgresUrl);
    dropDb = drop;
    databaseUrl = url;
    args.push('--database-url', url);
  }
  // One worker unless asked: every figure on the benchmarks page is per process unless it says otherwise.
  if (!(opts.extraArgs ?? []).includes('--workers')) args.push('--workers', '1');
  args.push(...(opts.extraArgs ?? []));
  let m: Managed;
  try {
    m = group.start('strongroom', process.execPath, args, { env: childEnv() });
    await waitForHttp(`http://127.0.0.1:${port}/readyz`, m, { timeoutMs: 30_000 });
  } catch (err) {
    await group.stopAll();
    if (dropDb) await dropDb();
    throw err;
  }
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    pid: m.pid,
    token,
    db: opts.db,
    dataDir: () => /storage in (\S+) is thrown away/.exec(m.output())?.[1] ?? null,
    databaseUrl,
    alive: () => m.child.exitCode === null && m.child.signalCode === null,
    output: () => m.output(),
    fixtures: new Map(),
    stop: async () => {
      const dir = /storage in (\S+strongroom-dev-\S+) is thrown away/.exec(m.output())?.[1];
      await group.stop(m, 15_000);
      // The server removes its throwaway directory itself, unless it had to be killed.
      if (dir) rmSync(dir, { recursive: true, force: true });
      if (dropDb) await dropDb();
    },
  };
}

/** Creates `bench_<random>` next to the database named in `adminUrl`; `drop` removes it. */
async function createFreshDatabase(adminUrl: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `bench_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 5000 });
  try {
    await admin.connect();
  } catch (err) {
    throw new Error(
      `PostgreSQL at ${redact(adminUrl)} is not reachable: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  try {
    await admin.query(`create database ${name}`);
  } finally {
    await admin.end();
  }
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 5000 });
      try {
        await c.connect();
        await c.query(`drop database if exists ${name} with (force)`);
      } catch {
        // best effort: a leftover bench_* database is harmless and visible
      } finally {
        await c.end().catch(() => undefined);
      }
    },
  };
}

function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(invalid url)';
  }
}
