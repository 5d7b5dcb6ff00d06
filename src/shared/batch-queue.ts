/**
 * Group commit: items pushed while a write is running are written together by the next
 * one. Alone, an item is written at once (after the current tick, so requests already
 * running can join it); under concurrency the cost of a commit is shared by many items.
 */
export class BatchQueue<T> {
  #queue: T[] = [];
  #flushing = false;

  /** `write` gets at most `maxBatch` items and must settle each of them itself. */
  constructor(
    private readonly write: (batch: T[]) => Promise<void>,
    private readonly maxBatch: number,
  ) {}

  push(item: T): void {
    this.#queue.push(item);
    if (!this.#flushing) this.#flush();
  }

  #flush(): void {
    this.#flushing = true;
    setImmediate(() => {
      const batch = this.#queue.splice(0, this.maxBatch);
      void this.write(batch)
        .catch(() => undefined)
        .finally(() => {
          if (this.#queue.length > 0) this.#flush();
          else this.#flushing = false;
        });
    });
  }

  /** Resolves once nothing is queued or being written (shutdown). */
  async drain(): Promise<void> {
    while (this.#flushing || this.#queue.length > 0) await new Promise((r) => setTimeout(r, 5));
  }
}
