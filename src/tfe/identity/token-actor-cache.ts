import type { Clock } from '../../shared/clock.js';
import { PeerChanges } from '../../shared/peer-changes.js';
import { SharedReads } from '../../shared/shared-reads.js';
import type { Actor } from './actor.js';

/**
 * How long a verified bearer token is trusted without asking the database again. This is
 * the staleness bound for changes made on another node (or directly in the database): a
 * token revoked there keeps working here for at most this long. Changes made through
 * this node clear the cache at once, here and on the other workers of this machine
 * (decision 0056). See docs/decisions/0003-token-actor-cache.md.
 */
export const TOKEN_ACTOR_TTL_MS = 2_000;

interface Entry {
  actor: Actor;
  until: number;
}

/**
 * Token hash → actor, for a couple of seconds. Every /api/v2 request authenticates, and
 * the lookup (hash, token row, owner row, admin-token check) was most of the cost of
 * the hot reads. Only successful lookups are kept, so a token created anywhere works at
 * once; an entry never outlives the token's own expiry.
 */
export class TokenActorCache {
  private readonly entries = new Map<string, Entry>();
  private readonly clearListeners: Array<() => void> = [];
  private readonly ttlMs: number;
  private readonly max: number;
  readonly #peers: PeerChanges;
  readonly #peersMoved: () => boolean;
  /** Moves with every clear, here or reported by another worker: what was read before it is not kept. */
  #generation = 0;
  /** Token lookups in flight, by token hash (see lookUp). */
  readonly #lookups = new SharedReads<Actor | null>();

  constructor(private readonly deps: { clock: Clock; ttlMs?: number; max?: number; peers?: PeerChanges }) {
    this.ttlMs = deps.ttlMs ?? TOKEN_ACTOR_TTL_MS;
    this.max = deps.max ?? 10_000;
    this.#peers = deps.peers ?? new PeerChanges();
    this.#peersMoved = this.#peers.watch();
  }

  /**
   * Taken before reading what `set` will keep: a clear meanwhile (a change through this
   * process, or one reported by another worker) voids it.
   */
  epoch(): number {
    this.#syncPeers();
    return this.#generation;
  }

  get(tokenHash: string): Actor | undefined {
    this.#syncPeers();
    const e = this.entries.get(tokenHash);
    if (!e) return undefined;
    if (this.deps.clock.now().getTime() >= e.until) {
      this.entries.delete(tokenHash);
      return undefined;
    }
    return e.actor;
  }

  /**
   * Runs `read` (given the epoch to pass to `set`), or joins the read of this token that is
   * running: requests that arrive during a lookup share it (one lookup when an entry lapses
   * under load), unless the cache was cleared since it began. Only an actor is shared; a
   * refusal is looked up again by each request that waited for it.
   */
  lookUp(tokenHash: string, read: (since: number) => Promise<Actor | null>): Promise<Actor | null> {
    const since = this.epoch();
    return this.#lookups.run(
      tokenHash,
      since,
      () => read(since),
      (actor) => actor !== null,
    );
  }

  /**
   * Keeps `actor` for the TTL, or until `expiresAt` when that comes first, unless another
   * worker reported a change since `since` (taken with `epoch()` before the read).
   */
  set(tokenHash: string, actor: Actor, since: number, expiresAt: Date | null = null): void {
    this.#syncPeers();
    if (since !== this.#generation) return;
    let until = this.deps.clock.now().getTime() + this.ttlMs;
    if (expiresAt) until = Math.min(until, expiresAt.getTime());
    // Oldest first out: a flood of distinct tokens cannot grow the map without bound.
    if (this.entries.size >= this.max && !this.entries.has(tokenHash))
      this.entries.delete(this.entries.keys().next().value as string);
    this.entries.set(tokenHash, { actor, until });
  }

  /**
   * Forgets every entry: called after anything that can revoke a token, change whom it
   * stands for or what its teams may do. Listeners (other permission caches) are told too.
   */
  clear(): void {
    this.#dropAll();
    this.#peers.changed();
  }

  #dropAll(): void {
    this.#generation++;
    this.entries.clear();
    for (const l of this.clearListeners) l();
  }

  /** Another worker reported a change: everything here is dropped, and the listeners are told. */
  #syncPeers(): void {
    if (this.#peersMoved()) this.#dropAll();
  }

  /** Calls `listener` on every clear(). */
  onClear(listener: () => void): void {
    this.clearListeners.push(listener);
  }
}
