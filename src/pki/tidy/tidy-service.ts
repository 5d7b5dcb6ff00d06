import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { JobQueue } from '../../jobs/job-queue.js';
import type { Clock } from '../../shared/clock.js';
import { uuid } from '../../shared/ids.js';
import type { CertService } from '../certs/cert-service.js';
import { parseCertificate, verifyCertificateSignature } from '../crypto/cert-parser.js';
import type { IssuerService } from '../issuers/issuer-service.js';
import type { PkiIssuer } from '../issuers/issuer.js';
import {
  anyTarget,
  applyAutoTidyPatch,
  autoTidyDue,
  isActive,
  progressMessage,
  tidyCutoff,
  tidyParamsFromRequest,
  zeroCounts,
} from './tidy.js';
import type {
  AutoTidyConfig,
  AutoTidyPatch,
  CrlRebuild,
  TidyCounts,
  TidyParams,
  TidyRequest,
  TidyStatus,
} from './tidy.js';
import type { TidyRepo } from './tidy-repo.js';

export const TIDY_JOB = 'pki.tidy';
export const AUTO_TIDY_JOB = 'pki.auto-tidy';

/** How often the auto-tidy check runs (Vault's periodic function runs about once a minute). */
const AUTO_TIDY_CHECK_SECONDS = 60;
/** Rows removed per statement; progress and cancellation are checked between batches. */
const DEFAULT_BATCH = 1000;

export interface TidyJobPayload {
  mountId: string;
  runId: string;
}

class Cancelled extends Error {}

/** What a tidy-status read shows: the run, plus live certificate counts when counting is on. */
export interface TidyStatusView {
  status: TidyStatus;
  storedCounts: { total: number; revoked: number } | null;
}

/**
 * Tidy runs as a durable job, one per mount at a time across every node: starting a run is
 * a conditional write of the mount's tidy row, and the job is enqueued in the same
 * transaction. The job records counts and its message as it goes, checks for a cancel
 * request (also a row write, so it may come from any node) between batches, and resumes
 * with its counts if its node dies and another node reclaims it.
 */
export class TidyService {
  readonly #batch: number;

  constructor(
    private readonly deps: {
      repo: TidyRepo;
      certs: CertService;
      issuers: IssuerService;
      jobs: JobQueue;
      clock: Clock;
      logger: Logger;
      /** Rebuilds CRLs after revoked certificates or issuers were removed. */
      rebuildCrl: CrlRebuild;
      /** tidy_acme: removes expired ACME orders and idle accounts of a mount (the ACME module's). */
      tidyAcme?: AcmeTidy;
      batchSize?: number;
    },
  ) {
    this.#batch = deps.batchSize ?? DEFAULT_BATCH;
  }

  /**
   * POST tidy: validates the request and starts a run unless one is active.
   * Returns the parameters used and whether this call started the run.
   */
  async start(mountId: string, request: TidyRequest): Promise<{ started: boolean; params: TidyParams }> {
    const params = tidyParamsFromRequest(request);
    return { started: await this.#start(mountId, params), params };
  }

  async #start(mountId: string, params: TidyParams): Promise<boolean> {
    if (await this.#tryStart(mountId, params)) return true;
    // An active row whose job is gone (dead after repeated crashes, or purged) would block
    // tidy forever; end it as an error and try once more.
    const current = await this.deps.repo.status(this.deps.repo.executor, mountId);
    if (!current || !isActive(current.state) || !current.runId || !current.jobId) return false;
    const job = await this.deps.jobs.find(current.jobId);
    if (job && (job.status === 'queued' || job.status === 'running')) return false;
    await this.deps.repo.finish(this.deps.repo.executor, mountId, current.runId, {
      state: 'Error',
      at: this.deps.clock.now(),
      counts: current.counts,
      message: current.message,
      error: 'the tidy run was interrupted before it finished',
      lastAutoTidy: undefined,
    });
    return this.#tryStart(mountId, params);
  }

  async #tryStart(mountId: string, params: TidyParams): Promise<boolean> {
    const now = this.deps.clock.now();
    const runId = uuid();
    return this.deps.repo.transaction(async (tx) => {
      await this.deps.repo.ensureRow(tx, mountId, now);
      if (!(await this.deps.repo.tryStart(tx, mountId, { runId, params, at: now }))) return false;
      const payload: TidyJobPayload = { mountId, runId };
      const jobId = await this.deps.jobs.enqueue(tx, { kind: TIDY_JOB, payload, maxAttempts: 3 });
      if (jobId) await this.deps.repo.setJob(tx, mountId, runId, jobId);
      return true;
    });
  }

