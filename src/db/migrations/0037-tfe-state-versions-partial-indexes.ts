import { sql } from 'kysely';
import type { Kysely } from 'kysely';

/**
 * Indexes of `tfe_state_versions` that only a few rows need to be in: the upload tokens (set only
 * while a version is pending), the JSON state's hash (absent unless the client sent one) and the
 * soft-deleted versions' purge times. Over every row they cost an index entry per version for
 * nothing; as partial indexes a finalized create writes four fewer. Each query that uses one
 * implies its condition (`x = ?` implies `x IS NOT NULL`; the purge query names the status).
 */
export function tfeStateVersionsPartialIndexesMigration() {
  return {
    async up(db: Kysely<any>): Promise<void> {
      for (const name of [
        'tfe_state_versions_upload_token_hash_key',
        'tfe_state_versions_json_upload_token_hash_key',
        'tfe_state_versions_json_sha256_idx',
        'tfe_state_versions_status_purge_after_idx',
      ])
        await sql`DROP INDEX ${sql.id(name)}`.execute(db);
      await sql`CREATE UNIQUE INDEX tfe_state_versions_upload_token_hash_key
        ON tfe_state_versions (upload_token_hash) WHERE upload_token_hash IS NOT NULL`.execute(db);
      await sql`CREATE UNIQUE INDEX tfe_state_versions_json_upload_token_hash_key
        ON tfe_state_versions (json_upload_token_hash) WHERE json_upload_token_hash IS NOT NULL`.execute(db);
      await sql`CREATE INDEX tfe_state_versions_json_sha256_idx
        ON tfe_state_versions (json_sha256) WHERE json_sha256 IS NOT NULL`.execute(db);
      await sql`CREATE INDEX tfe_state_versions_soft_deleted_idx
        ON tfe_state_versions (purge_after, soft_deleted_at) WHERE status = 'backing_data_soft_deleted'`.execute(db);
    },
  };
}
