/**
 * Group commit: items pushed while a write is running are written together by the next
 * one. Alone, an item is written at once (after the current tick, so requests already
 * running can join it); under concurrency the cost of a commit is shared by many items.
 * Writes reach it through the unit-of-work API (UnitsOfWork.batches and .group in
 * db/unit-of-work.ts); OCSP groups its status reads with it directly.
 *
 * `inFlight` writes may run at once (default one: SQLite has one writer). PostgreSQL
 * overlaps concurrent commits itself, so there a few writes in flight keep the event loop
 * busy while each waits for its commit.
 */
export class BatchQueue<T> {
  #queue: T[] = [];
  #running = 0;
  #scheduled = false;

  /** `write` gets at most `maxBatch` items and must settle each of them itself. */
  constructor(
    private readonly write: (batch: T[]) => Promise<void>,
    private readonly maxBatch: number,
    private readonly inFlight = 1,
  ) {}

  push(item: T): void {
    this.#queue.push(item);
    this.#pump();
  }

  #pump(): void {
    if (this.#scheduled || this.#running >= this.inFlight || this.#queue.length === 0) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      while (this.#running < this.inFlight && this.#queue.length > 0) {
        const batch = this.#queue.splice(0, this.maxBatch);
        this.#running++;
        void this.write(batch)
          .catch(() => undefined)
          .finally(() => {
            this.#running--;
            this.#pump();
          });
      }
    });
  }

  /** Resolves once nothing is queued or being written (shutdown). */
  async drain(): Promise<void> {
    while (this.#running > 0 || this.#queue.length > 0) await new Promise((r) => setTimeout(r, 5));
  }
}
