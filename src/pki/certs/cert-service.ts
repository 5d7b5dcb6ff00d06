import type { BatchQueue } from '../../shared/batch-queue.js';
import type { WriteOnlyTx } from '../../db/unit-of-work.js';
import type { Clock } from '../../shared/clock.js';
import type { Lease } from '../sys/lease.js';
import type { CertMetadata, IssuedCertificate } from './cert.js';
import type { CertRepo, Executor } from './cert-repo.js';
import { encodeCursor, sortValue } from './cert-search.js';
import type { CertSearchPage, CertSearchQuery } from './cert-search.js';
import type { CertSearchRepo } from './cert-search-repo.js';
import type { CertSearchIndex } from './cert-search-index.js';

/** Extra work done in the certificate's own transaction (e.g. recording its lease). */
export type InTransaction = (tx: Executor) => Promise<void>;

/** What one issuance writes: the certificate (absent under no_store), its metadata, its lease. */
export interface IssuedRecord {
  cert?: IssuedCertificate;
  metadata?: CertMetadata;
  lease?: Lease;
  /**
   * Extra work in the same transaction; prefer the data fields, which are written in bulk
   * and, on SQLite, off the event loop (a batch with a callback commits on the event loop).
   */
  also?: InTransaction;
  /** Statements that only write (they read no result), run in the same write-only commit. */
  writes?: InTransaction;
}

/** Writes leases inside a transaction of ours (LeaseService.insertMany). */
export interface LeaseWriter {
  /** Resolves to what to call once the transaction `ex` has committed. */
  insertMany(ex: Executor, leases: readonly Lease[]): Promise<() => void>;
}

interface Pending extends IssuedRecord {
  resolve(): void;
  reject(err: unknown): void;
}

/** Most rows one commit carries; more wait for the next one. */
const MAX_BATCH = 2000;

/**
 * Stored issued certificates. Every certificate is durable before its response goes out,
 * but concurrent requests share commits: inserts that arrive while a commit is running
 * are written together by the next one (group commit). On SQLite with synchronous=FULL the
 * commit (fsync) dominates the cost of a row, so this is what lets issuance scale with
 * concurrency; alone, a request still commits at once.
 */
export class CertService {
  readonly #batches: BatchQueue<Pending>;

