import type { Kysely, Selectable, Updateable } from 'kysely';
import { isUniqueViolation } from '../../db/constraint-errors.js';
import { ParamQuery } from '../../db/one-param-query.js';
import type { Database } from '../../db/schema.js';
import type { TfeTeamsTable, TfeTokensTable, TfeUsersTable } from '../../db/schema-tfe.js';
import { conflict, invalid } from '../../shared/errors.js';
import type { TeamGrant } from './permissions.js';
import type { AuthToken, OrganizationAccessFlags, Team, User } from './identity.js';
import { ORGANIZATION_ACCESS_FLAGS, RULE_ACCESS_FLAGS, organizationAccessOf } from './identity.js';

type TeamRow = Selectable<TfeTeamsTable> & { organization_name: string; users_count: number };

function toUser(r: Selectable<TfeUsersTable>): User {
  return {
    id: r.id,
    username: r.username,
    email: r.email,
    siteAdmin: r.site_admin === 1,
    createdAt: new Date(r.created_at),
  };
}

/** The stored flags: the rule flags from their columns, the others from the JSON object. */
function accessFlags(r: Selectable<TfeTeamsTable>): OrganizationAccessFlags {
  const stored: unknown = JSON.parse(r.organization_access);
  const flags = organizationAccessOf(false);
  for (const f of ORGANIZATION_ACCESS_FLAGS) {
    const v = (stored as Record<string, unknown> | null)?.[f];
    if (typeof v === 'boolean') flags[f] = v;
  }
  flags['manage-workspaces'] = r.manage_workspaces === 1;
  flags['read-workspaces'] = r.read_workspaces === 1;
  flags['manage-projects'] = r.manage_projects === 1;
  flags['read-projects'] = r.read_projects === 1;
  return r.is_owners === 1 ? organizationAccessOf(true) : flags;
}

/** The columns that hold a team's organization access. */
function accessColumns(flags: Partial<OrganizationAccessFlags>, current?: OrganizationAccessFlags) {
  const next = { ...(current ?? organizationAccessOf(false)), ...flags };
  const rest = Object.fromEntries(
    ORGANIZATION_ACCESS_FLAGS.filter((f) => !(RULE_ACCESS_FLAGS as readonly string[]).includes(f)).map((f) => [
      f,
      next[f],
    ]),
  );
  return {
    manage_workspaces: next['manage-workspaces'] ? 1 : 0,
    read_workspaces: next['read-workspaces'] ? 1 : 0,
    manage_projects: next['manage-projects'] ? 1 : 0,
    read_projects: next['read-projects'] ? 1 : 0,
    organization_access: JSON.stringify(rest),
  };
}

function toTeam(r: TeamRow): Team {
  return {
    id: r.id,
    organizationId: r.organization_id,
    organization: r.organization_name,
    name: r.name,
    visibility: r.visibility === 'organization' ? 'organization' : 'secret',
    isOwners: r.is_owners === 1,
    organizationAccess: accessFlags(r),
    usersCount: Number(r.users_count),
    createdAt: new Date(r.created_at),
  };
}

function toToken(r: Selectable<TfeTokensTable>): AuthToken {
  return {
    id: r.id,
    kind: r.kind,
    userId: r.user_id,
    teamId: r.team_id,
    organizationId: r.organization_id,
    singleton: r.singleton === 1,
    description: r.description,
    createdById: r.created_by_id,
    createdAt: new Date(r.created_at),
    lastUsedAt: r.last_used_at ? new Date(r.last_used_at) : null,
    expiredAt: r.expired_at ? new Date(r.expired_at) : null,
  };
}

export type Executor = Kysely<Database>;

/** A team as the permission rules see it. */
export interface AccessTeam {
  id: string;
  isOwners: boolean;
  manageWorkspaces: boolean;
  readWorkspaces: boolean;
  manageProjects: boolean;
  readProjects: boolean;
}

interface AccessTeamRow {
  id: string;
  is_owners: number;
  manage_workspaces: number;
  read_workspaces: number;
  manage_projects: number;
  read_projects: number;
}

