/**
 * At most `limit` tasks at once; the rest wait their turn in arrival order. Used where one
 * kind of request must not take more than a share of a shared resource (database
 * connections) however many of them arrive together.
 */
export class Gate {
  #running = 0;
  readonly #waiting: Array<() => void> = [];

  constructor(private readonly limit: number) {}

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.#running >= this.limit) await new Promise<void>((go) => this.#waiting.push(go));
    else this.#running++;
    try {
      return await task();
    } finally {
      const next = this.#waiting.shift();
      if (next) next();
      else this.#running--;
    }
  }

  /** Tasks waiting for a turn (for metrics and tests). */
  get waiting(): number {
    return this.#waiting.length;
  }
}
