import type { Clock } from '../shared/clock.js';
import { invalid, notFound } from '../shared/errors.js';
import { hashToken, randomBase58 } from '../shared/ids.js';
import type { AdminTokenRepo } from './admin-token-repo.js';

/** Length of the id an admin token is listed and revoked by: the start of its hash, never the token. */
const ID_LENGTH = 12;
const MIN_ID_LENGTH = 8;

/** An admin token as it is listed: an id (the start of its hash) and when it was made. */
export interface AdminTokenSummary {
  id: string;
  createdAt: Date;
}

/**
 * Admin tokens: each is a Vault root token under /v1 and a site-admin user token under
 * /api/v2. The initial one is made on the first start that serves and printed once; more
 * are made on the server's machine (`strongroom admin-token create`). Only hashes are kept.
 */
export class AdminTokenService {
  /**
   * The initial token between being shown and being committed: a client that read it from the
   * banner and uses it at once is answered after the commit, not refused before it.
   */
  #shown: { hash: string; committed: Promise<unknown> } | undefined;

  constructor(private readonly deps: { repo: AdminTokenRepo; clock: Clock }) {}

  /**
   * Makes the initial admin token when none exists yet, and calls `show` once either way:
   * with the token when it was made now, else with undefined (a later start, another node,
   * or a token made with `strongroom admin-token create`). The token stays pending until
   * `show` has returned: it is committed only after that, in a transaction that other
   * nodes starting at the same moment wait for, so exactly one start shows it, and a start
   * that dies before showing it leaves the next one to make and show another. If the commit
   * fails after `show`, this rejects: the token shown is not valid.
   */
  async ensureInitial(show: (token: string | undefined) => void): Promise<void> {
    let committed!: () => void;
    const done = new Promise<void>((resolve) => (committed = resolve));
    try {
      await this.deps.repo.exclusively(async (repo) => {
        if ((await repo.count()) > 0) return show(undefined);
        const token = newAdminToken();
        const hash = hashToken(token);
        await repo.insert(hash, this.deps.clock.now());
        this.#shown = { hash, committed: done };
        show(token);
      });
    } finally {
      committed();
      this.#shown = undefined;
    }
  }

  /** Makes one more admin token (the recovery path when the printed one is lost); returned once, kept as a hash. */
  async create(): Promise<{ token: string; id: string }> {
    const token = newAdminToken();
    const hash = hashToken(token);
    await this.deps.repo.insert(hash, this.deps.clock.now());
    return { token, id: hash.slice(0, ID_LENGTH) };
  }

  async list(): Promise<AdminTokenSummary[]> {
    return (await this.deps.repo.list()).map((t) => ({ id: t.tokenHash.slice(0, ID_LENGTH), createdAt: t.createdAt }));
  }

  /**
   * Revokes one admin token, named by the token itself or by its listed id. Returns the id.
   * Running servers stop honouring it once their few-second token caches lapse.
   */
  async revoke(tokenOrId: string): Promise<string> {
    const all = await this.deps.repo.list();
    const byToken = hashToken(tokenOrId);
    let hit = all.find((t) => t.tokenHash === byToken);
    if (!hit && /^[0-9a-f]+$/.test(tokenOrId)) {
      if (tokenOrId.length < MIN_ID_LENGTH)
        throw invalid(`an admin token id has at least ${MIN_ID_LENGTH} hex digits (see admin-token list)`);
      const matches = all.filter((t) => t.tokenHash.startsWith(tokenOrId));
      if (matches.length > 1) throw invalid(`"${tokenOrId}" names more than one admin token; give more digits`);
      hit = matches[0];
    }
    if (!hit) throw notFound('no such admin token (give the token itself or an id from admin-token list)');
    await this.deps.repo.delete(hit.tokenHash);
    return hit.tokenHash.slice(0, ID_LENGTH);
  }

  /** Registers a fixed token (the --dev root token). */
  async ensureFixed(token: string): Promise<void> {
    await this.deps.repo.insert(hashToken(token), this.deps.clock.now());
  }

  async isAdmin(token: string): Promise<boolean> {
    if (!token) return false;
    const hash = hashToken(token);
    const shown = this.#shown;
    if (shown && shown.hash === hash) await shown.committed;
    return this.deps.repo.exists(hash);
  }
}

function newAdminToken(): string {
  return `sr.${randomBase58(40)}`;
}