const ACCESS_TEAM_COLUMNS = [
  't.id',
  't.is_owners',
  't.manage_workspaces',
  't.read_workspaces',
  't.manage_projects',
  't.read_projects',
] as const;

function toAccessTeam(r: AccessTeamRow): AccessTeam {
  return {
    id: r.id,
    isOwners: r.is_owners === 1,
    manageWorkspaces: r.manage_workspaces === 1,
    readWorkspaces: r.read_workspaces === 1,
    manageProjects: r.manage_projects === 1,
    readProjects: r.read_projects === 1,
  };
}

interface AccessRow extends AccessTeamRow {
  workspace_id: string | null;
  access: string | null;
  state_versions: string | null;
  workspace_locking: number | null;
}

/** All SQL for users, teams, memberships and tokens. */
export class IdentityRepo {
  constructor(private readonly deps: { db: Kysely<Database> }) {}

  // ---- users

  async insertUser(u: User, ex: Executor = this.deps.db): Promise<void> {
    try {
      await ex
        .insertInto('tfe_users')
        .values({
          id: u.id,
          username: u.username,
          email: u.email,
          site_admin: u.siteAdmin ? 1 : 0,
          created_at: u.createdAt.toISOString(),
        })
        .execute();
    } catch (err) {
      if (isUniqueViolation(err, 'tfe_users_username_key'))
        throw invalid(`username "${u.username}" is already taken`, '/data/attributes/username');
      throw err;
    }
  }

  /** Inserts unless the username exists (a concurrent first use of the admin token). */
  async insertUserIfAbsent(u: User): Promise<void> {
    await this.deps.db
      .insertInto('tfe_users')
      .values({
        id: u.id,
        username: u.username,
        email: u.email,
        site_admin: u.siteAdmin ? 1 : 0,
        created_at: u.createdAt.toISOString(),
      })
      .onConflict((oc) => oc.column('username').doNothing())
      .execute();
  }

  async userById(id: string): Promise<User | undefined> {
    const r = await this.deps.db.selectFrom('tfe_users').selectAll().where('id', '=', id).executeTakeFirst();
    return r && toUser(r);
  }

  async userByName(username: string): Promise<User | undefined> {
    const r = await this.deps.db
      .selectFrom('tfe_users')
      .selectAll()
      .where('username', '=', username)
      .executeTakeFirst();
    return r && toUser(r);
  }

  async listUsers(): Promise<User[]> {
    const rows = await this.deps.db.selectFrom('tfe_users').selectAll().orderBy('username').execute();
    return rows.map(toUser);
  }

  async organizationName(organizationId: string): Promise<string | undefined> {
    const r = await this.deps.db
      .selectFrom('organizations')
      .select('name')
      .where('id', '=', organizationId)
      .executeTakeFirst();
    return r?.name;
  }

  // ---- teams

  private teamQuery(ex: Executor) {
    return ex
      .selectFrom('tfe_teams as t')
      .innerJoin('organizations as o', 'o.id', 't.organization_id')
      .selectAll('t')
      .select('o.name as organization_name')
      .select((eb) =>
        eb
          .selectFrom('tfe_team_members as m')
          .whereRef('m.team_id', '=', 't.id')
          .select((e2) => e2.fn.countAll<number>().as('n'))
          .as('users_count'),
      );
  }

  async insertTeam(t: Team, ex: Executor = this.deps.db): Promise<void> {
    try {
      await ex
        .insertInto('tfe_teams')
        .values({
          id: t.id,
          organization_id: t.organizationId,
          name: t.name,
          visibility: t.visibility,
          is_owners: t.isOwners ? 1 : 0,
          ...accessColumns(t.organizationAccess),
          created_at: t.createdAt.toISOString(),
        })
        .execute();
    } catch (err) {
      if (isUniqueViolation(err, 'tfe_teams_organization_id_name_key'))
        throw invalid(`team "${t.name}" already exists`, '/data/attributes/name');
      throw err;
    }
  }

  async teamById(id: string): Promise<Team | undefined> {
    const r = await this.teamQuery(this.deps.db).where('t.id', '=', id).executeTakeFirst();
    return r && toTeam(r as TeamRow);
  }

