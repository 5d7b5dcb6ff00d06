import type { Kysely } from 'kysely';

/**
 * `terraform login` (login.v1): authorization codes a signed-in user approved, waiting for
 * the CLI to exchange them (with its PKCE verifier) for a new user token. Only the code's
 * SHA-256 is stored; a code is used once and lives ten minutes.
 */
export function tfeLoginCodesMigration() {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .createTable('tfe_login_codes')
        .addColumn('code_hash', 'text', (c) => c.primaryKey())
        .addColumn('user_id', 'text', (c) => c.notNull())
        .addColumn('username', 'text', (c) => c.notNull())
        .addColumn('client_id', 'text', (c) => c.notNull())
        .addColumn('redirect_uri', 'text', (c) => c.notNull())
        .addColumn('code_challenge', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('tfe_login_codes_expires_idx').on('tfe_login_codes').column('expires_at').execute();
    },
  };
}
