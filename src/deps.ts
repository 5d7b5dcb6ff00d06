import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Config } from './config.js';
import { AdminTokenRepo } from './admin/admin-token-repo.js';
import { AdminTokenService } from './admin/admin-token-service.js';
import { AuditRepo } from './audit/audit-repo.js';
import { AuditService } from './audit/audit-service.js';
import type { BlobStore } from './blob/blob-store.js';
import { DbBlobStore } from './blob/db-blob-store.js';
import { FsBlobStore } from './blob/fs-blob-store.js';
import { UploadAdmission } from './blob/upload-admission.js';
import { takeBackup } from './backup/backup-service.js';
import type { Backup } from './backup/backup-service.js';
import { openDatabase } from './db/database.js';
import type { Db } from './db/database.js';
import { migrateToLatest } from './db/migrate.js';
import { JobQueue } from './jobs/job-queue.js';
import { JobWorker } from './jobs/job-worker.js';
import { HOUSEKEEPING_JOB, housekeepingJob } from './jobs/housekeeping.js';
import { SecretBox } from './secrets/secret-box.js';
import { NATIVE_GCM } from './secrets/content-cipher.js';
import type { ContentSealing } from './secrets/content-cipher.js';
import { MasterKeyRotation, ROTATE_MASTER_KEY_JOB } from './secrets/master-key-rotation.js';
import { MasterKeyRotationRepo } from './secrets/master-key-rotation-repo.js';
import { DataKeyRepo } from './secrets/data-key-repo.js';
import { DataKeyRing } from './secrets/data-key-ring.js';
import { loadMasterKey } from './secrets/master-key.js';
import type { Clock } from './shared/clock.js';
import { systemClock } from './shared/clock.js';
import { createLogger } from './shared/log.js';
import { ensurePrivateDir } from './shared/private-files.js';
import { Metrics } from './shared/metrics.js';
import { PeerChanges } from './shared/peer-changes.js';
import { buildPkiServices } from './pki/pki-services.js';
import type { PkiServices } from './pki/pki-services.js';
import { buildTfeServices } from './tfe/tfe-services.js';
import type { TfeServices } from './tfe/tfe-services.js';

/** What both products are built from. */
export interface CoreDeps {
  config: Config;
  db: Db;
  blobs: BlobStore;
  secrets: SecretBox;
  /** Data keys of stored state content and output values. */
  dataKeys: DataKeyRing;
  /** How stored state content and output values are sealed and opened. */
  sealing: ContentSealing;
  /** Master key rotation (sys/rotate, `strongroom rotate-master-key`). */
  masterKeyRotation: MasterKeyRotation;
  clock: Clock;
  logger: Logger;
  metrics: Metrics;
  jobs: JobQueue;
  adminTokens: AdminTokenService;
  /** Audit devices (sys/audit): every /v1 request and every state-service event is written to them. */
  audit: AuditService;
  /** The free-space floor and the limit on concurrent uploads. */
  uploads: UploadAdmission;
  /** Takes a consistent snapshot of this server's storage and streams it (backup/). */
  takeBackup(): Promise<Backup>;
  /** This process's number among the workers of a cluster (`--workers`), undefined outside one. */
  worker: number | undefined;
  /** The other workers of this machine, for the coherence of in-process caches (decision 0056). */
  peers: PeerChanges;
}

export interface Deps {
  core: CoreDeps;
  tfe: TfeServices;
  pki: PkiServices;
  worker: JobWorker;
  /** Enqueues the recurring core jobs (idempotent; called when the server starts serving). */
  scheduleRecurringJobs(): Promise<void>;
  close(): Promise<void>;
}

export interface BuildDepsOptions {
  clock?: Clock;
  logger?: Logger;
  /** Skip applying migrations (readiness then reports them pending). */
  skipMigrations?: boolean;
  /** This process is worker number `worker` of a cluster: its log lines carry that number. */
  worker?: number;
  /** How this worker reports changes to the others and hears of theirs (cluster.ts); none outside a cluster. */
  peers?: PeerChanges;
}

