import cluster from 'node:cluster';
import type { Worker } from 'node:cluster';
import type { Logger } from 'pino';
import { AggregatorRegistry } from 'prom-client';
import { AdminTokenRepo } from './admin/admin-token-repo.js';
import { AdminTokenService } from './admin/admin-token-service.js';
import type { Config } from './config.js';
import { openDatabase } from './db/database.js';
import { buildDeps } from './deps.js';
import {
  announce,
  applyDevMode,
  batchThreadsOf,
  lockSqliteStorage,
  requeueLeftovers,
  serveUntilSignalled,
  startServer,
} from './main.js';
import { systemClock } from './shared/clock.js';
import { createLogger } from './shared/log.js';
import type { MetricsSnapshot } from './shared/metrics.js';
import { PeerChanges } from './shared/peer-changes.js';

/**
 * `--workers N` (decision 0047): N server processes on one machine, all serving one listen
 * address through node:cluster. The primary process serves nothing itself: it holds the
 * SQLite lock, prepares the storage once (migrations, master key, audit device, jobs an
 * earlier stop left running), starts the workers, makes the initial admin token once they
 * all serve, restarts a worker that dies, forwards SIGHUP, and on SIGTERM or SIGINT asks
 * every worker to drain and exits when they all have.
 */

/** Messages between the primary and a worker. */
type ToWorker =
  | { type: 'start'; config: Config; worker: number }
  | { type: 'shutdown' }
  | { type: 'metrics-snapshot-request'; id: number }
  | { type: 'metrics'; id: number; text: string }
  /** Another worker changed something cached (decision 0056): move the epoch, then answer `peer-changed-ack`. */
  | { type: 'peer-changed'; id: number }
  /** Every other worker took this worker's change `id`. */
  | { type: 'changed-ack'; id: number };
type FromWorker =
  | { type: 'ready' }
  | { type: 'serving'; url: string }
  | { type: 'metrics-request'; id: number }
  | { type: 'metrics-snapshot'; id: number; metrics: MetricsSnapshot }
  | { type: 'changed'; id: number }
  | { type: 'peer-changed-ack'; id: number };

/** A worker that dies sooner than this after its start is started again only after RESTART_DELAY_MS. */
const QUICK_DEATH_MS = 10_000;
const RESTART_DELAY_MS = 1000;
/** Beyond the shutdown timeout, how long the primary waits for a worker to exit before killing it. */
const EXIT_GRACE_MS = 5000;
/** How long a scrape waits for the workers' metrics; a worker that has not answered by then is left out. */
const METRICS_TIMEOUT_MS = 5000;
/** Signals closer together than this count as one. */
const REPEAT_MS = 1000;
/**
 * How long a change waits for the other workers to take it. A worker that has not answered
 * by then (its event loop blocked) is left behind; its caches' own time bounds (1-2 s)
 * still apply to it.
 */
const CHANGE_ACK_TIMEOUT_MS = 1000;

interface Slot {
  worker: Worker;
  startedAt: number;
  /** It said `ready`: it listens for reports of changes (a worker still loading would never answer one). */
  ready: boolean;
  serving: boolean;
}

/** The primary of `strongroom server --workers N` (N > 1): runs until SIGTERM or SIGINT. */
export async function runClusterPrimary(config: Config): Promise<void> {
  const effective = applyDevMode(config);
  const log = createLogger(effective.logLevel).child({ component: 'cluster' });
  const locks = lockSqliteStorage(effective);
  const releaseLocks = () => locks.forEach((l) => l.release());
  try {
    // Everything a first start makes, made once, before any worker runs.
    const deps = await buildDeps(effective, { logger: log });
    try {
      await requeueLeftovers(effective, deps);
    } finally {
      await deps.close();
    }
  } catch (err) {
    releaseLocks();
    throw err;
  }
  new Supervisor(effective, log, releaseLocks).start();
}

