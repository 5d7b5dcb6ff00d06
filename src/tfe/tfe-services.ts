import type { FastifyInstance } from 'fastify';
import type { CoreDeps } from '../deps.js';
import type { TfePluginOptions } from './tfe-plugin.js';
import { registerApiHeadersAndPing, registerDiscoveryRoutes } from './discovery-routes.js';
import { IdentityRepo } from './identity/identity-repo.js';
import { registerIdentityRoutes } from './identity/identity-routes.js';
import { IdentityService } from './identity/identity-service.js';
import { registerAuthHook } from './identity/request-actor.js';
import { TeamService } from './identity/team-service.js';
import { TokenService } from './identity/token-service.js';
import { OrganizationRepo } from './organizations/organization-repo.js';
import { registerOrganizationRoutes } from './organizations/organization-routes.js';
import { OrganizationService } from './organizations/organization-service.js';
import { TeamAccessRepo } from './workspaces/team-access-repo.js';
import { registerTeamAccessRoutes } from './workspaces/team-access-routes.js';
import { TeamAccessService } from './workspaces/team-access-service.js';
import { WorkspaceRepo } from './workspaces/workspace-repo.js';
import { registerWorkspaceRoutes } from './workspaces/workspace-routes.js';
import { WorkspaceService } from './workspaces/workspace-service.js';

/**
 * The Terraform state service's composition root: builds its repos and services from
 * the core dependencies and registers its routes inside the /api/v2 plugin.
 */
export interface TfeServices {
  /** Routes under /api/v2. */
  registerRoutes(app: FastifyInstance, opts: TfePluginOptions): Promise<void>;
  /** Routes outside /api/v2 (/.well-known/terraform.json, upload URLs), with the same JSON:API errors. */
  registerRootRoutes(app: FastifyInstance, opts: TfePluginOptions): Promise<void>;
  /** Job handlers this product runs, by job kind. */
  jobHandlers: Record<string, (payload: unknown, ctx: { jobId: string; attempt: number; signal: AbortSignal }) => Promise<void>>;
  /** The services themselves, for the CLI and tests. */
  identity: IdentityService;
  organizations: OrganizationService;
  teams: TeamService;
  tokens: TokenService;
  workspaces: WorkspaceService;
  teamAccess: TeamAccessService;
}

export function buildTfeServices(core: CoreDeps): TfeServices {
  const { db, clock, config } = core;
  const identityRepo = new IdentityRepo({ db: db.kysely });
  const identity = new IdentityService({ repo: identityRepo, adminTokens: core.adminTokens, clock });
  const organizations = new OrganizationService({ db, repo: new OrganizationRepo({ db: db.kysely }), identity, clock });
  const teams = new TeamService({ repo: identityRepo, organizations, clock });
  const tokens = new TokenService({ db, repo: identityRepo, organizations, clock });
  const workspaces = new WorkspaceService({ db, repo: new WorkspaceRepo({ db: db.kysely }), organizations, identity, clock });
  const teamAccess = new TeamAccessService({ repo: new TeamAccessRepo({ db: db.kysely }), workspaces, teams, clock });

  return {
    identity,
    organizations,
    teams,
    tokens,
    workspaces,
    teamAccess,
    async registerRoutes(app) {
      registerApiHeadersAndPing(app);
      registerAuthHook(app, identity);
      registerOrganizationRoutes(app, { organizations, config });
      registerIdentityRoutes(app, { identity, tokens, teams, config });
      registerWorkspaceRoutes(app, { workspaces, organizations, config });
      registerTeamAccessRoutes(app, { teamAccess });
    },
    async registerRootRoutes(app) {
      registerDiscoveryRoutes(app);
    },
    jobHandlers: {},
  };
}
