/**
 * A bounded pool of pre-generated RSA keys. RSA key generation takes tens of
 * milliseconds (hundreds for 4096 bits), far more than building and signing the
 * certificate, so `issue` with an RSA role takes a ready key when one is there and the
 * pool refills in the background on the libuv thread pool. Each key is handed out once.
 */
import { generateRsaKey } from './key-generation.js';
import type { GeneratedKey } from './key-generation.js';

export interface RsaKeyPoolOptions {
  /** Key sizes kept ready; other sizes are always generated on demand. Default [2048]. */
  sizes?: readonly number[];
  /** Ready keys kept per size. Default 8. */
  capacity?: number;
  /** Background generations in flight at most (all sizes together). Default 1, so a busy server keeps a core for requests. */
  maxPending?: number;
  /** Key generator; replaced only in tests that need a deterministic or failing generator. */
  generate?: (bits: number) => Promise<GeneratedKey>;
}

export interface RsaKeyPoolStats {
  ready: Record<number, number>;
  pending: number;
  /** Keys handed out from the pool vs generated while the caller waited. */
  hits: number;
  misses: number;
  /** Background generations that failed. */
  failures: number;
}

export class RsaKeyPool {
  readonly #sizes: readonly number[];
  readonly #capacity: number;
  readonly #maxPending: number;
  readonly #generate: (bits: number) => Promise<GeneratedKey>;
  readonly #ready = new Map<number, GeneratedKey[]>();
  readonly #inFlight = new Set<Promise<void>>();
  readonly #pendingBySize = new Map<number, number>();
  #stopped = false;
  #hits = 0;
  #misses = 0;
  #failures = 0;

  constructor(opts: RsaKeyPoolOptions = {}) {
    this.#sizes = opts.sizes ?? [2048];
    this.#capacity = opts.capacity ?? 8;
    this.#maxPending = Math.max(1, opts.maxPending ?? 1);
    this.#generate = opts.generate ?? generateRsaKey;
    for (const s of this.#sizes) {
      this.#ready.set(s, []);
      this.#pendingBySize.set(s, 0);
    }
  }

  /** Starts filling the pool. Calling `take` also (re)starts refilling. */
  start(): void {
    this.#refill();
  }

  /** A fresh RSA key of `bits`: from the pool if one is ready, otherwise generated now. */
  async take(bits: number): Promise<GeneratedKey> {
    const ready = this.#ready.get(bits);
    const key = ready?.shift();
    this.#refill();
    if (key) {
      this.#hits++;
      return key;
    }
    this.#misses++;
    return this.#generate(bits);
  }

  /** Stops refilling, waits for generations in flight and drops the ready keys. */
  async stop(): Promise<void> {
    this.#stopped = true;
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight]);
    for (const list of this.#ready.values()) list.length = 0;
  }

  stats(): RsaKeyPoolStats {
    const ready: Record<number, number> = {};
    for (const [s, list] of this.#ready) ready[s] = list.length;
    return { ready, pending: this.#inFlight.size, hits: this.#hits, misses: this.#misses, failures: this.#failures };
  }

  /** Waits until every pooled size is full or nothing more is being generated (for warm-up and tests). */
  async whenFull(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.race(this.#inFlight);
  }

  #refill(): void {
    if (this.#stopped) return;
    while (this.#inFlight.size < this.#maxPending) {
      // The emptiest size first, counting keys already being generated.
      let best: number | undefined;
      let bestHave = Infinity;
      for (const s of this.#sizes) {
        const have = this.#ready.get(s)!.length + this.#pendingBySize.get(s)!;
        if (have < this.#capacity && have < bestHave) {
          best = s;
          bestHave = have;
        }
      }
      if (best === undefined) return;
      this.#spawn(best);
    }
  }

  #spawn(bits: number): void {
    this.#pendingBySize.set(bits, this.#pendingBySize.get(bits)! + 1);
    let ok = false;
    const p: Promise<void> = this.#generate(bits)
      .then(
        (key) => {
          ok = true;
          if (!this.#stopped) this.#ready.get(bits)!.push(key);
        },
        () => {
          this.#failures++;
        },
      )
      .finally(() => {
        this.#pendingBySize.set(bits, this.#pendingBySize.get(bits)! - 1);
        this.#inFlight.delete(p);
        // After a failure the chain waits for the next take(), so a broken generator cannot spin.
        if (ok) this.#refill();
      });
    this.#inFlight.add(p);
  }
}