  async teamsOfOrganization(organizationId: string): Promise<Team[]> {
    const rows = await this.teamQuery(this.deps.db)
      .where('t.organization_id', '=', organizationId)
      .orderBy('t.name')
      .execute();
    return rows.map((r) => toTeam(r as TeamRow));
  }

  async ownersTeam(organizationId: string): Promise<Team | undefined> {
    const r = await this.teamQuery(this.deps.db)
      .where('t.organization_id', '=', organizationId)
      .where('t.is_owners', '=', 1)
      .executeTakeFirst();
    return r && toTeam(r as TeamRow);
  }

  /** `organizationAccess` replaces the flags it names, over `current` (the team's flags as read). */
  async updateTeam(
    id: string,
    patch: { name?: string; visibility?: string; organizationAccess?: Partial<OrganizationAccessFlags> },
    current: OrganizationAccessFlags,
  ): Promise<void> {
    const values: Updateable<TfeTeamsTable> = {};
    if (patch.name !== undefined) values.name = patch.name;
    if (patch.visibility !== undefined) values.visibility = patch.visibility;
    if (patch.organizationAccess !== undefined) Object.assign(values, accessColumns(patch.organizationAccess, current));
    if (Object.keys(values).length === 0) return;
    try {
      await this.deps.db.updateTable('tfe_teams').set(values).where('id', '=', id).execute();
    } catch (err) {
      if (isUniqueViolation(err, 'tfe_teams_organization_id_name_key'))
        throw invalid(`team "${patch.name}" already exists`, '/data/attributes/name');
      throw err;
    }
  }

  async deleteTeam(id: string): Promise<boolean> {
    const res = await this.deps.db.deleteFrom('tfe_teams').where('id', '=', id).executeTakeFirst();
    return Number(res.numDeletedRows) > 0;
  }

  async addMember(teamId: string, userId: string, at: Date, ex: Executor = this.deps.db): Promise<void> {
    await ex
      .insertInto('tfe_team_members')
      .values({ team_id: teamId, user_id: userId, created_at: at.toISOString() })
      .onConflict((oc) => oc.columns(['team_id', 'user_id']).doNothing())
      .execute();
  }

  async removeMember(teamId: string, userId: string): Promise<void> {
    await this.deps.db
      .deleteFrom('tfe_team_members')
      .where('team_id', '=', teamId)
      .where('user_id', '=', userId)
      .execute();
  }

  async membersOf(teamId: string): Promise<User[]> {
    const rows = await this.deps.db
      .selectFrom('tfe_users as u')
      .innerJoin('tfe_team_members as m', 'm.user_id', 'u.id')
      .selectAll('u')
      .where('m.team_id', '=', teamId)
      .orderBy('u.username')
      .execute();
    return rows.map(toUser);
  }

  /** The access-relevant flags of the teams a user (or one team) acts through in an organization; no joins. */
  async accessTeams(organizationId: string, by: { userId: string } | { teamId: string }): Promise<AccessTeam[]> {
    let q = this.deps.db
      .selectFrom('tfe_teams as t')
      .select(ACCESS_TEAM_COLUMNS)
      .where('t.organization_id', '=', organizationId);
    if ('userId' in by) {
      const userId = by.userId;
      q = q.where('t.id', 'in', (eb) =>
        eb.selectFrom('tfe_team_members').select('team_id').where('user_id', '=', userId),
      );
    } else {
      q = q.where('t.id', '=', by.teamId);
    }
    const rows = await q.execute();
    return rows.map(toAccessTeam);
  }

