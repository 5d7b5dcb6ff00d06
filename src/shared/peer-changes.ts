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
 * One value read from the database (a mount table, say), trusted for `ttlMs` and only while
 * no other worker has reported a change since it was read.
 */
export class CachedValue<V> {
  #entry: { at: number; epoch: number; value: V } | undefined;
  /** Moves with every forget(): a read begun before a local change is neither kept nor shared after it. */
  #generation = 0;
  /** The read in flight, shared by the callers that arrive while it runs (one read when the bound expires). */
  #loading: { generation: number; epoch: number; value: Promise<V> } | undefined;

  constructor(private readonly opts: { nowMs: () => number; ttlMs: number; peers: PeerChanges }) {}

  /** The value while it may still be trusted, else undefined. */
  now(): V | undefined {
    const e = this.#entry;
    if (!e) return undefined;
    const t = this.opts.nowMs();
    return t - e.at < this.opts.ttlMs && t >= e.at && e.epoch === this.opts.peers.epoch ? e.value : undefined;
  }

  /**
   * Reads the value again and keeps it. Callers that arrive while a read is running share
   * it, unless a change was made through this process or reported by another worker since
   * that read began: they then start one of their own.
   */
  load(read: () => Promise<V>): Promise<V> {
    const epoch = this.opts.peers.epoch;
    const generation = this.#generation;
    const running = this.#loading;
    if (running && running.generation === generation && running.epoch === epoch) return running.value;
    const value = read().then((v) => {
      if (this.#generation === generation) this.#entry = { at: this.opts.nowMs(), epoch, value: v };
      return v;
    });
    const loading = { generation, epoch, value };
    this.#loading = loading;
    const done = () => {
      if (this.#loading === loading) this.#loading = undefined;
    };
    value.then(done, done);
    return value;
  }

  /** After a committed change through this process: read again here, and on every other worker. */
  forget(): void {
    this.#entry = undefined;
    this.#generation++;
    this.opts.peers.changed();
  }
}
