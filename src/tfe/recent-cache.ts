import type { Clock } from '../shared/clock.js';
import type { PeerChanges } from '../shared/peer-changes.js';

export interface RecentCacheOptions {
  clock: Clock;
  /** How long an entry is trusted; Infinity keeps it until it is forgotten or pushed out. */
  ttlMs: number;
  /** Most entries kept; the oldest goes first. */
  max: number;
  /**
   * A counter that moves when another process commits to the database (SQLite's
   * `data_version`); when it has moved since the last look every entry is dropped.
   * Reading it costs a read transaction on the database file, so it is looked at no
   * more than once per EXTERNAL_CHECK_MS.
   */
  externalChanges?: () => number;
  /**
   * How often `externalChanges` is looked at, in ms (default EXTERNAL_CHECK_MS). 0 looks at
   * every read (about 2 µs), so that a commit another process acknowledged is never answered
   * from memory: what several workers on one SQLite file need (decision 0047).
   */
  externalCheckMs?: number;
  /** The other workers of this machine: every entry is dropped when one reports a change (decision 0056). */
  peers?: PeerChanges;
}

/** How soon a commit by another process empties a cache that watches `externalChanges`. */
export const EXTERNAL_CHECK_MS = 100;

interface Entry<V> {
  value: V;
  until: number;
}

/**
 * A small in-process cache of answers read from the database, for the hot reads.
 *
 * Writers forget the keys they change (`delete`, `clear`). A reader that loaded a value
 * may have read it just before such a write, so it stores the value only if nothing was
 * forgotten since it started: it takes `epoch()` before reading and passes it to `set`,
 * which refuses when the epoch moved. A value read before a write therefore never
 * outlives that write's `delete`.
 */
export class RecentCache<V> {
  readonly #entries = new Map<string, Entry<V>>();
  #epoch = 0;
  #seenExternal: number | undefined;
  #nextExternalCheck = 0;
  readonly #peersMoved: (() => boolean) | undefined;

  constructor(private readonly opts: RecentCacheOptions) {
    this.#seenExternal = opts.externalChanges?.();
    this.#peersMoved = opts.peers?.watch();
  }

  get(key: string): V | undefined {
    this.#checkExternal();
    const e = this.#entries.get(key);
    if (!e) return undefined;
    if (e.until !== Infinity && this.opts.clock.now().getTime() >= e.until) {
      this.#entries.delete(key);
      return undefined;
    }
    return e.value;
  }

  /** Taken before reading what will be stored with `set`. */
  epoch(): number {
    this.#checkExternal();
    return this.#epoch;
  }

  /** Stores `value` unless something was forgotten since `since`; `untilMs` shortens the entry's life. */
  set(key: string, value: V, since: number, untilMs = Infinity): boolean {
    if (since !== this.#epoch) return false;
    let until = this.opts.ttlMs === Infinity ? Infinity : this.opts.clock.now().getTime() + this.opts.ttlMs;
    until = Math.min(until, untilMs);
    if (this.#entries.size >= this.opts.max && !this.#entries.has(key))
      this.#entries.delete(this.#entries.keys().next().value as string);
    this.#entries.set(key, { value, until });
    return true;
  }

  delete(key: string): void {
    this.#epoch++;
    this.#entries.delete(key);
  }

  clear(): void {
    this.#epoch++;
    this.#entries.clear();
  }

  get size(): number {
    return this.#entries.size;
  }

  #checkExternal(): void {
    if (this.#peersMoved?.()) this.clear();
    const probe = this.opts.externalChanges;
    if (!probe) return;
    const t = this.opts.externalCheckMs === 0 ? 0 : this.opts.clock.now().getTime();
    if (t < this.#nextExternalCheck) return;
    this.#nextExternalCheck = t + (this.opts.externalCheckMs ?? EXTERNAL_CHECK_MS);
    const seen = probe();
    if (seen !== this.#seenExternal) {
      this.#seenExternal = seen;
      this.clear();
    }
  }
}
