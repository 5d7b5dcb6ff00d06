import type { Clock } from '../shared/clock.js';
import { hashToken, randomBase58 } from '../shared/ids.js';
import type { AdminTokenRepo } from './admin-token-repo.js';

/**
 * The server's initial admin token: a Vault root token under /v1 and a site-admin user
 * token under /api/v2. Created on first start and shown once; only its hash is kept.
 */
export class AdminTokenService {
  constructor(private readonly deps: { repo: AdminTokenRepo; clock: Clock }) {}

  /**
   * Creates the initial admin token when none exists yet. Returns the token only when it
   * was created now; a second start (or a second node) gets undefined.
   */
  async ensureInitial(): Promise<string | undefined> {
    if ((await this.deps.repo.count()) > 0) return undefined;
    const token = `sr.${randomBase58(40)}`;
    const added = await this.deps.repo.insert(hashToken(token), this.deps.clock.now());
    if (!added) return undefined;
    // Another node may have raced us; only the first admin token is printed.
    return (await this.deps.repo.count()) === 1 ? token : undefined;
  }

  /** Registers a fixed token (the --dev root token). */
  async ensureFixed(token: string): Promise<void> {
    await this.deps.repo.insert(hashToken(token), this.deps.clock.now());
  }

  async isAdmin(token: string): Promise<boolean> {
    if (!token) return false;
    return this.deps.repo.exists(hashToken(token));
  }
}