  /** POST tidy-cancel: asks the active run to stop. False when nothing is running. */
  async cancel(mountId: string): Promise<boolean> {
    return this.deps.repo.requestCancel(this.deps.repo.executor, mountId, this.deps.clock.now());
  }

  /** GET tidy-status (any node). */
  async status(mountId: string): Promise<TidyStatusView> {
    const ex = this.deps.repo.executor;
    const [row, config] = await Promise.all([
      this.deps.repo.status(ex, mountId),
      this.deps.repo.autoConfig(ex, mountId),
    ]);
    const status: TidyStatus = row ?? {
      state: 'Inactive',
      runId: null,
      jobId: null,
      params: null,
      startedAt: null,
      finishedAt: null,
      message: null,
      error: null,
      counts: zeroCounts(),
      lastAutoTidyFinished: null,
    };
    const storedCounts = config.maintainStoredCertificateCounts ? await this.deps.certs.countStored(mountId) : null;
    return { status, storedCounts };
  }

  /** GET config/auto-tidy. */
  async autoTidyConfig(mountId: string): Promise<AutoTidyConfig> {
    return this.deps.repo.autoConfig(this.deps.repo.executor, mountId);
  }

  /** POST config/auto-tidy: only the supplied fields change; turning it on starts the interval now. */
  async updateAutoTidyConfig(mountId: string, patch: AutoTidyPatch): Promise<AutoTidyConfig> {
    const now = this.deps.clock.now();
    return this.deps.repo
      .transaction(async (tx) => {
        await this.deps.repo.ensureRow(tx, mountId, now);
        const { config, becameEnabled } = applyAutoTidyPatch(await this.deps.repo.autoConfig(tx, mountId), patch);
        await this.deps.repo.saveAutoConfig(tx, mountId, config, now, becameEnabled);
        return config;
      })
      .then(async (config) => {
        if (config.enabled) await this.scheduleAutoTidyCheck();
        return config;
      });
  }

  /** Stored and revoked certificate counts of the mounts whose auto-tidy config asks to publish them as metrics. */
  async publishedStoredCounts(): Promise<{ mountId: string; total: number; revoked: number }[]> {
    const mounts = (await this.deps.repo.autoConfigs(this.deps.repo.executor)).filter(
      (m) => m.config.publishStoredCertificateCountMetrics,
    );
    return Promise.all(
      mounts.map(async (m) => ({ mountId: m.mountId, ...(await this.deps.certs.countStored(m.mountId)) })),
    );
  }

  /** Removes the mount's tidy row (the mount was disabled). */
  async purgeMount(mountId: string): Promise<void> {
    await this.deps.repo.delete(this.deps.repo.executor, mountId);
  }

  // ------------------------------------------------------------------ auto-tidy

  /**
   * Queues the next auto-tidy check for the next minute boundary (one queued check across
   * nodes), while any mount has auto-tidy enabled; enabling it on a mount starts the chain.
   */
  async scheduleAutoTidyCheck(): Promise<void> {
    if ((await this.deps.repo.autoEnabled(this.deps.repo.executor)).length === 0) return;
    const every = AUTO_TIDY_CHECK_SECONDS * 1000;
    const at = new Date((Math.floor(this.deps.clock.now().getTime() / every) + 1) * every);
    await this.deps.jobs.enqueue(this.deps.repo.executor, {
      kind: AUTO_TIDY_JOB,
      runAt: at,
      dedupeKey: `${AUTO_TIDY_JOB}@${at.toISOString()}`,
    });
  }