  private accessQuery(organizationId: string, by: { userId: string } | { teamId: string }, workspaceIds: string[]) {
    let q = this.deps.db
      .selectFrom('tfe_teams as t')
      .leftJoin('tfe_team_workspaces as tw', (j) =>
        j.onRef('tw.team_id', '=', 't.id').on('tw.workspace_id', 'in', workspaceIds.length > 0 ? workspaceIds : ['']),
      )
      .select([...ACCESS_TEAM_COLUMNS, 'tw.workspace_id', 'tw.access', 'tw.state_versions', 'tw.workspace_locking'])
      .where('t.organization_id', '=', organizationId);
    if ('userId' in by) {
      const userId = by.userId;
      q = q.where('t.id', 'in', (eb) =>
        eb.selectFrom('tfe_team_members').select('team_id').where('user_id', '=', userId),
      );
    } else {
      q = q.where('t.id', '=', by.teamId);
    }
    return q;
  }

  private readonly userAccessQuery = new ParamQuery((org: string, userId: string, ws: string) =>
    this.accessQuery(org, { userId }, [ws]),
  );
  private readonly teamAccessQuery = new ParamQuery((org: string, teamId: string, ws: string) =>
    this.accessQuery(org, { teamId }, [ws]),
  );

  /**
   * accessTeams and grantsOf in one query: the actor's teams in the organization, each
   * with its grants on the given workspaces (a team with no grant there comes once with none).
   */
  async accessTeamsWithGrants(
    organizationId: string,
    by: { userId: string } | { teamId: string },
    workspaceIds: string[],
  ): Promise<{ teams: AccessTeam[]; grants: Map<string, TeamGrant[]> }> {
    let rows: AccessRow[];
    // One workspace (every workspace-scoped request) runs a compiled template.
    const [only] = workspaceIds;
    if (workspaceIds.length === 1 && only !== undefined) {
      rows =
        'userId' in by
          ? await this.userAccessQuery.execute(this.deps.db, organizationId, by.userId, only)
          : await this.teamAccessQuery.execute(this.deps.db, organizationId, by.teamId, only);
    } else {
      rows = await this.accessQuery(organizationId, by, workspaceIds).execute();
    }
    const teams = new Map<string, AccessTeam>();
    const grants = new Map<string, TeamGrant[]>();
    for (const r of rows) {
      if (!teams.has(r.id)) teams.set(r.id, toAccessTeam(r));
      if (r.workspace_id === null || r.access === null) continue;
      const list = grants.get(r.workspace_id) ?? [];
      list.push({
        access: r.access as TeamGrant['access'],
        stateVersions: r.state_versions as TeamGrant['stateVersions'],
        workspaceLocking: r.workspace_locking === 1,
      });
      grants.set(r.workspace_id, list);
    }
    return { teams: [...teams.values()], grants };
  }

  /** Organization ids where the user is in some team. */
  async organizationIdsOfUser(userId: string): Promise<string[]> {
    const rows = await this.deps.db
      .selectFrom('tfe_teams as t')
      .innerJoin('tfe_team_members as m', 'm.team_id', 't.id')
      .select('t.organization_id')
      .distinct()
      .where('m.user_id', '=', userId)
      .execute();
    return rows.map((r) => r.organization_id);
  }

  /** Grants the given teams hold on the given workspaces, by workspace id. */
  async grantsOf(teamIds: string[], workspaceIds: string[]): Promise<Map<string, TeamGrant[]>> {
    const out = new Map<string, TeamGrant[]>();
    if (teamIds.length === 0 || workspaceIds.length === 0) return out;
    const rows = await this.deps.db
      .selectFrom('tfe_team_workspaces')
      .select(['workspace_id', 'access', 'state_versions', 'workspace_locking'])
      .where('team_id', 'in', teamIds)
      .where('workspace_id', 'in', workspaceIds)
      .execute();
    for (const r of rows) {
      const list = out.get(r.workspace_id) ?? [];
      list.push({
        access: r.access as TeamGrant['access'],
        stateVersions: r.state_versions as TeamGrant['stateVersions'],
        workspaceLocking: r.workspace_locking === 1,
      });
      out.set(r.workspace_id, list);
    }
    return out;
  }

  // ---- tokens

  async insertToken(t: AuthToken, hash: string, ex: Executor = this.deps.db): Promise<void> {
    try {
      await this.insertTokenRow(t, hash, ex);
    } catch (err) {
      if (
        isUniqueViolation(err, 'tfe_tokens_team_id_key') ||
        isUniqueViolation(err, 'tfe_tokens_organization_id_key')
      ) {
        throw conflict('the token was regenerated concurrently; try again');
      }
      throw err;
    }
  }

