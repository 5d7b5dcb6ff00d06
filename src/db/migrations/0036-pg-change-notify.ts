import { sql } from 'kysely';
import type { Kysely } from 'kysely';
import type { MigrationContext } from '../migrate.js';

/**
 * The tables whose rows in-process caches keep (the current state version, workspace permissions, tokens and
 * teams): on PostgreSQL a statement that changes one notifies `strongroom_changes` with the id of the writing node,
 * delivered when its transaction commits (pg-change-feed.ts, decision 0048). SQLite needs nothing: its
 * `data_version` moves on any commit of another connection.
 */
export const CACHED_TABLES = [
  'organizations',
  'workspaces',
  'tfe_projects',
  'tfe_state_heads',
  'tfe_state_versions',
  'tfe_state_version_outputs',
  'tfe_teams',
  'tfe_team_members',
  'tfe_team_workspaces',
  'tfe_tokens',
  'tfe_users',
  'admin_tokens',
] as const;

export function pgChangeNotifyMigration(ctx: MigrationContext) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      if (ctx.kind !== 'postgres') return;
      await sql`CREATE FUNCTION strongroom_changed() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          PERFORM pg_notify('strongroom_changes', coalesce(current_setting('strongroom.node', true), ''));
          RETURN NULL;
        END $$`.execute(db);
      for (const t of CACHED_TABLES)
        await sql`CREATE TRIGGER ${sql.raw(`${t}_changed`)} AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE
          ON ${sql.table(t)} FOR EACH STATEMENT EXECUTE FUNCTION strongroom_changed()`.execute(db);
    },
  };
}
