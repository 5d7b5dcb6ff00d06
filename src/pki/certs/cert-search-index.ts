/**
 * Keeps the certificate search's trigram index (SQLite) caught up with stored certificates,
 * outside the commits that store them (decision 0042): a certificate is indexed in a batch
 * shortly after its commit, and a name search first indexes whatever is still pending, so
 * a search never misses a stored certificate. Also keeps the sample of names that tells
 * which trigrams of a substring are rare (planName), on both databases.
 */
import type { Logger } from 'pino';
import { pgTrigramUsable, planName } from './cert-search.js';
import type { NamePlan } from './cert-search.js';
import type { CertSearchRepo } from './cert-search-repo.js';

/** Rowids indexed per transaction: short enough not to hold the writer up for long. */
const SPAN = 2048;
/** Stored certificates pending before a batch runs at once rather than after DELAY_MS. */
const EAGER = 1024;
const DELAY_MS = 250;
/** Names sampled, and how often the sample is taken again. */
const SAMPLE_SIZE = 2000;
const SAMPLE_TTL_MS = 5 * 60_000;

export class CertSearchIndex {
  #pending = 0;
  #timer: NodeJS.Timeout | undefined;
  #chain: Promise<void> = Promise.resolve();
  #closed = false;
  #sample: { share: Map<string, number>; takenAt: number; rows: number } | undefined;
  #sampling: Promise<void> | undefined;

  constructor(private readonly deps: { repo: CertSearchRepo; log?: Logger; now?: () => number }) {}

  /** Starts indexing whatever an earlier run or an import left pending. */
  start(): void {
    if (this.deps.repo.deferredIndex) this.#schedule(0);
  }

  /** Certificates were committed: index them soon, in one batch with their neighbours. */
  stored(count: number): void {
    if (!this.deps.repo.deferredIndex || this.#closed || count === 0) return;
    this.#pending += count;
    this.#schedule(this.#pending >= EAGER ? 0 : DELAY_MS);
  }

  /** Indexes everything stored so far; resolves when a search would find it. */
  catchUp(): Promise<void> {
    if (!this.deps.repo.deferredIndex) return Promise.resolve();
    // One drain at a time; a caller that arrives during one runs another after it.
    const run = this.#chain.catch(() => undefined).then(() => this.#drain());
    this.#chain = run;
    return run;
  }

  /** How to ask the trigram index for a name substring (FTS5 on SQLite, pg_trgm on PostgreSQL). */
  async plan(name: string): Promise<NamePlan> {
    if (name.length < 3) return {};
    const now = (this.deps.now ?? Date.now)();
    if (!this.#sample || now - this.#sample.takenAt > SAMPLE_TTL_MS) {
      this.#sampling ??= this.#takeSample(now).finally(() => (this.#sampling = undefined));
      // Only the first search waits for a sample; later ones use the old one while it is taken again.
      if (this.#sample) this.#sampling.catch((err: unknown) => this.deps.log?.error({ err }, 'sampling names failed'));
      else await this.#sampling;
    }
    const { share, rows } = this.#sample!;
    // With no sample (an empty store) every trigram counts as rare: the index is always asked.
    const usable = this.deps.repo.deferredIndex ? undefined : pgTrigramUsable;
    return planName(name, (t) => (rows === 0 ? 0 : (share.get(t) ?? 0) / rows), usable);
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    await this.#chain.catch(() => undefined);
  }

  #schedule(delayMs: number): void {
    if (this.#closed) return;
    if (this.#timer && delayMs > 0) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.catchUp().catch((err: unknown) => this.deps.log?.error({ err }, 'certificate search indexing failed'));
    }, delayMs);
    this.#timer.unref();
  }

  async #drain(): Promise<void> {
    this.#pending = 0;
    while (!this.#closed && (await this.deps.repo.unindexedRows()) > 0) await this.deps.repo.indexNext(SPAN);
  }

  async #takeSample(now: number): Promise<void> {
    const names = await this.deps.repo.sampleNames(SAMPLE_SIZE);
    const share = new Map<string, number>();
    for (const n of names) {
      const seen = new Set<string>();
      for (let i = 0; i + 3 <= n.length; i++) seen.add(n.slice(i, i + 3));
      for (const t of seen) share.set(t, (share.get(t) ?? 0) + 1);
    }
    this.#sample = { share, takenAt: now, rows: names.length };
  }
}
