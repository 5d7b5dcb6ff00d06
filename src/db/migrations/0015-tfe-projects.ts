import { sql } from 'kysely';
import type { Kysely } from 'kysely';
import { tfeId } from '../../shared/ids.js';

/** The name HCP Terraform gives every organization's first project. */
const DEFAULT_PROJECT_NAME = 'Default Project';

/** What a fixed team access level implies for the custom fields (HCP's read-only values). */
const IMPLIED: Record<string, { runs: string; variables: string; sentinel_mocks: string; run_tasks: number }> = {
  read: { runs: 'read', variables: 'read', sentinel_mocks: 'none', run_tasks: 0 },
  plan: { runs: 'plan', variables: 'read', sentinel_mocks: 'none', run_tasks: 0 },
  write: { runs: 'apply', variables: 'write', sentinel_mocks: 'read', run_tasks: 0 },
  admin: { runs: 'apply', variables: 'write', sentinel_mocks: 'read', run_tasks: 1 },
};

/**
 * Projects, and the team fields that now read back as stored:
 *  - `tfe_projects`; every organization gets its default project (`organizations.default_project_id`)
 *    and every workspace belongs to a project (`workspaces.project_id`), existing ones to
 *    their organization's default project. Names are unique per organization ignoring case.
 *  - Teams keep every documented organization-access flag: `manage_projects` and
 *    `read_projects` as columns (the permission rules read them), the rest as a JSON object.
 *  - Team access keeps HCP's other custom fields (runs, variables, sentinel mocks, run tasks).
 */
export function tfeProjectsMigration() {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .createTable('tfe_projects')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('organization_id', 'text', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('description', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await sql`create unique index tfe_projects_organization_id_name_key on tfe_projects (organization_id, lower(name))`.execute(
        db,
      );
      await db.schema.alterTable('organizations').addColumn('default_project_id', 'text').execute();
      await db.schema
        .alterTable('workspaces')
        .addColumn('project_id', 'text', (c) => c.references('tfe_projects.id'))
        .execute();
      await db.schema.createIndex('workspaces_project_id_idx').on('workspaces').column('project_id').execute();

      const now = new Date().toISOString();
      const orgs: Array<{ id: string }> = await db.selectFrom('organizations').select('id').execute();
      for (const org of orgs) {
        const id = tfeId('prj');
        await db
          .insertInto('tfe_projects')
          .values({
            id,
            organization_id: org.id,
            name: DEFAULT_PROJECT_NAME,
            description: null,
            created_at: now,
            updated_at: now,
          })
          .execute();
        await db.updateTable('organizations').set({ default_project_id: id }).where('id', '=', org.id).execute();
        await db.updateTable('workspaces').set({ project_id: id }).where('organization_id', '=', org.id).execute();
      }

      await db.schema
        .alterTable('tfe_teams')
        .addColumn('manage_projects', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema
        .alterTable('tfe_teams')
        .addColumn('read_projects', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema
        .alterTable('tfe_teams')
        .addColumn('organization_access', 'text', (c) => c.notNull().defaultTo('{}'))
        .execute();
      await db
        .updateTable('tfe_teams')
        .set({ manage_projects: 1, read_projects: 1 })
        .where('is_owners', '=', 1)
        .execute();

      for (const [column, fallback] of [
        ['runs', 'read'],
        ['variables', 'none'],
        ['sentinel_mocks', 'none'],
      ] as const) {
        await db.schema
          .alterTable('tfe_team_workspaces')
          .addColumn(column, 'text', (c) => c.notNull().defaultTo(fallback))
          .execute();
      }
      await db.schema
        .alterTable('tfe_team_workspaces')
        .addColumn('run_tasks', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      for (const [access, fields] of Object.entries(IMPLIED)) {
        await db.updateTable('tfe_team_workspaces').set(fields).where('access', '=', access).execute();
      }
    },
  };
}