  /** The periodic check: starts a run on every mount whose auto-tidy is due. Returns the mounts started. */
  async runAutoTidyCheck(): Promise<string[]> {
    const now = this.deps.clock.now();
    const started: string[] = [];
    for (const m of await this.deps.repo.autoEnabled(this.deps.repo.executor)) {
      if (!autoTidyDue(m.config, m.state, m.lastAutoTidy, now) || !anyTarget(m.config.flags)) continue;
      const params: TidyParams = {
        flags: m.config.flags,
        safetyBuffer: m.config.safetyBuffer,
        issuerSafetyBuffer: m.config.issuerSafetyBuffer,
        acmeAccountSafetyBuffer: m.config.acmeAccountSafetyBuffer,
        revocationQueueSafetyBuffer: m.config.revocationQueueSafetyBuffer,
        pauseDuration: m.config.pauseDuration,
      };
      if (await this.#start(m.mountId, params)) {
        started.push(m.mountId);
        this.deps.logger.info({ mountId: m.mountId }, 'auto-tidy started');
      }
    }
    return started;
  }

  // ------------------------------------------------------------------ the run

  /** The tidy job: runs (or resumes) the run named by the payload; a stale payload does nothing. */
  async runJob(payload: TidyJobPayload, signal?: AbortSignal): Promise<void> {
    const { mountId, runId } = payload;
    const ex = this.deps.repo.executor;
    const row = await this.deps.repo.status(ex, mountId);
    if (!row || row.runId !== runId || !isActive(row.state) || !row.params) return;
    const run = new TidyRun(this.deps, mountId, runId, row.params, row.counts, this.#batch, signal);
    const log = this.deps.logger.child({ mountId, tidyRunId: runId });
    let end: { state: 'Finished' | 'Error' | 'Cancelled'; error: string | null; message: string | null };
    try {
      await run.execute();
      end = { state: 'Finished', error: null, message: null };
    } catch (err) {
      if (signal?.aborted) throw err; // shutting down: the job is reclaimed and resumes
      if (err instanceof Cancelled) end = { state: 'Cancelled', error: null, message: run.message };
      else {
        log.error({ err }, 'tidy failed');
        end = { state: 'Error', error: err instanceof Error ? err.message : String(err), message: run.message };
      }
    }
    const at = this.deps.clock.now();
    await this.deps.repo.finish(ex, mountId, runId, {
      ...end,
      at,
      counts: run.counts,
      lastAutoTidy: end.state === 'Finished' ? at : undefined,
    });
    log.info({ state: end.state, ...run.counts }, 'tidy ended');
  }
}

/** What tidy_acme does, given by the ACME module. */
export type AcmeTidy = (
  mountId: string,
  opts: { safetyBuffer: number; accountSafetyBuffer: number },
) => Promise<{ ordersDeleted: number; accountsRevoked: number; accountsDeleted: number; accountsTotal: number }>;

/** One run's steps, in Vault's order, with a cancellation checkpoint between batches. */
class TidyRun {
  message: string | null = null;
  readonly counts: TidyCounts;
  readonly #now: Date;

  constructor(
    private readonly deps: {
      repo: TidyRepo;
      certs: CertService;
      issuers: IssuerService;
      clock: Clock;
      logger: Logger;
      rebuildCrl: CrlRebuild;
      tidyAcme?: AcmeTidy;
    },
    private readonly mountId: string,
    private readonly runId: string,
    private readonly params: TidyParams,
    counts: TidyCounts,
    private readonly batch: number,
    private readonly signal: AbortSignal | undefined,
  ) {
    this.counts = { ...counts };
    this.#now = deps.clock.now();
  }

