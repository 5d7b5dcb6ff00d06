import type { Kysely } from 'kysely';

/**
 * The current state version of a workspace is now its newest finalized version: a pending
 * version becomes current only once its upload finalizes it. Workspaces whose current
 * version is still pending (an upload that never arrived) get their newest finalized
 * version back as current, or none when there is no such version.
 */
export function tfeCurrentFinalizedMigration() {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db
        .updateTable('tfe_state_heads')
        .set((eb: any) => ({
          current_id: eb
            .selectFrom('tfe_state_versions as v')
            .select('v.id')
            .whereRef('v.workspace_id', '=', 'tfe_state_heads.workspace_id')
            .where('v.status', '=', 'finalized')
            .orderBy('v.seq', 'desc')
            .limit(1),
        }))
        .where('current_id', 'in', db.selectFrom('tfe_state_versions').select('id').where('status', '!=', 'finalized'))
        .execute();
    },
  };
}