  constructor(
    private readonly deps: {
      repo: CertRepo;
      clock: Clock;
      leases?: LeaseWriter;
      search?: CertSearchRepo;
      /** Keeps the search's name index caught up after commits (SQLite). */
      searchIndex?: CertSearchIndex;
      /** An issuer reference (`default`, a name or an id) to its id; throws not_found. */
      resolveIssuer?: (mountId: string, ref: string) => Promise<string>;
      /** Group commits that may run at once (UnitsOfWork.batches): one on SQLite, a few on PostgreSQL. */
      commitsInFlight?: number;
    },
  ) {
    this.#batches = deps.repo.units.batches<Pending>((batch) => this.#write(batch), {
      maxBatch: MAX_BATCH,
      inFlight: deps.commitsInFlight ?? 1,
    });
  }

  /**
   * Certificate search: stored certificates of a mount matching every filter given, in
   * (sort, serial) order, one keyset page at a time. `expiringWithinSeconds` narrows the
   * not-after range to [now, now + N].
   */
  async search(
    mountId: string,
    input: Omit<CertSearchQuery, 'issuerId'> & { issuer?: string; expiringWithinSeconds?: number },
  ): Promise<CertSearchPage> {
    const { search, resolveIssuer } = this.deps;
    if (!search) throw new Error('certificate search is not wired');
    const q: CertSearchQuery = { ...input };
    if (input.issuer !== undefined && resolveIssuer) q.issuerId = await resolveIssuer(mountId, input.issuer);
    if (input.expiringWithinSeconds !== undefined) {
      const now = this.deps.clock.now();
      const to = new Date(now.getTime() + input.expiringWithinSeconds * 1000);
      q.notAfterFrom = q.notAfterFrom && q.notAfterFrom > now ? q.notAfterFrom : now;
      q.notAfterTo = q.notAfterTo && q.notAfterTo < to ? q.notAfterTo : to;
    }
    let plan = {};
    if (q.name !== undefined && this.deps.searchIndex) {
      await this.deps.searchIndex.catchUp();
      plan = await this.deps.searchIndex.plan(q.name);
    }
    const hits = await search.search(mountId, q, plan);
    if (hits.length <= q.limit) return { hits };
    const page = hits.slice(0, q.limit);
    const last = page[page.length - 1]!;
    return { hits: page, next: encodeCursor({ value: sortValue(last, q.sort), serial: last.serial }) };
  }

  /**
   * Stores a certificate (and its metadata), resolving once it is committed. `also` runs
   * in the same transaction, so e.g. a lease exists exactly when its certificate does.
   */
  store(cert: IssuedCertificate, metadata?: CertMetadata, also?: InTransaction, writes?: InTransaction): Promise<void> {
    return this.record({ cert, metadata, also, writes });
  }

  /**
   * Writes a certificate, its metadata and its lease in one transaction shared with
   * concurrent requests (the group commit below), resolving once that is committed. A
   * record may lack the certificate (no_store) and still carry its lease.
   */
  record(r: IssuedRecord): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      // A literal of fixed shape rather than a spread: one per issued certificate.
      this.#batches.push({
        cert: r.cert,
        metadata: r.metadata,
        lease: r.lease,
        also: r.also,
        writes: r.writes,
        resolve,
        reject,
      });
    });
  }

  async #write(batch: Pending[]): Promise<void> {
    if (batch.length === 0) return;
    const certs: IssuedCertificate[] = [];
    const meta: CertMetadata[] = [];
    const leases: Lease[] = [];
    let also = false;
    for (const p of batch) {
      if (p.cert) certs.push(p.cert);
      if (p.metadata) meta.push(p.metadata);
      if (p.lease) leases.push(p.lease);
      also ||= p.also !== undefined;
    }
    try {
      if (leases.length > 0 && !this.deps.leases) throw new Error('CertService was built without a lease writer');
      let committed: (() => void) | undefined;
      const work = async (tx: Executor) => {
        await this.deps.repo.insertMany(tx, certs, meta);
        committed = leases.length > 0 ? await this.deps.leases!.insertMany(tx, leases) : undefined;
        for (const p of batch) if (p.writes) await p.writes(tx);
        for (const p of batch) if (p.also) await p.also(tx);
      };
      // Pure data goes to a write-only unit (off the event loop on SQLite); an `also`
      // callback may read, so a batch with one is a read-write unit.
      if (also) await this.deps.repo.readWrite(work);
      else await this.deps.repo.writeOnly(work as (tx: WriteOnlyTx) => Promise<void>);
      committed?.();
      for (const p of batch) p.resolve();
      this.deps.searchIndex?.stored(certs.length);
    } catch (err) {
      if (batch.length === 1) {
        batch[0]!.reject(err);
        return;
      }
      // One bad row must not fail its neighbours: retry each on its own.
      for (const p of batch) await this.#write([p]);
    }
  }

  /** Marks a stored certificate revoked (idempotent). */
  async markRevoked(mountId: string, serial: string): Promise<{ exists: boolean; revokedAt: Date | null }> {
    return this.deps.repo.markRevoked(this.deps.repo.executor, mountId, serial, this.deps.clock.now());
  }

  async listSerials(mountId: string, opts: { after?: string; limit?: number } = {}): Promise<string[]> {
    return this.deps.repo.listSerials(this.deps.repo.executor, mountId, opts);
  }

  async metadata(mountId: string, serial: string): Promise<CertMetadata | undefined> {
    return this.deps.repo.metadata(this.deps.repo.executor, mountId, serial);
  }

  async metadataSerials(mountId: string): Promise<string[]> {
    return this.deps.repo.metadataSerials(this.deps.repo.executor, mountId);
  }

  async purgeMount(mountId: string): Promise<void> {
    await this.deps.repo.deleteAll(this.deps.repo.executor, mountId);
  }

  // Tidy: expired stored certificates and metadata, revocation issuer associations.

  async countExpired(mountId: string, cutoff: Date, revoked: boolean): Promise<number> {
    return this.deps.repo.countExpired(this.deps.repo.executor, mountId, cutoff, revoked);
  }

  /** Deletes up to `limit` certificates (revoked ones or the others) whose NotAfter is before `cutoff`. */
  async deleteExpired(mountId: string, cutoff: Date, revoked: boolean, limit: number): Promise<number> {
    return this.deps.repo.deleteExpired(this.deps.repo.executor, mountId, cutoff, revoked, limit);
  }

  async countExpiredMetadata(mountId: string, cutoff: Date): Promise<number> {
    return this.deps.repo.countExpiredMetadata(this.deps.repo.executor, mountId, cutoff);
  }

  async deleteExpiredMetadata(mountId: string, cutoff: Date, limit: number): Promise<number> {
    return this.deps.repo.deleteExpiredMetadata(this.deps.repo.executor, mountId, cutoff, limit);
  }

  async revokedWithoutIssuer(
    mountId: string,
    issuerIds: readonly string[],
    afterSerial: string,
    limit: number,
  ): Promise<{ serial: string; der: Buffer }[]> {
    return this.deps.repo.revokedWithoutIssuer(this.deps.repo.executor, mountId, issuerIds, afterSerial, limit);
  }

  async setRevocationIssuer(mountId: string, serial: string, issuerId: string | null): Promise<void> {
    await this.deps.repo.setRevocationIssuer(this.deps.repo.executor, mountId, serial, issuerId);
  }

  async countStored(mountId: string): Promise<{ total: number; revoked: number }> {
    return this.deps.repo.countStored(this.deps.repo.executor, mountId);
  }

  /** Waits for queued inserts (shutdown). */
  async drain(): Promise<void> {
    await this.#batches.drain();
  }
}
