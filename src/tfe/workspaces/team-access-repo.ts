import type { Kysely, Selectable } from 'kysely';
import { isUniqueViolation } from '../../db/constraint-errors.js';
import type { Database } from '../../db/schema.js';
import type { TfeTeamWorkspacesTable } from '../../db/schema-tfe.js';
import { invalid } from '../../shared/errors.js';
import type { StateVersionsAccess, TeamAccessLevel } from '../identity/permissions.js';
import type { RunsAccess, SentinelMocksAccess, TeamAccess, TeamAccessFields, VariablesAccess } from './team-access.js';

function toTeamAccess(r: Selectable<TfeTeamWorkspacesTable>): TeamAccess {
  return {
    id: r.id,
    teamId: r.team_id,
    workspaceId: r.workspace_id,
    access: r.access as TeamAccessLevel,
    runs: r.runs as RunsAccess,
    variables: r.variables as VariablesAccess,
    stateVersions: r.state_versions as StateVersionsAccess,
    sentinelMocks: r.sentinel_mocks as SentinelMocksAccess,
    workspaceLocking: r.workspace_locking === 1,
    runTasks: r.run_tasks === 1,
    createdAt: new Date(r.created_at),
  };
}

function fieldColumns(v: TeamAccessFields & Pick<TeamAccess, 'access'>) {
  return {
    access: v.access,
    runs: v.runs,
    variables: v.variables,
    state_versions: v.stateVersions,
    sentinel_mocks: v.sentinelMocks,
    workspace_locking: v.workspaceLocking ? 1 : 0,
    run_tasks: v.runTasks ? 1 : 0,
  };
}

export class TeamAccessRepo {
  constructor(private readonly deps: { db: Kysely<Database> }) {}

  async insert(t: TeamAccess): Promise<void> {
    try {
      await this.deps.db
        .insertInto('tfe_team_workspaces')
        .values({
          id: t.id,
          team_id: t.teamId,
          workspace_id: t.workspaceId,
          ...fieldColumns(t),
          created_at: t.createdAt.toISOString(),
        })
        .execute();
    } catch (err) {
      if (isUniqueViolation(err, 'tfe_team_workspaces_team_id_workspace_id_key')) {
        throw invalid('the team already has access to this workspace', '/data/relationships/team');
      }
      throw err;
    }
  }

  async byId(id: string): Promise<TeamAccess | undefined> {
    const r = await this.deps.db.selectFrom('tfe_team_workspaces').selectAll().where('id', '=', id).executeTakeFirst();
    return r && toTeamAccess(r);
  }

  async ofWorkspace(workspaceId: string): Promise<TeamAccess[]> {
    const rows = await this.deps.db
      .selectFrom('tfe_team_workspaces')
      .selectAll()
      .where('workspace_id', '=', workspaceId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(toTeamAccess);
  }

  async update(id: string, v: TeamAccessFields & Pick<TeamAccess, 'access'>): Promise<void> {
    await this.deps.db.updateTable('tfe_team_workspaces').set(fieldColumns(v)).where('id', '=', id).execute();
  }

  async delete(id: string): Promise<void> {
    await this.deps.db.deleteFrom('tfe_team_workspaces').where('id', '=', id).execute();
  }
}