  async execute(): Promise<void> {
    const f = this.params.flags;
    await this.#checkpoint();
    if (f.tidy_cert_store) await this.#certStore();
    await this.#checkpoint();
    if (f.tidy_revoked_cert_issuer_associations) await this.#issuerAssociations();
    await this.#checkpoint();
    if (f.tidy_revoked_certs) await this.#revokedCerts();
    await this.#checkpoint();
    if (f.tidy_expired_issuers) await this.#expiredIssuers();
    await this.#checkpoint();
    // Legacy CA bundle, revocation queue, cross-cluster revocations and CMPv2 nonces are
    // features this server does not have: nothing is stored for them, their counters stay 0.
    if (f.tidy_cert_metadata) await this.#certMetadata();
    await this.#checkpoint();
    if (f.tidy_acme && this.deps.tidyAcme) await this.#acme(this.deps.tidyAcme);
    this.message = null;
  }

  /** Saves progress, stops when a cancel was requested (on any node) or the process is stopping. */
  async #checkpoint(message?: string): Promise<void> {
    this.signal?.throwIfAborted();
    if (message !== undefined) this.message = message;
    // One statement: it saves progress only while the run is still Running, so a cancel
    // request (or a newer run) shows up as nothing updated.
    if (
      !(await this.deps.repo.progress(
        this.deps.repo.executor,
        this.mountId,
        this.runId,
        this.counts,
        this.message,
        this.deps.clock.now(),
      ))
    ) {
      throw new Cancelled();
    }
  }

