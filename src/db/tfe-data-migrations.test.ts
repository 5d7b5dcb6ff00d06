import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Kysely } from 'kysely';
import { createDatabaseUrl, dbKinds } from '../../test/support/test-db.js';
import type { DatabaseKind } from './database.js';
import { openDatabase } from './database.js';
import type { Db } from './database.js';
import { migrateTo, migrateToLatest } from './migrate.js';

const AT = '2026-01-01T00:00:00.000Z';

/** Rows written before a migration have that day's columns, not today's: typed loosely. */
type Loose = Kysely<Record<string, Record<string, unknown>>>;

/** A state version row in the shape every migration since 0004 accepts. */
function versionRow(id: string, workspaceId: string, seq: number, status: string) {
  return {
    id,
    workspace_id: workspaceId,
    seq,
    serial: seq,
    md5: '0'.repeat(32),
    status,
    state_sha256: status === 'finalized' ? 'a'.repeat(64) : null,
    resources_processed: 0,
    created_at: AT,
  };
}

/** A workspace row as migration 0002 created the table. */
function workspaceRow(id: string, organizationId: string) {
  return {
    id,
    organization_id: organizationId,
    name: id,
    execution_mode: 'local',
    terraform_version: 'latest',
    auto_apply: 0,
    allow_destroy_plan: 1,
    file_triggers_enabled: 1,
    queue_all_runs: 0,
    speculative_enabled: 1,
    global_remote_state: 0,
    assessments_enabled: 0,
    working_directory: '',
    trigger_prefixes: '[]',
    trigger_patterns: '[]',
    tag_names: '[]',
    created_at: AT,
    updated_at: AT,
  };
}

/** A fresh database migrated up to `upTo`, handed to `fn`, then dropped. */
async function startingAt(kind: DatabaseKind, upTo: string, fn: (db: Db) => Promise<void>): Promise<void> {
  const url = await createDatabaseUrl(kind);
  const db = openDatabase({ url: url.url, poolSize: 2 });
  try {
    await migrateTo(db, upTo);
    await fn(db);
  } finally {
    await db.destroy();
    await url.drop();
  }
}

/**
 * Data migrations of the state service, each run against rows written in the schema it
 * starts from, on both databases.
 */
for (const kind of dbKinds()) {
  describe(`data migrations of the state service [${kind}]`, () => {
    it('0014: a workspace whose current version is pending gets its newest finalized version back', async () => {
      await startingAt(kind, '0013-pki-lease-token-index', async (db) => {
        const k = db.kysely;
        // ws-a: finalized 1, 2, then pending 3 (current); ws-b: only a pending version (current);
        // ws-c: finalized 1 current, untouched.
        await k
          .insertInto('tfe_state_versions')
          .values([
            versionRow('sv-a1', 'ws-a', 1, 'finalized'),
            versionRow('sv-a2', 'ws-a', 2, 'finalized'),
            versionRow('sv-a3', 'ws-a', 3, 'pending'),
            versionRow('sv-b1', 'ws-b', 1, 'pending'),
            versionRow('sv-c1', 'ws-c', 1, 'finalized'),
          ])
          .execute();
        await k
          .insertInto('tfe_state_heads')
          .values([
            { workspace_id: 'ws-a', current_id: 'sv-a3', head_seq: 3, version_count: 3 },
            { workspace_id: 'ws-b', current_id: 'sv-b1', head_seq: 1, version_count: 1 },
            { workspace_id: 'ws-c', current_id: 'sv-c1', head_seq: 1, version_count: 1 },
          ])
          .execute();
        await migrateToLatest(db);
        const heads = await k.selectFrom('tfe_state_heads').select(['workspace_id', 'current_id']).execute();
        assert.deepEqual(Object.fromEntries(heads.map((h) => [h.workspace_id, h.current_id])), {
          'ws-a': 'sv-a2',
          'ws-b': null,
          'ws-c': 'sv-c1',
        });
      });
    });

    it('0015: each organization gets a default project with its workspaces; teams, grants their fields', async () => {
      await startingAt(kind, '0014-tfe-current-finalized', async (db) => {
        const k = db.kysely;
        const old = k as unknown as Loose;
        for (const id of ['org-one', 'org-two', 'org-empty']) {
          await k
            .insertInto('organizations')
            .values({
              id,
              name: id,
              email: `${id}@example.com`,
              session_timeout: null,
              session_remember: null,
              collaborator_auth_policy: 'password',
              cost_estimation_enabled: 0,
              allow_force_delete_workspaces: 0,
              created_at: AT,
              updated_at: AT,
            })
            .execute();
        }
        await k
          .insertInto('workspaces')
          .values([workspaceRow('ws-1', 'org-one'), workspaceRow('ws-2', 'org-one'), workspaceRow('ws-3', 'org-two')])
          .execute();
        const team = (id: string, isOwners: number) => ({
          id,
          organization_id: 'org-one',
          name: id,
          visibility: 'secret',
          is_owners: isOwners,
          manage_workspaces: isOwners,
          read_workspaces: isOwners,
          created_at: AT,
        });
        await old
          .insertInto('tfe_teams')
          .values([team('owners', 1), team('devs', 0)])
          .execute();
        const grant = (id: string, access: string, sv: string) => ({
          id,
          team_id: 'devs',
          workspace_id: id === 'tws-admin' ? 'ws-1' : 'ws-2',
          access,
          state_versions: sv,
          workspace_locking: 1,
          created_at: AT,
        });
        await old
          .insertInto('tfe_team_workspaces')
          .values([grant('tws-admin', 'admin', 'write'), grant('tws-custom', 'custom', 'read')])
          .execute();

        await migrateToLatest(db);

        const orgs = await k.selectFrom('organizations').select(['id', 'default_project_id']).execute();
        const projects = await k.selectFrom('tfe_projects').selectAll().execute();
        assert.equal(projects.length, 3, 'one default project per organization');
        for (const o of orgs) {
          const p = projects.find((x) => x.id === o.default_project_id);
          assert.ok(p, `${o.id} has its default project`);
          assert.match(p.id, /^prj-[1-9A-HJ-NP-Za-km-z]{16}$/);
          assert.equal(p.organization_id, o.id);
          assert.equal(p.name, 'Default Project');
        }
        const defaultOf = new Map(orgs.map((o) => [o.id, o.default_project_id]));
        for (const w of await k.selectFrom('workspaces').select(['organization_id', 'project_id']).execute())
          assert.equal(w.project_id, defaultOf.get(w.organization_id));

        const teams = await k
          .selectFrom('tfe_teams')
          .select(['id', 'manage_projects', 'read_projects', 'organization_access'])
          .orderBy('id')
          .execute();
        assert.deepEqual(teams, [
          { id: 'devs', manage_projects: 0, read_projects: 0, organization_access: '{}' },
          { id: 'owners', manage_projects: 1, read_projects: 1, organization_access: '{}' },
        ]);
        const grants = await k
          .selectFrom('tfe_team_workspaces')
          .select(['id', 'runs', 'variables', 'state_versions', 'sentinel_mocks', 'workspace_locking', 'run_tasks'])
          .orderBy('id')
          .execute();
        assert.deepEqual(grants, [
          {
            id: 'tws-admin',
            runs: 'apply',
            variables: 'write',
            state_versions: 'write',
            sentinel_mocks: 'read',
            workspace_locking: 1,
            run_tasks: 1,
          },
          {
            id: 'tws-custom',
            runs: 'read',
            variables: 'none',
            state_versions: 'read',
            sentinel_mocks: 'none',
            workspace_locking: 1,
            run_tasks: 0,
          },
        ]);
      });
    });
  });
}
