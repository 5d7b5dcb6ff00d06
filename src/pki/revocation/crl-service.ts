import type { Logger } from 'pino';
import type { JobQueue } from '../../jobs/job-queue.js';
import type { Clock } from '../../shared/clock.js';
import { addSeconds } from '../../shared/clock.js';
import { buildCrl } from '../crypto/crl.js';
import type { RevokedEntry } from '../crypto/crl.js';
import type { RawExtension } from '../crypto/extensions.js';
import type { PkiIssuer } from '../issuers/issuer.js';
import type { IssuerService } from '../issuers/issuer-service.js';
import {
  applyCrlConfig,
  autoRebuildDue,
  crlGroups,
  crlSignatureOptions,
  crlTimes,
  DELTA_OVERLAP_SECONDS,
  revokedIssuerEntries,
} from './revocation.js';
import type { CrlConfig, CrlConfigPatch, CrlGroup, CrlKind, StoredCrl } from './revocation.js';
import type { Executor, RevocationRepo } from './revocation-repo.js';

export const CRL_AUTO_REBUILD_JOB = 'pki-crl-auto-rebuild';
export const CRL_DELTA_JOB = 'pki-crl-delta';

/** Which CRLs one build pass writes. */
export interface RebuildRequest {
  complete: boolean;
  delta: boolean;
  /** Only the CRLs of groups holding one of these issuers; 'all' = every group. */
  issuers: Set<string> | 'all';
}

interface MountRuns {
  current?: Promise<string[]>;
  next?: { req: RebuildRequest; promise: Promise<string[]> };
}

/** What sign-revocation-list signs (reference 9.4). */
export interface RevocationListInput {
  crlNumber: number;
  /** -1: a complete CRL. */
  deltaCrlBaseNumber: number;
  nextUpdateSeconds: number;
  revoked: RevokedEntry[];
  extensions: RawExtension[];
}

/**
 * CRLs: built from the revoked rows of each issuer group, signed once, stored in pki_crls
 * and served from there by every node (serving never builds). Builds on one node are
 * serialised per mount and coalesced: requests that arrive while a build runs share the
 * next one. Across nodes, a CRL only replaces a stored one with a lower number.
 */
export class CrlService {
  readonly #runs = new Map<string, MountRuns>();
  readonly #configListeners: ((mountId: string) => void)[] = [];

  constructor(
    private readonly deps: {
      repo: RevocationRepo;
      issuers: IssuerService;
      jobs: JobQueue;
      clock: Clock;
      logger?: Logger;
    },
  ) {}

  async getConfig(mountId: string, ex: Executor = this.deps.repo.executor): Promise<CrlConfig> {
    return this.deps.repo.getConfig(ex, mountId);
  }

  /** Registers a listener called after a mount's config/crl was written (committed) through this node. */
  onConfigChanged(listener: (mountId: string) => void): void {
    this.#configListeners.push(listener);
  }

