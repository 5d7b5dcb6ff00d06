import type { Clock } from '../../shared/clock.js';
import type { Actor } from './actor.js';

/**
 * How long a verified bearer token is trusted without asking the database again. This is
 * the staleness bound for changes made on another node (or directly in the database): a
 * token revoked there keeps working here for at most this long. Changes made through
 * this node clear the cache at once. See docs/decisions/0003-token-actor-cache.md.
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

  constructor(private readonly deps: { clock: Clock; ttlMs?: number; max?: number }) {
    this.ttlMs = deps.ttlMs ?? TOKEN_ACTOR_TTL_MS;
    this.max = deps.max ?? 10_000;
  }

  get(tokenHash: string): Actor | undefined {
    const e = this.entries.get(tokenHash);
    if (!e) return undefined;
    if (this.deps.clock.now().getTime() >= e.until) {
      this.entries.delete(tokenHash);
      return undefined;
    }
    return e.actor;
  }

  /** Keeps `actor` for the TTL, or until `expiresAt` when that comes first. */
  set(tokenHash: string, actor: Actor, expiresAt: Date | null = null): void {
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
    this.entries.clear();
    for (const l of this.clearListeners) l();
  }

  /** Calls `listener` on every clear(). */
  onClear(listener: () => void): void {
    this.clearListeners.push(listener);
  }
}
