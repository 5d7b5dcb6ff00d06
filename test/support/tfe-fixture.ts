import { AdminTokenRepo } from '../../src/admin/admin-token-repo.js';
import { AdminTokenService } from '../../src/admin/admin-token-service.js';
import type { DatabaseKind } from '../../src/db/database.js';
import { ManualClock } from '../../src/shared/clock.js';
import type { Actor } from '../../src/tfe/identity/actor.js';
import { IdentityRepo } from '../../src/tfe/identity/identity-repo.js';
import { IdentityService } from '../../src/tfe/identity/identity-service.js';
import { TeamService } from '../../src/tfe/identity/team-service.js';
import { TokenActorCache } from '../../src/tfe/identity/token-actor-cache.js';
import { TokenService } from '../../src/tfe/identity/token-service.js';
import { OrganizationRepo } from '../../src/tfe/organizations/organization-repo.js';
import { OrganizationService } from '../../src/tfe/organizations/organization-service.js';
import { ProjectRepo } from '../../src/tfe/projects/project-repo.js';
import { ProjectService } from '../../src/tfe/projects/project-service.js';
import { TeamAccessRepo } from '../../src/tfe/workspaces/team-access-repo.js';
import { TeamAccessService } from '../../src/tfe/workspaces/team-access-service.js';
import { WorkspaceRepo } from '../../src/tfe/workspaces/workspace-repo.js';
import { WorkspaceService } from '../../src/tfe/workspaces/workspace-service.js';
import { createTestDb } from './test-db.js';
import type { TestDatabase } from './test-db.js';

export const FIXTURE_ADMIN_TOKEN = 'fixture-admin-token';

/** The TFE identity, organization and workspace services on a fresh database, with one-line factories. */
export interface TfeFixture {
  tdb: TestDatabase;
  clock: ManualClock;
  identity: IdentityService;
  organizations: OrganizationService;
  teams: TeamService;
  tokens: TokenService;
  projects: ProjectService;
  workspaces: WorkspaceService;
  teamAccess: TeamAccessService;
  admin: Actor;
  /** A new user and the actor of a fresh user token of theirs. */
  user(name: string): Promise<Actor & { kind: 'user' }>;
  org(name: string): Promise<void>;
  workspace(org: string, name: string): Promise<string>;
  /** A team with the given members (usernames); returns its id. */
  team(org: string, name: string, members?: string[], opts?: { manageWorkspaces?: boolean }): Promise<string>;
  actorOf(token: string): Promise<Actor>;
  cleanup(): Promise<void>;
}

export async function createTfeFixture(kind: DatabaseKind): Promise<TfeFixture> {
  const tdb = await createTestDb(kind);
  const clock = new ManualClock('2026-03-01T10:00:00.000Z');
  const db = tdb.db;
  const adminTokens = new AdminTokenService({ repo: new AdminTokenRepo({ db: db.kysely, units: db.units }), clock });
  await adminTokens.ensureFixed(FIXTURE_ADMIN_TOKEN);
  const repo = new IdentityRepo({ db: db.kysely });
  const tokenCache = new TokenActorCache({ clock });
  const identity = new IdentityService({ repo, adminTokens, clock, tokenCache });
  const organizations = new OrganizationService({ db, repo: new OrganizationRepo({ db: db.kysely }), identity, clock });
  const teams = new TeamService({ repo, organizations, clock, tokenCache });
  const tokens = new TokenService({ db, repo, organizations, clock, tokenCache });
  const projects = new ProjectService({ repo: new ProjectRepo({ db: db.kysely }), organizations, identity, clock });
  const workspaces = new WorkspaceService({
    db,
    repo: new WorkspaceRepo({ db: db.kysely }),
    organizations,
    identity,
    projects,
    clock,
  });
  const teamAccess = new TeamAccessService({ repo: new TeamAccessRepo({ db: db.kysely }), workspaces, teams, clock });
  const admin = (await identity.authenticate(FIXTURE_ADMIN_TOKEN)) as Actor;

  const actorOf = async (token: string): Promise<Actor> => {
    const a = await identity.authenticate(token);
    if (!a) throw new Error('token did not authenticate');
    return a;
  };

  return {
    tdb,
    clock,
    identity,
    organizations,
    teams,
    tokens,
    projects,
    workspaces,
    teamAccess,
    admin,
    actorOf,
    async user(name) {
      const u = await identity.createUser(admin, { username: name });
      const t = await tokens.createUserToken(admin, u.id, {});
      return (await actorOf(t.secret)) as Actor & { kind: 'user' };
    },
    async org(name) {
      await organizations.create(admin, { name, email: `${name}@example.com` });
    },
    async workspace(org, name) {
      return (await workspaces.create(admin, org, { name })).workspace.id;
    },
    async team(org, name, members = [], opts = {}) {
      const { team: t } = await teams.create(admin, org, {
        name,
        organizationAccess: { 'manage-workspaces': opts.manageWorkspaces ?? false },
      });
      if (members.length > 0) await teams.addMembers(admin, t.id, members);
      return t.id;
    },
    cleanup: () => tdb.cleanup(),
  };
}
