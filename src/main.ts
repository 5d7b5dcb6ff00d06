import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { Server as TlsServer } from 'node:tls';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.js';
import type { Config } from './config.js';
import { buildDeps } from './deps.js';
import type { Deps } from './deps.js';
import type { AdminTokenService } from './admin/admin-token-service.js';
import { keepBackgroundThreadsBatched } from './shared/thread-scheduling.js';
import { describeListenError } from './shared/listen-error.js';
import { ServerLock, ServerLockHeldError } from './db/server-lock.js';
import type { PeerChanges } from './shared/peer-changes.js';

/** How often threads started since the last pass are put under SCHED_BATCH. */
const BATCH_PASS_MS = 10_000;

export interface RunningServer {
  app: FastifyInstance;
  deps: Deps;
  url: string;
  /** Stops accepting, lets in-flight requests and jobs finish (up to the timeout), closes storage. */
  shutdown(reason?: string): Promise<void>;
}

/** Dev mode keeps everything in a throwaway directory that is removed at exit. */
export function applyDevMode(config: Config): Config {
  if (!config.dev) return config;
  const dir = mkdtempSync(join(tmpdir(), 'strongroom-dev-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  const databaseUrl = config.databaseKind === 'sqlite' ? `sqlite:${join(dir, 'strongroom.db')}` : config.databaseUrl;
  return Object.freeze({ ...config, dataDir: dir, databaseUrl });
}

export interface StartOptions {
  /**
   * This process is worker number `worker` of a cluster (cluster.ts): the primary holds the
   * SQLite lock, requeued the jobs an earlier stop left running, and makes the initial admin
   * token; the worker only serves.
   */
  worker?: number;
  /** How the worker reports changes to the others and hears of theirs (decision 0056). */
  peers?: PeerChanges;
}

export async function startServer(given: Config, opts: StartOptions = {}): Promise<RunningServer> {
  const inCluster = opts.worker !== undefined;
  // Outside a cluster this is the only process serving, whatever `workers` says (cli.ts forks for more).
  const config = inCluster || given.workers === 1 ? given : Object.freeze({ ...given, workers: 1 });
  const locks = inCluster ? [] : lockSqliteStorage(config);
  const releaseLocks = () => locks.forEach((l) => l.release());
  let deps: Deps;
  try {
    deps = await buildDeps(config, { worker: opts.worker, peers: opts.peers });
  } catch (err) {
    releaseLocks();
    throw err;
  }
  const log = deps.core.logger;
  let app: FastifyInstance;
  try {
    if (!inCluster) await requeueLeftovers(config, deps);
    app = await buildApp(deps);
    try {
      await app.listen({ host: config.listenHost, port: config.listenPort });
    } catch (err) {
      await app.close().catch(() => {});
      throw describeListenError(err, config.listenHost, config.listenPort);
    }
  } catch (err) {
    await deps.close().catch(() => {});
    releaseLocks();
    throw err;
  }
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : config.listenPort;
  const scheme = config.tlsCertFile ? 'https' : 'http';
  const host = config.listenHost.includes(':') ? `[${config.listenHost}]` : config.listenHost;
  const url = `${scheme}://${host}:${port}`;
  if (config.runJobWorker) {
    await deps.scheduleRecurringJobs();
    deps.worker.start();
  }

  let closing: Promise<void> | undefined;
  const shutdown = (reason = 'shutdown') => {
    closing ??= (async () => {
      log.info({ reason }, 'shutting down: finishing in-flight requests and jobs');
      const timeoutMs = config.shutdownTimeoutSeconds * 1000;
      const started = Date.now();
      await Promise.race([app.close(), new Promise((r) => setTimeout(r, timeoutMs).unref())]);
      await deps.worker.stop(Math.max(1000, timeoutMs - (Date.now() - started)));
      await deps.close();
      releaseLocks();
      log.info('stopped');
    })();
    return closing;
  };
  return { app, deps, url, shutdown };
}

/**
 * A SQLite database and its data directory serve one server at a time: two would each
 * cache what the other changes, and each would collect the other's blobs. Several nodes
 * share a PostgreSQL database instead.
 */
export function lockSqliteStorage(config: Config): ServerLock[] {
  if (config.databaseKind !== 'sqlite') return [];
  const dbPath = config.databaseUrl.slice('sqlite:'.length);
  const paths = [join(config.dataDir, 'server.lock')];
  if (dbPath !== ':memory:' && dbPath !== '' && dirname(dbPath) !== config.dataDir) paths.push(`${dbPath}.server.lock`);
  const holder = { pid: process.pid, startedAt: new Date().toISOString() };
  const taken: ServerLock[] = [];
  try {
    for (const p of paths) taken.push(ServerLock.acquire(p, holder));
  } catch (err) {
    taken.forEach((l) => l.release());
    if (!(err instanceof ServerLockHeldError)) throw err;
    const who = err.holder ? ` (pid ${err.holder.pid}, started ${err.holder.startedAt})` : '';
    const what = err.path.endsWith('.server.lock')
      ? `the SQLite database ${dbPath}`
      : `the data directory ${config.dataDir}`;
    throw new Error(
      `another Strongroom server${who} is using ${what}. Stop it first, or give this server its own --data-dir ` +
        '(several nodes share a PostgreSQL database, --database-url postgres://…, never a SQLite file).',
    );
  }
  return taken;
}

/**
 * On SQLite no other server can hold a job's lease (the lock above), so jobs an earlier stop
 * left running are queued again at once instead of after their lease.
 */
export async function requeueLeftovers(config: Config, deps: Deps): Promise<void> {
  if (config.databaseKind !== 'sqlite' || !config.runJobWorker) return;
  const n = await deps.core.jobs.requeueAllRunning();
  if (n > 0) deps.core.logger.warn({ jobs: n }, 'requeued jobs left running by an earlier stop');
}

/** `strongroom server`: serve until SIGTERM or SIGINT, then shut down gracefully and exit 0. */
export async function runServer(config: Config): Promise<void> {
  const effective = applyDevMode(config);
  const server = await startServer(effective);
  if (effective.batchBackgroundThreads) batchThreadsOf(server);
  serveUntilSignalled(server, effective);
  // Only now: whoever waits for the banner may signal at once, and must reach the handler.
  await announce(server.url, effective, server.deps.core.adminTokens);
}

/**
 * Prints the banner once the server serves, with the initial admin token when this start
 * makes it: only a start that serves makes one, and it is stored only once it is printed
 * (AdminTokenService.ensureInitial), so a start that fails before leaves the next one to
 * make and print it. Dev mode has its fixed root token instead.
 */
export async function announce(url: string, config: Config, tokens: AdminTokenService): Promise<void> {
  const print = (token: string | undefined) => process.stdout.write(bannerText(url, config, token));
  if (config.dev) return void print(undefined);
  let shown = false;
  try {
    await tokens.ensureInitial((token) => {
      shown = token !== undefined;
      print(token);
    });
  } catch (err) {
    if (!shown) throw err;
    throw new Error(
      `the initial admin token printed above could not be stored, so it is not valid (${(err as Error).message}). ` +
        'Start the server again: the next start makes and prints another.',
    );
  }
}

/** What the server prints once it serves; one string, so that a reader never sees it half-printed. */
export function bannerText(url: string, config: Config, initialAdminToken: string | undefined): string {
  let banner = `\nStrongroom is serving at ${url}\n`;
  banner += `  Terraform state API: ${url}/api/v2    Vault-compatible API: ${url}/v1\n`;
  if (config.workers > 1) banner += `  Worker processes: ${config.workers}\n`;
  if (config.dev) {
    banner += `  Development mode: storage in ${config.dataDir} is thrown away at exit.\n`;
    banner += `  Root token: ${config.devRootToken}\n\n`;
  } else if (initialAdminToken) {
    banner += '\n  Initial admin token (a Vault root token and a site-admin API token).\n';
    banner += '  It is shown only this once and stored only as a hash; keep it safe:\n\n';
    banner += `      ${initialAdminToken}\n\n`;
    banner += '  Lost it? `strongroom admin-token create` (with the same settings, on this machine) makes another.\n\n';
  } else {
    banner += '\n';
  }
  return banner;
}

/**
 * SIGTERM and SIGINT shut the server down gracefully and exit 0 (a second signal exits at
 * once); SIGHUP reopens the audit files and reloads TLS. Returns the graceful stop, for a
 * cluster worker whose primary asks it to stop.
 */
export function serveUntilSignalled(server: RunningServer, config: Config): (reason: string) => void {
  const stop = (reason: string) =>
    server
      .shutdown(reason)
      .then(() => process.exit(0))
      .catch((err: unknown) => {
        server.deps.core.logger.error({ err }, 'shutdown failed');
        process.exit(1);
      });
  let signals = 0;
  const onSignal = (sig: NodeJS.Signals) => {
    signals++;
    if (signals > 1) {
      server.deps.core.logger.warn({ signal: sig }, 'second signal: exiting now');
      process.exit(1);
    }
    void stop(sig);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  const { tlsCertFile, tlsKeyFile } = config;
  process.on('SIGHUP', () => {
    // File audit devices open their files again (log rotation), and the TLS pair is read again.
    server.deps.core.audit.reopen();
    server.deps.core.logger.info('SIGHUP: reopened the audit device files');
    if (tlsCertFile && tlsKeyFile) reloadTls(server, tlsCertFile, tlsKeyFile);
  });
  return (reason) => void stop(reason);
}

/**
 * SIGHUP: reads the TLS certificate and key files again (a renewed certificate) and serves
 * new connections with them; connections already open keep theirs. A pair that does not
 * load or match is refused and the old one kept.
 */
function reloadTls(server: RunningServer, certFile: string, keyFile: string): void {
  const log = server.deps.core.logger;
  try {
    const context = { cert: readFileSync(certFile), key: readFileSync(keyFile) };
    (server.app.server as unknown as TlsServer).setSecureContext(context);
    log.info({ certFile }, 'reloaded the TLS certificate and key');
  } catch (err) {
    log.error(
      { certFile, keyFile, error: (err as Error).message },
      'TLS reload failed; still serving the old certificate',
    );
  }
}

/** The batch_background_threads setting: every thread but the event loop under SCHED_BATCH (decision 0019). */
export function batchThreadsOf(server: RunningServer): void {
  const log = server.deps.core.logger;
  let warned = false;
  const kept = keepBackgroundThreadsBatched(BATCH_PASS_MS, (pass) => {
    if (pass.failed > 0 && !warned) {
      warned = true;
      log.warn(
        { threads: pass.failed },
        'could not put some background threads under SCHED_BATCH; they keep the normal policy',
      );
    }
  });
  if (kept) log.info({ threads: kept.threads }, 'background threads run under SCHED_BATCH');
  else log.info('background threads keep the normal scheduling policy (SCHED_BATCH needs Linux and the native addon)');
}
