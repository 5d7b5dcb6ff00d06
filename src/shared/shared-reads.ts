/**
 * Reads in flight, by key, that callers arriving meanwhile may join: when a cached entry
 * lapses under load, one read of the database serves every request that was waiting for
 * it instead of one read each (the herd).
 *
 * A read is joined only under the same `stamp` it began with: caches pass what moves when
 * they are invalidated (their epoch or generation), so a caller that arrives after a change
 * never gets an answer read before it. A result that `shareable` refuses (a refusal, an
 * answer the cache would not keep) is read again by each caller that joined. A failed read
 * fails every caller that joined it.
 */
export class SharedReads<V> {
  readonly #running = new Map<string, { stamp: unknown; value: Promise<V> }>();

  /** Runs `read`, or joins the read of `key` begun under `stamp` that is still running. */
  run(key: string, stamp: unknown, read: () => Promise<V>, shareable: (value: V) => boolean = () => true): Promise<V> {
    const running = this.#running.get(key);
    if (running && running.stamp === stamp)
      return running.value.then((v) => (shareable(v) ? v : this.#start(key, stamp, read)));
    return this.#start(key, stamp, read);
  }

  /** How many reads are running (for tests). */
  get size(): number {
    return this.#running.size;
  }

  #start(key: string, stamp: unknown, read: () => Promise<V>): Promise<V> {
    const entry = { stamp, value: read() };
    this.#running.set(key, entry);
    const done = () => {
      if (this.#running.get(key) === entry) this.#running.delete(key);
    };
    entry.value.then(done, done);
    return entry.value;
  }
}