  /** config/crl write: partial, checked; rebuilds every CRL when the change calls for it. Returns warnings. */
  async updateConfig(mountId: string, patch: CrlConfigPatch): Promise<{ config: CrlConfig; warnings: string[] }> {
    const { config, rebuild } = await this.deps.repo.transaction(async (tx) => {
      const current = await this.deps.repo.getConfig(tx, mountId);
      const r = applyCrlConfig(current, patch);
      await this.deps.repo.putConfig(tx, mountId, r.config, this.deps.clock.now());
      // The automatic rebuild job looks at the CRLs at once, then keeps itself scheduled.
      if (r.config.autoRebuild && !current.autoRebuild)
        await this.#scheduleAutoRebuild(tx, mountId, this.deps.clock.now());
      return r;
    });
    for (const l of this.#configListeners) l(mountId);
    // OCSP on the other workers reads its window from this config (decision 0056).
    this.deps.issuers.peers.changed();
    let warnings: string[] = [];
    if (rebuild) {
      warnings = (await this.request(mountId, { complete: true, delta: config.enableDelta, issuers: 'all' })).map(
        (w, i) => `Warning ${i + 1} during CRL rebuild: ${w}`,
      );
    }
    return { config, warnings };
  }

  /** The stored CRL of an issuer reference ('default' included); undefined when none is built. */
  async fetch(mountId: string, ref: string, kind: CrlKind): Promise<StoredCrl | undefined> {
    // Builds this node started or queued (a new issuer, then its URLs, say) are awaited, never
    // started here: a read right after the change that asked for them sees their result.
    const runs = this.#runs.get(mountId);
    if (runs) await (runs.next?.promise ?? runs.current)?.catch(() => undefined);
    let issuer: PkiIssuer | undefined;
    if (ref === 'default') issuer = await this.deps.issuers.defaultIssuer(mountId);
    else issuer = await this.deps.issuers.resolve(mountId, ref);
    if (!issuer) return undefined;
    return this.deps.repo.getCrl(this.deps.repo.executor, mountId, issuer.id, kind);
  }

  /**
   * Builds CRLs now (coalesced with builds already queued on this node) and resolves with
   * the warnings of the pass that covered this request.
   */
  request(mountId: string, req: RebuildRequest): Promise<string[]> {
    let runs = this.#runs.get(mountId);
    if (!runs) {
      runs = {};
      this.#runs.set(mountId, runs);
    }
    const r = runs;
    if (r.next) {
      mergeRequest(r.next.req, req);
      return r.next.promise;
    }
    const mine: RebuildRequest = {
      complete: req.complete,
      delta: req.delta,
      issuers: req.issuers === 'all' ? 'all' : new Set(req.issuers),
    };
    const run = async (): Promise<string[]> => {
      await r.current?.catch(() => undefined);
      r.next = undefined;
      const p = this.#build(mountId, mine);
      r.current = p;
      try {
        return await p;
      } finally {
        if (r.current === p) r.current = undefined;
        if (!r.current && !r.next) this.#runs.delete(mountId);
      }
    };
    const promise = run();
    r.next = { req: mine, promise };
    return promise;
  }

  /** Builds started in the background (issuer changes) finish before shutdown. */
  async drain(): Promise<void> {
    while (this.#runs.size > 0) {
      for (const r of [...this.#runs.values()]) await (r.next?.promise ?? r.current)?.catch(() => undefined);
    }
  }

  /** Rebuild in the background, logging failures (issuer changes). */
  rebuildInBackground(mountId: string): void {
    this.request(mountId, { complete: true, delta: true, issuers: 'all' }).catch((err: unknown) => {
      this.deps.logger?.warn({ err, mountId }, 'CRL rebuild after an issuer change failed');
    });
  }

  /**
   * In the revocation's transaction: makes sure the automatic rebuilds will pick it up —
   * the next complete rebuild is queued, and with delta CRLs a delta within the interval.
   */
  async scheduleAfterRevocation(tx: Executor, mountId: string, config: CrlConfig): Promise<void> {
    const t = crlTimes(config);
    const now = this.deps.clock.now();
    await this.#scheduleAutoRebuild(tx, mountId, addSeconds(now, t.expirySeconds - t.gracePeriodSeconds));
    if (config.enableDelta) {
      await this.deps.jobs.enqueue(tx, {
        kind: CRL_DELTA_JOB,
        payload: { mountId },
        runAt: addSeconds(now, t.deltaIntervalSeconds),
        dedupeKey: `${CRL_DELTA_JOB}:${mountId}`,
      });
    }
  }

  async #scheduleAutoRebuild(ex: Executor, mountId: string, at: Date): Promise<void> {
    await this.deps.jobs.enqueue(ex, {
      kind: CRL_AUTO_REBUILD_JOB,
      payload: { mountId },
      runAt: at,
      dedupeKey: `${CRL_AUTO_REBUILD_JOB}:${mountId}`,
    });
  }

  /** Job: rebuilds complete CRLs that are within their grace period (or missing), then queues the next run. */
  async runAutoRebuild(mountId: string): Promise<void> {
    const config = await this.getConfig(mountId);
    if (!config.autoRebuild) return;
    const t = crlTimes(config);
    const now = this.deps.clock.now();
    const { issuers } = await this.deps.issuers.list(mountId);
    const groups = crlGroups(issuers);
    if (groups.length === 0) return;
    const headers = await this.deps.repo.crlHeaders(this.deps.repo.executor, mountId);
    const due = new Set<string>();
    for (const g of groups) {
      const h = headers.find((x) => x.issuerId === g.signer.id && x.kind === 'complete');
      if (!h || autoRebuildDue(h.nextUpdate, t) <= now) for (const id of g.issuerIds) due.add(id);
    }
    if (due.size > 0) await this.request(mountId, { complete: true, delta: config.enableDelta, issuers: due });
    const after = await this.deps.repo.crlHeaders(this.deps.repo.executor, mountId);
    const next = after.filter((h) => h.kind === 'complete').map((h) => autoRebuildDue(h.nextUpdate, t).getTime());
    const at =
      next.length > 0
        ? new Date(Math.max(now.getTime() + 1000, Math.min(...next)))
        : addSeconds(now, t.expirySeconds - t.gracePeriodSeconds);
    await this.#scheduleAutoRebuild(this.deps.repo.executor, mountId, at);
  }

  /** Job: rebuilds every delta CRL of the mount (queued by revocations). */
  async runDeltaRebuild(mountId: string): Promise<void> {
    const config = await this.getConfig(mountId);
    if (!config.enableDelta) return;
    await this.request(mountId, { complete: false, delta: true, issuers: 'all' });
  }

  /** Removes the mount's CRLs (mount disabled). */
  async purgeMount(mountId: string): Promise<void> {
    await this.deps.repo.deleteCrls(this.deps.repo.executor, mountId);
  }

  async #build(mountId: string, req: RebuildRequest): Promise<string[]> {
    const config = await this.getConfig(mountId);
    const { issuers, defaultIssuerId } = await this.deps.issuers.list(mountId);
    const groups = crlGroups(issuers);
    const warnings: string[] = [];
    for (const g of groups) {
      if (
        req.issuers !== 'all' &&
        !g.issuerIds.some((id) => (req.issuers as Set<string>).has(id)) &&
        !(g.issuerIds.includes(defaultIssuerId) && req.issuers.has(''))
      )
        continue;
      const orphans = g.issuerIds.includes(defaultIssuerId);
      try {
        if (req.complete) await this.#buildOne(mountId, g, issuers, config, 'complete', orphans);
        if (config.enableDelta && (req.delta || req.complete))
          await this.#buildOne(mountId, g, issuers, config, 'delta', orphans);
      } catch (err) {
        warnings.push(`issuer ${g.signer.id}: ${(err as Error).message}`);
      }
    }
    if (req.issuers === 'all') {
      // Issuers gone or no longer allowed to sign CRLs serve none.
      await this.deps.repo.deleteCrls(this.deps.repo.executor, mountId, {
        keepIssuers: groups.flatMap((g) => g.issuerIds).concat(['']),
      });
      if (!config.enableDelta) await this.deps.repo.deleteCrls(this.deps.repo.executor, mountId, { kind: 'delta' });
    }
    return warnings;
  }

  async #buildOne(
    mountId: string,
    g: CrlGroup,
    issuers: readonly PkiIssuer[],
    config: CrlConfig,
    kind: CrlKind,
    orphans: boolean,
  ): Promise<void> {
    const repo = this.deps.repo;
    const ex = repo.executor;
    const t = crlTimes(config);
    const signing = await this.deps.issuers.getSigningContext(mountId, g.signer.id, { usage: 'crl-signing' });
    const sig = crlSignatureOptions(g.signer.revocationSignatureAlgorithm);
    for (let attempt = 0; ; attempt++) {
      const now = this.deps.clock.now();
      const started = performance.now();
      const headers = (await repo.crlHeaders(ex, mountId)).filter((h) => g.issuerIds.includes(h.issuerId));
      const base =
        kind === 'delta' ? headers.find((h) => h.issuerId === g.signer.id && h.kind === 'complete') : undefined;
      if (kind === 'delta' && !base) return;
      const since = base ? new Date(base.watermark.getTime()) : undefined;
      let entries: RevokedEntry[] = [];
      if (!config.disable) {
        const rows = await repo.revokedRows(ex, mountId, g.issuerIds, { orphans, since });
        entries = rows.map((r) => ({ serial: r.serial, revocationDate: r.revoked_at }));
        const fromIssuers = revokedIssuerEntries(issuers, g).filter((e) => !since || e.revokedAt >= since);
        if (fromIssuers.length > 0) {
          const seen = new Set(rows.map((r) => r.serial));
          for (const e of fromIssuers)
            if (!seen.has(e.serial)) entries.push({ serial: e.serial, revocationDate: e.revokedAt });
        }
      }
      if (config.maxCrlEntries !== -1 && entries.length > config.maxCrlEntries) {
        throw new Error(
          `error building CRL: refusing to build CRL with ${entries.length} entries; maximum allowed is ` +
            `${config.maxCrlEntries} (max_crl_entries)`,
        );
      }
      const read = performance.now();
      const number = headers.reduce((m, h) => Math.max(m, h.crlNumber), 0) + 1;
      const built = buildCrl(signing.context, {
        thisUpdate: now,
        nextUpdate: addSeconds(now, t.expirySeconds),
        crlNumber: number,
        deltaBaseCrlNumber: base?.crlNumber,
        entries,
        ...sig,
      });
      const signed = performance.now();
      const kept = await repo.putCrl(
        ex,
        {
          mountId,
          kind,
          crlNumber: number,
          baseCrlNumber: base ? base.crlNumber : null,
          thisUpdate: built.thisUpdate,
          nextUpdate: built.nextUpdate,
          watermark: kind === 'complete' ? addSeconds(now, -DELTA_OVERLAP_SECONDS) : now,
          entryCount: entries.length,
          der: built.der,
        },
        g.issuerIds,
        now,
      );
      if (kept || attempt >= 4) {
        const ms = (a: number, b: number) => Math.round(b - a);
        const timings = { readMs: ms(started, read), signMs: ms(read, signed), storeMs: ms(signed, performance.now()) };
        this.deps.logger?.info(
          { mountId, issuerId: g.signer.id, kind, crlNumber: number, entries: entries.length, ...timings },
          'CRL rebuilt',
        );
        return;
      }
      // Another node stored a CRL with this number meanwhile: build again over a fresh read.
    }
  }

  /** sign-revocation-list: signs a caller-supplied list with the issuer's key (nothing is stored). */
  async signRevocationList(mountId: string, ref: string, input: RevocationListInput): Promise<Buffer> {
    const issuer = await this.deps.issuers.resolve(mountId, ref);
    const signing = await this.deps.issuers.getSigningContext(mountId, issuer.id, { usage: 'crl-signing' });
    const now = this.deps.clock.now();
    return buildCrl(signing.context, {
      thisUpdate: now,
      nextUpdate: addSeconds(now, input.nextUpdateSeconds),
      crlNumber: input.crlNumber,
      deltaBaseCrlNumber: input.deltaCrlBaseNumber >= 0 ? input.deltaCrlBaseNumber : undefined,
      entries: input.revoked,
      extraExtensions: input.extensions,
      freshestCrlUrls: [],
      ...crlSignatureOptions(issuer.revocationSignatureAlgorithm),
    }).der;
  }
}

function mergeRequest(into: RebuildRequest, req: RebuildRequest): void {
  into.complete ||= req.complete;
  into.delta ||= req.delta;
  if (into.issuers === 'all') return;
  if (req.issuers === 'all') into.issuers = 'all';
  else for (const id of req.issuers) into.issuers.add(id);
}