  /** Between certificates when pause_duration is set (then one certificate per batch). */
  async #pause(): Promise<void> {
    if (this.params.pauseDuration > 0)
      await sleep(this.params.pauseDuration * 1000, undefined, { signal: this.signal });
  }

  get #size(): number {
    return this.params.pauseDuration > 0 ? 1 : this.batch;
  }

  /** Deletes in batches with `remove` until it removes less than a batch, counting into `counter`. */
  async #drain(
    total: number,
    step: Parameters<typeof progressMessage>[0],
    counter: keyof TidyCounts,
    remove: (limit: number) => Promise<number>,
  ): Promise<number> {
    let removed = 0;
    for (;;) {
      await this.#checkpoint(progressMessage(step, removed, total));
      const n = await remove(this.#size);
      removed += n;
      this.counts[counter] += n;
      if (n < this.#size) break;
      await this.#pause();
    }
    return removed;
  }

  async #acme(tidyAcme: AcmeTidy): Promise<void> {
    await this.#checkpoint('Tidying ACME orders and accounts');
    const r = await tidyAcme(this.mountId, {
      safetyBuffer: this.params.safetyBuffer,
      accountSafetyBuffer: this.params.acmeAccountSafetyBuffer,
    });
    this.counts.acme_orders_deleted_count += r.ordersDeleted;
    this.counts.acme_account_revoked_count += r.accountsRevoked;
    this.counts.acme_account_deleted_count += r.accountsDeleted;
    this.counts.total_acme_account_count = r.accountsTotal;
  }

  async #certStore(): Promise<void> {
    const cutoff = tidyCutoff(this.#now, this.params.safetyBuffer);
    // Revoked certificates stay for tidy_revoked_certs: their entries feed the CRL.
    const total = await this.deps.certs.countExpired(this.mountId, cutoff, false);
    await this.#drain(total, 'cert_store', 'cert_store_deleted_count', (limit) =>
      this.deps.certs.deleteExpired(this.mountId, cutoff, false, limit),
    );
  }

  async #revokedCerts(): Promise<void> {
    const cutoff = tidyCutoff(this.#now, this.params.safetyBuffer);
    const total = await this.deps.certs.countExpired(this.mountId, cutoff, true);
    const removed = await this.#drain(total, 'revoked', 'revoked_cert_deleted_count', (limit) =>
      this.deps.certs.deleteExpired(this.mountId, cutoff, true, limit),
    );
    if (removed > 0) await this.deps.rebuildCrl(this.mountId);
  }

  async #certMetadata(): Promise<void> {
    const cutoff = tidyCutoff(this.#now, this.params.safetyBuffer);
    const total = await this.deps.certs.countExpiredMetadata(this.mountId, cutoff);
    await this.#drain(total, 'metadata', 'cert_metadata_deleted_count', (limit) =>
      this.deps.certs.deleteExpiredMetadata(this.mountId, cutoff, limit),
    );
  }

  /**
   * Revoked certificates whose issuer is unknown (never recorded, or since deleted) are
   * attributed again to the mount issuer that signed them, so CRL building finds them
   * without searching. Each one found is counted in missing_issuer_cert_count.
   */
  async #issuerAssociations(): Promise<void> {
    const { issuers } = await this.deps.issuers.list(this.mountId);
    const candidates = issuers.map((i) => ({ issuer: i, parsed: parseCertificate(i.certificateDer) }));
    let after = '';
    let checked = 0;
    for (;;) {
      await this.#checkpoint(progressMessage('associations', checked, checked));
      const rows = await this.deps.certs.revokedWithoutIssuer(
        this.mountId,
        issuers.map((i) => i.id),
        after,
        this.#size,
      );
      for (const row of rows) {
        after = row.serial;
        checked++;
        this.counts.missing_issuer_cert_count++;
        const signer = findSigner(row.der, candidates);
        await this.deps.certs.setRevocationIssuer(this.mountId, row.serial, signer?.id ?? null);
      }
      if (rows.length < this.#size) break;
      await this.#pause();
    }
  }

  /**
   * Issuers whose certificate expired more than issuer_safety_buffer ago are deleted (their
   * keys stay), except the default issuer, which is only reported in the log.
   */
  async #expiredIssuers(): Promise<void> {
    await this.#checkpoint(progressMessage('issuers', 0, 0));
    const cutoff = tidyCutoff(this.#now, this.params.issuerSafetyBuffer);
    const { issuers, defaultIssuerId } = await this.deps.issuers.list(this.mountId);
    let removed = 0;
    for (const issuer of issuers) {
      if (issuer.notAfter.getTime() >= cutoff.getTime()) continue;
      if (issuer.id === defaultIssuerId) {
        this.deps.logger.warn(
          { mountId: this.mountId, issuerId: issuer.id },
          'expired issuer is past the safety buffer but is the default issuer; not removed',
        );
        continue;
      }
      const r = await this.deps.issuers.delete(this.mountId, issuer.id);
      if (r.deleted) {
        removed++;
        this.deps.logger.info(
          { mountId: this.mountId, issuerId: issuer.id, issuerName: issuer.name, keyId: issuer.keyId },
          'tidy removed an expired issuer',
        );
      }
    }
    if (removed > 0) await this.deps.rebuildCrl(this.mountId);
  }
}

/** The mount issuer whose subject is the certificate's issuer name and whose key verifies its signature. */
function findSigner(
  der: Buffer,
  candidates: readonly { issuer: PkiIssuer; parsed: ReturnType<typeof parseCertificate> }[],
): PkiIssuer | undefined {
  let cert: ReturnType<typeof parseCertificate>;
  try {
    cert = parseCertificate(der);
  } catch {
    return undefined;
  }
  const aki = cert.extensions.authorityKeyId?.toString('hex');
  for (const c of candidates) {
    if (!c.issuer.subjectDer.equals(cert.issuer.der)) continue;
    if (aki && c.issuer.subjectKeyId !== '' && aki !== c.issuer.subjectKeyId) continue;
    if (verifyCertificateSignature(cert, c.parsed.publicKey)) return c.issuer;
  }
  return undefined;
}