class Supervisor {
  readonly #slots = new Map<number, Slot>();
  #starting = true;
  #stopping = false;
  #signals = 0;
  #exitCode = 0;
  #snapshotId = 0;
  readonly #snapshots = new Map<number, (metrics: MetricsSnapshot) => void>();
  #changeId = 0;
  /** Changes being passed on: the workers yet to answer, and what to do when none is left. */
  readonly #changes = new Map<number, { waiting: Set<Worker>; done: () => void }>();

  constructor(
    private readonly config: Config,
    private readonly log: Logger,
    private readonly releaseLocks: () => void,
  ) {}

  start(): void {
    let first = 0;
    const onSignal = (sig: NodeJS.Signals) => {
      // One signal sent to the whole process group (timeout(1), a terminal) may reach the
      // primary twice; only a second one a moment later means "now".
      if (this.#signals > 0 && Date.now() - first < REPEAT_MS) return;
      if (this.#signals++ === 0) first = Date.now();
      if (this.#signals > 1) {
        this.log.warn({ signal: sig }, 'second signal: killing the workers and exiting now');
        for (const s of this.#slots.values()) s.worker.process.kill('SIGKILL');
        process.exit(1);
      }
      this.#stop(sig, 0);
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
    process.on('SIGHUP', () => {
      for (const s of this.#slots.values()) s.worker.process.kill('SIGHUP');
    });
    // Each worker accepts on the shared listening socket itself. With node:cluster's default
    // (the primary accepts and hands each connection to a worker over IPC), a connection
    // handed to a worker that dies at that moment stays open in the primary and its client
    // waits forever; with the kernel's accept queue a worker's death resets only the
    // connections it had accepted, and the others take the queue.
    cluster.schedulingPolicy = cluster.SCHED_NONE;
    for (let n = 1; n <= this.config.workers; n++) this.#fork(n);
  }

  #fork(n: number): void {
    const worker = cluster.fork();
    const slot: Slot = { worker, startedAt: Date.now(), ready: false, serving: false };
    this.#slots.set(n, slot);
    worker.on('message', (m: FromWorker) => {
      if (m.type === 'ready') {
        slot.ready = true;
        this.#send(worker, { type: 'start', config: workerShare(this.config), worker: n });
      } else if (m.type === 'serving') {
        slot.serving = true;
        this.log.info({ worker: n, workerPid: worker.process.pid }, 'worker serving');
        if (this.#starting && [...this.#slots.values()].every((s) => s.serving)) void this.#allServing(m.url);
      } else if (m.type === 'metrics-request')
        void this.#clusterMetrics().then((text) => this.#send(worker, { type: 'metrics', id: m.id, text }));
      else if (m.type === 'metrics-snapshot') this.#snapshots.get(m.id)?.(m.metrics);
      else if (m.type === 'changed') this.#passOnChange(worker, m.id);
      else if (m.type === 'peer-changed-ack') this.#tookChange(m.id, worker);
    });
    worker.on('exit', (code, signal) => {
      for (const id of [...this.#changes.keys()]) this.#tookChange(id, worker);
      this.#exited(n, slot, code, signal);
    });
  }

  /**
   * A worker changed something the others may have cached: every other worker is told and
   * answers once its caches will read again; then the first worker is told it may answer
   * its client (decision 0056).
   */
  #passOnChange(from: Worker, fromId: number): void {
    // A worker not yet ready has cached nothing, and would not answer.
    const others = [...this.#slots.values()]
      .filter((s) => s.ready && s.worker !== from && s.worker.isConnected())
      .map((s) => s.worker);
    const id = this.#changeId++;
    const timer = setTimeout(() => finish(), CHANGE_ACK_TIMEOUT_MS);
    const finish = () => {
      clearTimeout(timer);
      if (!this.#changes.delete(id)) return;
      this.#send(from, { type: 'changed-ack', id: fromId });
    };
    this.#changes.set(id, { waiting: new Set(others), done: finish });
    if (others.length === 0) return finish();
    for (const w of others) this.#send(w, { type: 'peer-changed', id });
  }

  #tookChange(id: number, worker: Worker): void {
    const c = this.#changes.get(id);
    if (!c || !c.waiting.delete(worker)) return;
    if (c.waiting.size === 0) c.done();
  }

  /**
   * Every serving worker's metrics, added up (prom-client's cluster aggregation: counters and
   * histograms summed, gauges read from the shared database taken once), for the worker whose
   * /metrics was scraped.
   */
  async #clusterMetrics(): Promise<string> {
    const workers = [...this.#slots.values()].filter((s) => s.serving && s.worker.isConnected());
    const snapshots = await Promise.all(
      workers.map(
        (s) =>
          new Promise<MetricsSnapshot | undefined>((resolve) => {
            const id = this.#snapshotId++;
            const timer = setTimeout(() => done(undefined), METRICS_TIMEOUT_MS);
            const done = (m: MetricsSnapshot | undefined) => {
              clearTimeout(timer);
              this.#snapshots.delete(id);
              resolve(m);
            };
            this.#snapshots.set(id, done);
            this.#send(s.worker, { type: 'metrics-snapshot-request', id });
          }),
      ),
    );
    return AggregatorRegistry.aggregate(snapshots.filter((m) => m !== undefined)).metrics();
  }

  /** The first start is complete: the banner, with the initial admin token when this start makes it. */
  async #allServing(url: string): Promise<void> {
    this.#starting = false;
    try {
      await announceOnce(url, this.config);
    } catch (err) {
      this.log.error({ err }, 'could not make the initial admin token');
      process.stderr.write(`error: ${(err as Error).message}\n`);
      this.#stop('start failed', 1);
    }
  }

  #exited(n: number, slot: Slot, code: number | null, signal: string | null): void {
    if (this.#slots.get(n) === slot) this.#slots.delete(n);
    const how = { worker: n, workerPid: slot.worker.process.pid, code, signal };
    if (this.#stopping) {
      if (this.#slots.size === 0) this.#finish();
      return;
    }
    if (this.#starting) {
      // The first start failed (the worker printed why): no half-started cluster.
      this.log.error(how, 'a worker stopped before serving; stopping');
      process.stderr.write(`error: worker ${n} stopped before serving (exit ${code ?? signal})\n`);
      this.#stop('start failed', 1);
      return;
    }
    // A clean exit is a worker that was signalled itself: when the signal went to the whole
    // group (systemd, a terminal) the primary's own follows at once, and then nothing restarts.
    const wait = Date.now() - slot.startedAt < QUICK_DEATH_MS || code === 0 ? RESTART_DELAY_MS : 0;
    this.log.error(how, `worker died; starting it again${wait ? ` in ${wait} ms` : ''}`);
    setTimeout(() => this.#stopping || this.#fork(n), wait);
  }

  #stop(reason: string, exitCode: number): void {
    if (this.#stopping) return;
    this.#stopping = true;
    this.#exitCode = exitCode;
    this.log.info({ reason }, 'shutting down: every worker finishes its in-flight requests and jobs');
    if (this.#slots.size === 0) return this.#finish();
    // A worker still starting has acknowledged nothing and has no handler yet: SIGTERM ends it at once.
    for (const s of this.#slots.values())
      if (s.serving) this.#send(s.worker, { type: 'shutdown' });
      else s.worker.process.kill('SIGTERM');
    setTimeout(
      () => {
        for (const [n, s] of this.#slots) {
          this.log.warn({ worker: n }, 'worker did not stop in time: killed');
          s.worker.process.kill('SIGKILL');
        }
      },
      this.config.shutdownTimeoutSeconds * 1000 + EXIT_GRACE_MS,
    ).unref();
  }

  #finish(): void {
    this.releaseLocks();
    this.log.info('stopped');
    process.exit(this.#exitCode);
  }

  #send(worker: Worker, msg: ToWorker): void {
    if (!worker.isConnected()) return;
    worker.send(msg, (err: Error | null) => {
      if (err) this.log.warn({ err: err.message }, 'could not reach a worker');
    });
  }
}

/**
 * What one worker gets of the settings that bound the whole server: the in-flight requests,
 * the concurrent uploads and the PostgreSQL pool are shared out among the workers (rounded
 * up, so the sum may pass the setting by less than one per worker; at least 2 connections
 * each, so one slow query does not stall a worker). 0 (no bound) stays 0.
 */
export function workerShare(config: Config): Config {
  const n = config.workers;
  const share = (total: number, least: number) => (total === 0 ? 0 : Math.max(least, Math.ceil(total / n)));
  return {
    ...config,
    maxInFlightRequests: share(config.maxInFlightRequests, 1),
    maxConcurrentUploads: share(config.maxConcurrentUploads, 1),
    pgPoolSize: share(config.pgPoolSize, 2),
  };
}

/** The primary prints the banner and makes the initial admin token once every worker serves, as one server does. */
async function announceOnce(url: string, config: Config): Promise<void> {
  const db = openDatabase({ url: config.databaseUrl, poolSize: 1 });
  try {
    const repo = new AdminTokenRepo({ db: db.kysely, units: db.units });
    await announce(url, config, new AdminTokenService({ repo, clock: systemClock }));
  } finally {
    await db.destroy();
  }
}

/** A worker of `strongroom server --workers N`: takes its settings from the primary, serves, drains when asked. */
export async function runClusterWorker(): Promise<void> {
  const send = (m: FromWorker) => process.send?.(m);
  const peers = workerPeers(send);
  const start = await new Promise<Extract<ToWorker, { type: 'start' }>>((resolve) => {
    const on = (m: ToWorker) => {
      if (m.type !== 'start') return;
      process.off('message', on);
      resolve(m);
    };
    process.on('message', on);
    send({ type: 'ready' });
  });
  const config = Object.freeze(start.config);
  const server = await startServer(config, { worker: start.worker, peers });
  if (config.batchBackgroundThreads) batchThreadsOf(server);
  const stop = serveUntilSignalled(server, config);
  const metrics = server.deps.core.metrics;
  const scrapes = new Map<number, (text: string) => void>();
  let scrapeId = 0;
  metrics.cluster = () =>
    new Promise<string>((resolve, reject) => {
      const id = scrapeId++;
      const timer = setTimeout(() => {
        scrapes.delete(id);
        reject(new Error('the primary did not answer with the metrics of the workers'));
      }, METRICS_TIMEOUT_MS * 2);
      scrapes.set(id, (text) => {
        clearTimeout(timer);
        scrapes.delete(id);
        resolve(text);
      });
      send({ type: 'metrics-request', id });
    });
  process.on('message', (m: ToWorker) => {
    if (m.type === 'shutdown') stop('asked by the primary');
    else if (m.type === 'metrics') scrapes.get(m.id)?.(m.text);
    else if (m.type === 'metrics-snapshot-request')
      void metrics.snapshot().then(
        (snapshot) => send({ type: 'metrics-snapshot', id: m.id, metrics: snapshot }),
        () => send({ type: 'metrics-snapshot', id: m.id, metrics: [] }),
      );
  });
  send({ type: 'serving', url: server.url });
}

/**
 * This worker's side of decision 0056, listening from before it starts: a change reported by
 * another worker moves the epoch and is answered at once; a change made here is reported
 * through the primary and resolves when the others took it (or when the primary is gone).
 */
function workerPeers(send: (m: FromWorker) => void): PeerChanges {
  const peers = new PeerChanges();
  const waiting = new Map<number, () => void>();
  let nextId = 0;
  process.on('message', (m: ToWorker) => {
    if (m.type === 'peer-changed') {
      peers.peerChanged();
      send({ type: 'peer-changed-ack', id: m.id });
    } else if (m.type === 'changed-ack') waiting.get(m.id)?.();
  });
  peers.connect(
    () =>
      new Promise<void>((resolve) => {
        if (!process.connected) return resolve();
        const id = nextId++;
        const timer = setTimeout(done, CHANGE_ACK_TIMEOUT_MS * 2);
        function done() {
          clearTimeout(timer);
          waiting.delete(id);
          resolve();
        }
        waiting.set(id, done);
        send({ type: 'changed', id });
      }),
  );
  return peers;
}