/** The composition root: opens storage, migrates, and builds every service. */
export async function buildDeps(config: Config, opts: BuildDepsOptions = {}): Promise<Deps> {
  const clock = opts.clock ?? systemClock;
  const base = opts.logger ?? createLogger(config.logLevel);
  const logger = opts.worker === undefined ? base : base.child({ worker: opts.worker });
  const metrics = new Metrics();
  const peers = opts.peers ?? new PeerChanges();
  // The data directory holds the database, blobs and keys: the server's user alone reads it.
  ensurePrivateDir(config.dataDir, { tightenExisting: true });
  const master = await loadMasterKey({ dataDir: config.dataDir, fromEnv: config.masterKey });
  if (master.created) logger.info({ path: master.path }, 'generated a new master key');
  const secrets = new SecretBox(master.key, [
    ...master.others,
    ...config.otherMasterKeys.map((k) => Buffer.from(k, 'base64')),
  ]);
  const db = openDatabase({ url: config.databaseUrl, poolSize: config.pgPoolSize });
  try {
    if (!opts.skipMigrations) {
      const applied = await migrateToLatest(db);
      if (applied.length > 0) logger.info({ migrations: applied }, 'applied database migrations');
    }
    const dataKeys = new DataKeyRing({ repo: new DataKeyRepo({ db: db.kysely }), secrets, clock });
    if (!opts.skipMigrations) await dataKeys.init();
    const sealing: ContentSealing = {
      encrypt: config.stateEncryption,
      current: () => dataKeys.current(),
      lookup: dataKeys.lookup,
      // The addon's in-place AES-GCM (decision 0051), unless native_crypto is off.
      native: config.nativeCrypto ? NATIVE_GCM : null,
    };
    const blobs: BlobStore =
      db.kind === 'postgres'
        ? new DbBlobStore({ db: db.kysely, units: db.units, clock, sealing })
        : await FsBlobStore.open(join(config.dataDir, 'blobs'), clock, sealing, {
            clearTemp: opts.worker === undefined,
          });
    const jobs = new JobQueue({ db, clock });
    const masterKeyRotation = new MasterKeyRotation({
      repo: new MasterKeyRotationRepo({ db: db.kysely }),
      db: db.kysely,
      jobs,
      secrets,
      clock,
      logger: logger.child({ component: 'master-key' }),
      keyFile: master.path,
      batch: config.masterKeyRotationBatch,
      peers,
    });
    // Another worker may have rotated the key file: every report of a change reads it again.
    if (master.path) peers.onPeerChange(() => masterKeyRotation.adoptKeyFile());
    const adminTokens = new AdminTokenService({ repo: new AdminTokenRepo({ db: db.kysely, units: db.units }), clock });
    const audit = new AuditService({
      repo: new AuditRepo({ db: db.kysely }),
      secrets,
      clock,
      logger: logger.child({ component: 'audit' }),
      peers,
    });
    if (!opts.skipMigrations) {
      await audit.reload();
      if (config.auditFile) await audit.ensureFileDevice('file', config.auditFile);
    }
    const uploads = new UploadAdmission({
      dir: config.dataDir,
      minFreeBytes: config.minFreeSpace,
      maxConcurrent: config.maxConcurrentUploads,
    });
    uploads.registerMetrics(metrics.registry, (hook) => metrics.onScrape(hook));
    const core: CoreDeps = {
      config,
      db,
      blobs,
      secrets,
      dataKeys,
      sealing,
      masterKeyRotation,
      clock,
      logger,
      metrics,
      jobs,
      adminTokens,
      uploads,
      audit,
      takeBackup: () => takeBackup(config, { clock }),
      worker: opts.worker,
      peers,
    };

    // The initial admin token is made by the server once it serves (main.ts), never here: a
    // start that fails must leave it to the next start to make and print.
    if (config.dev && config.devRootToken) await adminTokens.ensureFixed(config.devRootToken);

    const tfe = buildTfeServices(core);
    const pki = buildPkiServices(core);
    const worker = new JobWorker({
      queue: jobs,
      logger: logger.child({ component: 'jobs' }),
      metrics,
      concurrency: config.jobConcurrency,
      pollIntervalMs: config.jobPollIntervalMs,
      leaseSeconds: config.jobLeaseSeconds,
    });
    const housekeeping = housekeepingJob({ jobs, clock, db: db.kysely, tasks: tfe.housekeepingTasks });
    worker.register(HOUSEKEEPING_JOB, (_payload, ctx) => housekeeping.handler(ctx.signal));
    worker.register(ROTATE_MASTER_KEY_JOB, (_payload, ctx) => masterKeyRotation.run(ctx.signal));
    for (const [kind, handler] of [...Object.entries(tfe.jobHandlers), ...Object.entries(pki.jobHandlers)]) {
      worker.register(kind, handler);
    }
    tfe.onJobsEnqueued(() => worker.nudge());
    return {
      core,
      tfe,
      pki,
      worker,
      async scheduleRecurringJobs() {
        await housekeeping.start();
        await masterKeyRotation.resume();
      },
      async close() {
        await pki.close?.();
        await audit.close();
        await db.destroy();
      },
    };
  } catch (err) {
    await db.destroy().catch(() => {});
    throw err;
  }
}