  private async insertTokenRow(t: AuthToken, hash: string, ex: Executor): Promise<void> {
    await ex
      .insertInto('tfe_tokens')
      .values({
        id: t.id,
        token_hash: hash,
        kind: t.kind,
        user_id: t.userId,
        team_id: t.teamId,
        organization_id: t.organizationId,
        singleton: t.singleton ? 1 : 0,
        description: t.description,
        created_by_id: t.createdById,
        created_at: t.createdAt.toISOString(),
        last_used_at: null,
        expired_at: t.expiredAt ? t.expiredAt.toISOString() : null,
      })
      .execute();
  }

  async tokenByHash(hash: string): Promise<AuthToken | undefined> {
    const r = await this.deps.db.selectFrom('tfe_tokens').selectAll().where('token_hash', '=', hash).executeTakeFirst();
    return r && toToken(r);
  }

  async tokenById(id: string): Promise<AuthToken | undefined> {
    const r = await this.deps.db.selectFrom('tfe_tokens').selectAll().where('id', '=', id).executeTakeFirst();
    return r && toToken(r);
  }

  async tokensOfUser(userId: string): Promise<AuthToken[]> {
    const rows = await this.deps.db
      .selectFrom('tfe_tokens')
      .selectAll()
      .where('user_id', '=', userId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(toToken);
  }

  /** Team tokens of an organization's teams (legacy and described ones), oldest first. */
  async teamTokensOfOrganization(organizationId: string, opts: { withOwners: boolean }): Promise<AuthToken[]> {
    let q = this.deps.db
      .selectFrom('tfe_tokens as k')
      .innerJoin('tfe_teams as t', 't.id', 'k.team_id')
      .selectAll('k')
      .where('t.organization_id', '=', organizationId)
      .where('k.kind', '=', 'team');
    if (!opts.withOwners) q = q.where('t.is_owners', '=', 0);
    const rows = await q.orderBy('k.created_at').orderBy('k.id').execute();
    return rows.map(toToken);
  }

  async teamTokenDescriptions(teamId: string): Promise<Array<string | null>> {
    const rows = await this.deps.db
      .selectFrom('tfe_tokens')
      .select('description')
      .where('team_id', '=', teamId)
      .where('singleton', '=', 0)
      .execute();
    return rows.map((r) => r.description);
  }

  async singletonToken(kind: 'team' | 'organization', ownerId: string): Promise<AuthToken | undefined> {
    const col = kind === 'team' ? 'team_id' : 'organization_id';
    const r = await this.deps.db
      .selectFrom('tfe_tokens')
      .selectAll()
      .where(col, '=', ownerId)
      .where('kind', '=', kind)
      .where('singleton', '=', 1)
      .executeTakeFirst();
    return r && toToken(r);
  }

  async deleteSingletonTokens(
    kind: 'team' | 'organization',
    ownerId: string,
    ex: Executor = this.deps.db,
  ): Promise<number> {
    const col = kind === 'team' ? 'team_id' : 'organization_id';
    const res = await ex
      .deleteFrom('tfe_tokens')
      .where(col, '=', ownerId)
      .where('kind', '=', kind)
      .where('singleton', '=', 1)
      .executeTakeFirst();
    return Number(res.numDeletedRows);
  }

  async deleteToken(id: string): Promise<boolean> {
    const res = await this.deps.db.deleteFrom('tfe_tokens').where('id', '=', id).executeTakeFirst();
    return Number(res.numDeletedRows) > 0;
  }

  /** Records use at most once a minute per token, so reads do not turn into writes. */
  async touchToken(id: string, now: Date): Promise<void> {
    const cutoff = new Date(now.getTime() - 60_000).toISOString();
    await this.deps.db
      .updateTable('tfe_tokens')
      .set({ last_used_at: now.toISOString() })
      .where('id', '=', id)
      .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', cutoff)]))
      .execute();
  }
}
