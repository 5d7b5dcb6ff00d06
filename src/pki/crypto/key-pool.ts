/**
 * A bounded pool of pre-generated keys for `issue`. RSA key generation takes tens of
 * milliseconds (hundreds for 4096 bits), far more than building and signing the
 * certificate; an EC key is quick to make but still costs the event loop more than the
 * rest of the request. So `issue` takes a ready key when one is there, and the pool
 * refills in the background on the libuv threadpool: RSA one key per job, EC a batch per
 * job through the native addon (without it EC keys are made when asked for). Each key is
 * handed out once and never stored.
 *
 * A kind is kept ready only once a key of it has been asked for: a server that only signs
 * CSRs, or issues only EC keys, never spends a core making RSA keys nobody takes, and each
 * worker process fills only for the kinds it serves.
 */
import { generateEcKeysBatch, generateKey, generateRsaKey } from './key-generation.js';
import type { GeneratedKey, KeyType } from './key-generation.js';
import type { NativeEcdsa } from './native-ecdsa.js';

/** One kind of key the pool keeps ready. */
export interface PooledKind {
  type: KeyType;
  bits: number;
  /** Ready keys kept at most. */
  capacity: number;
}

export interface KeyPoolOptions {
  /** Kinds kept ready; others are always generated on demand. Default: RSA 2048, 8 keys. */
  kinds?: readonly PooledKind[];
  /**
   * Background generation jobs in flight at most (all kinds together). Default 1, so a busy server keeps a core for
   * requests.
   */
  maxPending?: number;
  /**
   * Makes keys for the pool, one or more per call; null when this kind cannot be made in
   * the background (they are then generated on demand). Replaced only in tests.
   */
  generate?: (type: KeyType, bits: number) => Promise<GeneratedKey[]> | null;
  /** The native addon that makes EC batches (null: EC keys are made when asked for). */
  native?: NativeEcdsa | null;
}

export interface KeyPoolStats {
  /** Ready keys by kind, e.g. `rsa-2048`. */
  ready: Record<string, number>;
  pending: number;
  /** Keys handed out from the pool vs generated while the caller waited. */
  hits: number;
  misses: number;
  /** Background generations that failed. */
  failures: number;
}

/** EC keys per background job. */
const EC_BATCH = 32;

function defaultGenerate(native: NativeEcdsa | null, type: KeyType, bits: number): Promise<GeneratedKey[]> | null {
  if (type === 'rsa') return generateRsaKey(bits).then((k) => [k]);
  if (type === 'ec') {
    const batch = generateEcKeysBatch(bits, EC_BATCH, native);
    return batch ? batch.then((keys) => keys ?? Promise.reject(new Error('native EC key generation failed'))) : null;
  }
  return null;
}

const kindKey = (type: KeyType, bits: number): string => `${type}-${bits}`;

export class KeyPool {
  readonly #kinds: readonly (PooledKind & { key: string })[];
  readonly #maxPending: number;
  readonly #generate: (type: KeyType, bits: number) => Promise<GeneratedKey[]> | null;
  readonly #ready = new Map<string, GeneratedKey[]>();
  readonly #pending = new Map<string, number>();
  /** Kinds that cannot be made in the background here (the generator said null). */
  readonly #unpoolable = new Set<string>();
  /** Kinds a key has been asked for (only these are kept ready). */
  readonly #wanted = new Set<string>();
  readonly #inFlight = new Set<Promise<void>>();
  #stopped = false;
  #hits = 0;
  #misses = 0;
  #failures = 0;

  constructor(opts: KeyPoolOptions = {}) {
    this.#kinds = (opts.kinds ?? [{ type: 'rsa', bits: 2048, capacity: 8 }]).map((k) => ({
      ...k,
      key: kindKey(k.type, k.bits),
    }));
    this.#maxPending = Math.max(1, opts.maxPending ?? 1);
    const native = opts.native ?? null;
    this.#generate = opts.generate ?? ((type, bits) => defaultGenerate(native, type, bits));
    for (const k of this.#kinds) {
      this.#ready.set(k.key, []);
      this.#pending.set(k.key, 0);
    }
  }

  /**
   * Starts filling the kinds given (e.g. `[{ type: 'rsa', bits: 2048 }]`), or none: a kind is
   * otherwise filled from its first `take` on. Calling `take` also (re)starts refilling.
   */
  start(kinds: readonly { type: KeyType; bits: number }[] = []): void {
    for (const k of kinds) this.#want(kindKey(k.type, k.bits));
    this.#refill();
  }

  /** A fresh key: from the pool if one is ready, otherwise generated now. */
  async take(type: KeyType, bits: number): Promise<GeneratedKey> {
    const kind = kindKey(type, bits);
    const ready = this.#ready.get(kind);
    const key = ready?.shift();
    this.#want(kind);
    this.#refill();
    if (key) {
      this.#hits++;
      return key;
    }
    this.#misses++;
    return generateKey(type, bits);
  }

  /** Stops refilling, waits for generations in flight and drops the ready keys. */
  async stop(): Promise<void> {
    this.#stopped = true;
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight]);
    for (const list of this.#ready.values()) list.length = 0;
  }

  stats(): KeyPoolStats {
    const ready: Record<string, number> = {};
    for (const [k, list] of this.#ready) ready[k] = list.length;
    return { ready, pending: this.#inFlight.size, hits: this.#hits, misses: this.#misses, failures: this.#failures };
  }

  /** Waits until every pooled kind is full or nothing more is being generated (for warm-up and tests). */
  async whenFull(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.race(this.#inFlight);
  }

  #want(kind: string): void {
    if (this.#ready.has(kind)) this.#wanted.add(kind);
  }

  #refill(): void {
    if (this.#stopped) return;
    while (this.#inFlight.size < this.#maxPending) {
      // The emptiest kind first, relative to its capacity, counting jobs already running.
      let best: (PooledKind & { key: string }) | undefined;
      let bestFill = Infinity;
      for (const k of this.#kinds) {
        if (!this.#wanted.has(k.key) || this.#unpoolable.has(k.key) || this.#pending.get(k.key)! > 0) continue;
        const fill = this.#ready.get(k.key)!.length / k.capacity;
        if (fill < 1 && fill < bestFill) {
          best = k;
          bestFill = fill;
        }
      }
      if (best === undefined) return;
      this.#spawn(best);
    }
  }

  #spawn(kind: PooledKind & { key: string }): void {
    const job = this.#generate(kind.type, kind.bits);
    if (job === null) {
      this.#unpoolable.add(kind.key);
      return;
    }
    this.#pending.set(kind.key, this.#pending.get(kind.key)! + 1);
    let ok = false;
    const p: Promise<void> = job
      .then(
        (keys) => {
          ok = true;
          const ready = this.#ready.get(kind.key)!;
          if (!this.#stopped) ready.push(...keys.slice(0, Math.max(0, kind.capacity - ready.length)));
        },
        () => {
          this.#failures++;
        },
      )
      .finally(() => {
        this.#pending.set(kind.key, this.#pending.get(kind.key)! - 1);
        this.#inFlight.delete(p);
        // After a failure the chain waits for the next take(), so a broken generator cannot spin.
        if (ok) this.#refill();
      });
    this.#inFlight.add(p);
  }
}
