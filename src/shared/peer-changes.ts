import { SharedReads } from './shared-reads.js';

/**
 * Coherence of in-process caches between the workers of one machine (decision 0056).
 *
 * Every cache of shared settings (tokens, policies, mounts, roles, issuers, ACME, audit
 * devices, TFE token actors and permissions) keeps each entry with the `epoch` read before
 * the entry was loaded, and trusts it only while the epoch has not moved. The epoch moves
 * when another worker reports a change. A service that changes such a setting calls
 * `changed()` beside its own local invalidation; the report reaches every other worker
 * through the primary, and each answers once its epoch has moved. The HTTP layer holds a
 * response until `settled()`, so a client that gets an answer to a change finds it in
 * force on every worker with its next request, whichever worker takes it.
 *
 * Outside a cluster nothing is connected: the epoch never moves and `changed()` does
 * nothing. Between nodes on PostgreSQL the caches' own time bounds still apply.
 */
export class PeerChanges {
  #epoch = 0;
  #report: (() => Promise<void>) | undefined;
  readonly #pending = new Set<Promise<void>>();
  readonly #listeners: Array<() => void> = [];

  /** Moves each time another worker reports a change; compare with the value taken before a load. */
  get epoch(): number {
    return this.#epoch;
  }

  /** Connects this process to its peers: `report` resolves once every other worker has taken the change. */
  connect(report: () => Promise<void>): void {
    this.#report = report;
  }

  /** Something other workers may have cached was changed (and committed) through this process. */
  changed(): void {
    if (!this.#report) return;
    const p: Promise<void> = this.#report()
      .catch(() => undefined)
      .finally(() => this.#pending.delete(p));
    this.#pending.add(p);
  }

  /** Another worker changed something: every entry loaded before now is stale. */
  peerChanged(): void {
    this.#epoch++;
    for (const l of this.#listeners) l();
  }

  /**
   * For a cache that drops everything at once: a function that answers true once each time
   * another worker has reported a change since it last answered.
   */
  watch(): () => boolean {
    let seen = this.#epoch;
    return () => {
      if (this.#epoch === seen) return false;
      seen = this.#epoch;
      return true;
    };
  }

  /** Calls `listener` (synchronously, before the report is acknowledged) whenever another worker reports a change. */
  onPeerChange(listener: () => void): void {
    this.#listeners.push(listener);
  }

  /** Undefined when no report is waiting; otherwise resolves when every report made so far was taken. */
  settled(): Promise<unknown> | undefined {
    return this.#pending.size === 0 ? undefined : Promise.all(this.#pending);
  }
}

/**
 * Values read from the database by key (roles, token checks), each trusted until its own
 * time (at most `ttlMs` after its read began) and only while no other worker has reported
 * a change since that read began.
 *
 * The callers of one key that arrive while its read runs share it (one read when an entry
 * lapses under load, not one per waiting request), unless a change was made through this
 * process (`forget`) or reported by another worker since that read began: they then start
 * a read of their own, and a read begun before a local change is never kept. A value that
 * its read decides not to keep is not shared either: each caller reads for itself.
 */
export class CachedEntries<V> {
  readonly #entries = new Map<string, { at: number; until: number; epoch: number; value: V }>();
  /** Moves with every forget(): a read begun before a local change is neither kept nor shared after it. */
  #generation = 0;
  readonly #reads = new SharedReads<{ value: V; kept: boolean }>();

  constructor(private readonly opts: { nowMs: () => number; ttlMs: number; peers: PeerChanges; max?: number }) {}

  /** The value of `key` while it may still be trusted, else undefined. */
  get(key: string): V | undefined {
    const e = this.#entries.get(key);
    if (!e) return undefined;
    const t = this.opts.nowMs();
    if (t < e.until && t >= e.at && e.epoch === this.opts.peers.epoch) return e.value;
    this.#entries.delete(key);
    return undefined;
  }

  /**
   * Reads `key` again, or joins the read of it that is running. `keepUntil` says until when
   * (milliseconds since the epoch; capped at `ttlMs` after the read began) the value may be
   * kept, or undefined for not at all; by default for `ttlMs`. A failed read fails every
   * caller that shared it.
   */
  async load(key: string, read: () => Promise<V>, keepUntil?: (value: V) => number | undefined): Promise<V> {
    const stamp = `${this.#generation}:${this.opts.peers.epoch}`;
    const r = await this.#reads.run(
      key,
      stamp,
      () => this.#read(key, read, keepUntil),
      (r) => r.kept,
    );
    return r.value;
  }

  async #read(
    key: string,
    read: () => Promise<V>,
    keepUntil?: (value: V) => number | undefined,
  ): Promise<{ value: V; kept: boolean }> {
    const epoch = this.opts.peers.epoch;
    const generation = this.#generation;
    const at = this.opts.nowMs();
    const value = await read();
    const bound = at + this.opts.ttlMs;
    const until = keepUntil ? Math.min(bound, keepUntil(value) ?? at) : bound;
    const kept = until > at;
    if (kept && this.#generation === generation) this.#keep(key, { at, until, epoch, value });
    return { value, kept };
  }

  #keep(key: string, entry: { at: number; until: number; epoch: number; value: V }): void {
    this.#entries.delete(key);
    if (this.#entries.size >= (this.opts.max ?? 10_000)) this.#entries.delete(this.#entries.keys().next().value!);
    this.#entries.set(key, entry);
  }

  /**
   * After a committed change through this process: drops the entries that `which` selects
   * (every entry by default), and reads begun before now are neither kept nor shared. Other
   * workers are told only by `forget`.
   */
  forgetHere(which?: (key: string) => boolean): void {
    if (which) {
      for (const k of this.#entries.keys()) if (which(k)) this.#entries.delete(k);
    } else this.#entries.clear();
    this.#generation++;
  }

  /** After a committed change through this process: forgets here, and on every other worker. */
  forget(which?: (key: string) => boolean): void {
    this.forgetHere(which);
    this.opts.peers.changed();
  }
}

/**
 * One value read from the database (a mount table, say), trusted for `ttlMs` and only while
 * no other worker has reported a change since it was read; callers during a read share it
 * (CachedEntries with one key).
 */
export class CachedValue<V> {
  readonly #entries: CachedEntries<V>;

  constructor(opts: { nowMs: () => number; ttlMs: number; peers: PeerChanges }) {
    this.#entries = new CachedEntries<V>({ ...opts, max: 1 });
  }

  /** The value while it may still be trusted, else undefined. */
  now(): V | undefined {
    return this.#entries.get('');
  }

  /** Reads the value again and keeps it, or joins the read that is running (see CachedEntries). */
  load(read: () => Promise<V>): Promise<V> {
    return this.#entries.load('', read);
  }

  /** After a committed change through this process: read again here, and on every other worker. */
  forget(): void {
    this.#entries.forget();
  }
}
