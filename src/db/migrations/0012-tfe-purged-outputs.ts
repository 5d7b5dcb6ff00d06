import type { Kysely } from 'kysely';

/**
 * Permanently deleting a version's backing data now removes its outputs too (their
 * values were read from that content). This removes the outputs that versions purged
 * before this change still had.
 */
export function tfePurgedOutputsMigration() {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db
        .deleteFrom('tfe_state_version_outputs')
        .where(
          'state_version_id',
          'in',
          db.selectFrom('tfe_state_versions').select('id').where('status', '=', 'backing_data_permanently_deleted'),
        )
        .execute();
    },
  };
}
