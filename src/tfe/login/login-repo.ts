import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';

export interface StoredLoginCode {
  userId: string;
  username: string;
  clientId: string;
  redirectUri: string;
  codeChallenge: string;
  expiresAt: Date;
}

/** SQL of `terraform login` codes (tfe_login_codes). */
export class LoginRepo {
  constructor(private readonly deps: { db: Kysely<Database> }) {}

  async insert(codeHash: string, c: StoredLoginCode, now: Date): Promise<void> {
    await this.deps.db
      .insertInto('tfe_login_codes')
      .values({
        code_hash: codeHash,
        user_id: c.userId,
        username: c.username,
        client_id: c.clientId,
        redirect_uri: c.redirectUri,
        code_challenge: c.codeChallenge,
        created_at: now.toISOString(),
        expires_at: c.expiresAt.toISOString(),
      })
      .execute();
  }

  /** Removes and returns the code: whoever deletes the row owns it, so a code is used once even on two nodes. */
  async take(codeHash: string): Promise<StoredLoginCode | undefined> {
    const row = await this.deps.db
      .selectFrom('tfe_login_codes')
      .selectAll()
      .where('code_hash', '=', codeHash)
      .executeTakeFirst();
    if (!row) return undefined;
    const r = await this.deps.db.deleteFrom('tfe_login_codes').where('code_hash', '=', codeHash).executeTakeFirst();
    if (Number(r.numDeletedRows) !== 1) return undefined;
    return {
      userId: row.user_id,
      username: row.username,
      clientId: row.client_id,
      redirectUri: row.redirect_uri,
      codeChallenge: row.code_challenge,
      expiresAt: new Date(row.expires_at),
    };
  }

  async deleteExpired(now: Date): Promise<void> {
    await this.deps.db.deleteFrom('tfe_login_codes').where('expires_at', '<', now.toISOString()).execute();
  }
}
