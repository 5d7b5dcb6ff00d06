import { sql } from 'kysely';
import type { Kysely } from 'kysely';
import type { MigrationContext } from '../migrate.js';

/**
 * Tables of the Terraform state service's identity, organization and workspace layer.
 * Booleans are 0/1 integers, instants ISO strings, list attributes JSON text.
 */
export function tfeMigration(_ctx: MigrationContext) {
  return {
    // Typed loosely on purpose: a migration must not depend on today's table types.
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .createTable('tfe_users')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('username', 'text', (c) => c.notNull())
        .addColumn('email', 'text', (c) => c.notNull())
        .addColumn('site_admin', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('tfe_users_username_key').on('tfe_users').column('username').unique().execute();

      await db.schema
        .createTable('organizations')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('email', 'text', (c) => c.notNull())
        .addColumn('session_timeout', 'integer')
        .addColumn('session_remember', 'integer')
        .addColumn('collaborator_auth_policy', 'text', (c) => c.notNull())
        .addColumn('cost_estimation_enabled', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('allow_force_delete_workspaces', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('organizations_name_key').on('organizations').column('name').unique().execute();

      await db.schema
        .createTable('tfe_teams')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('visibility', 'text', (c) => c.notNull())
        .addColumn('is_owners', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('manage_workspaces', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('read_workspaces', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('tfe_teams_organization_id_name_key')
        .on('tfe_teams')
        .columns(['organization_id', 'name'])
        .unique()
        .execute();

      await db.schema
        .createTable('tfe_team_members')
        .addColumn('team_id', 'text', (c) => c.notNull().references('tfe_teams.id').onDelete('cascade'))
        .addColumn('user_id', 'text', (c) => c.notNull().references('tfe_users.id').onDelete('cascade'))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('tfe_team_members_pkey', ['team_id', 'user_id'])
        .execute();
      await db.schema.createIndex('tfe_team_members_user_id_idx').on('tfe_team_members').column('user_id').execute();

      await db.schema
        .createTable('workspaces')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('description', 'text')
        .addColumn('execution_mode', 'text', (c) => c.notNull())
        .addColumn('terraform_version', 'text', (c) => c.notNull())
        .addColumn('auto_apply', 'integer', (c) => c.notNull())
        .addColumn('allow_destroy_plan', 'integer', (c) => c.notNull())
        .addColumn('file_triggers_enabled', 'integer', (c) => c.notNull())
        .addColumn('queue_all_runs', 'integer', (c) => c.notNull())
        .addColumn('speculative_enabled', 'integer', (c) => c.notNull())
        .addColumn('global_remote_state', 'integer', (c) => c.notNull())
        .addColumn('assessments_enabled', 'integer', (c) => c.notNull())
        .addColumn('working_directory', 'text', (c) => c.notNull())
        .addColumn('trigger_prefixes', 'text', (c) => c.notNull())
        .addColumn('trigger_patterns', 'text', (c) => c.notNull())
        .addColumn('tag_names', 'text', (c) => c.notNull())
        .addColumn('source_name', 'text')
        .addColumn('source_url', 'text')
        .addColumn('locked_by_kind', 'text')
        .addColumn('locked_by_id', 'text')
        .addColumn('locked_reason', 'text')
        .addColumn('locked_at', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('workspaces_organization_id_name_key')
        .on('workspaces')
        .columns(['organization_id', 'name'])
        .unique()
        .execute();

      await db.schema
        .createTable('tfe_team_workspaces')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('team_id', 'text', (c) => c.notNull().references('tfe_teams.id').onDelete('cascade'))
        .addColumn('workspace_id', 'text', (c) => c.notNull().references('workspaces.id').onDelete('cascade'))
        .addColumn('access', 'text', (c) => c.notNull())
        .addColumn('state_versions', 'text', (c) => c.notNull())
        .addColumn('workspace_locking', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('tfe_team_workspaces_team_id_workspace_id_key')
        .on('tfe_team_workspaces')
        .columns(['team_id', 'workspace_id'])
        .unique()
        .execute();
      await db.schema
        .createIndex('tfe_team_workspaces_workspace_id_idx')
        .on('tfe_team_workspaces')
        .column('workspace_id')
        .execute();

      await db.schema
        .createTable('tfe_tokens')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('token_hash', 'text', (c) => c.notNull())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('user_id', 'text', (c) => c.references('tfe_users.id').onDelete('cascade'))
        .addColumn('team_id', 'text', (c) => c.references('tfe_teams.id').onDelete('cascade'))
        .addColumn('organization_id', 'text', (c) => c.references('organizations.id').onDelete('cascade'))
        // The one legacy team token (/teams/:id/authentication-token) or the org token.
        .addColumn('singleton', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('description', 'text')
        .addColumn('created_by_id', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('last_used_at', 'text')
        .addColumn('expired_at', 'text')
        .execute();
      await db.schema.createIndex('tfe_tokens_token_hash_key').on('tfe_tokens').column('token_hash').unique().execute();
      await db.schema.createIndex('tfe_tokens_user_id_idx').on('tfe_tokens').column('user_id').execute();
      await db.schema.createIndex('tfe_tokens_team_id_idx').on('tfe_tokens').column('team_id').execute();
      await db.schema
        .createIndex('tfe_tokens_organization_id_idx')
        .on('tfe_tokens')
        .column('organization_id')
        .execute();
      // At most one legacy team token and one organization token, even when two nodes regenerate at once.
      await db.schema
        .createIndex('tfe_tokens_team_id_key')
        .on('tfe_tokens')
        .column('team_id')
        .unique()
        .where(sql.ref('singleton'), '=', 1)
        .execute();
      await db.schema
        .createIndex('tfe_tokens_organization_id_key')
        .on('tfe_tokens')
        .column('organization_id')
        .unique()
        .where(sql.ref('singleton'), '=', 1)
        .execute();
    },
  };
}
