import type { FastifyInstance } from 'fastify';
import type { CoreDeps } from '../deps.js';
import type { HousekeepingTask } from '../jobs/housekeeping.js';
import type { TfePluginOptions } from './tfe-plugin.js';
import { registerApiHeadersAndPing, registerDiscoveryRoutes } from './discovery-routes.js';
import { IdentityRepo } from './identity/identity-repo.js';
import { registerIdentityRoutes } from './identity/identity-routes.js';
import { IdentityService } from './identity/identity-service.js';
import { registerAuthHook } from './identity/request-actor.js';
import { TeamService } from './identity/team-service.js';
import { TokenActorCache } from './identity/token-actor-cache.js';
import { TokenService } from './identity/token-service.js';
import { OrganizationRepo } from './organizations/organization-repo.js';
import { registerOrganizationRoutes } from './organizations/organization-routes.js';
import { OrganizationService } from './organizations/organization-service.js';
import { ProjectRepo } from './projects/project-repo.js';
import { projectResource } from './projects/project-jsonapi.js';
import { registerProjectRoutes } from './projects/project-routes.js';
import { ProjectService } from './projects/project-service.js';
import { TeamAccessRepo } from './workspaces/team-access-repo.js';
import { registerTeamAccessRoutes } from './workspaces/team-access-routes.js';
import { TeamAccessService } from './workspaces/team-access-service.js';
import { WorkspaceRepo } from './workspaces/workspace-repo.js';
import { registerWorkspaceRoutes } from './workspaces/workspace-routes.js';
import { WorkspaceService } from './workspaces/workspace-service.js';
import { extractStateJob } from './state-versions/extract-state-job.js';
import { ENCRYPT_STATE_JOB, StateEncryption } from './state-versions/state-encryption-job.js';
import { StateEncryptionRepo } from './state-versions/state-encryption-repo.js';
import { STATE_MAINTENANCE_JOB, StateMaintenance } from './state-versions/state-maintenance.js';
import { registerStateUploadRoutes } from './state-versions/state-upload-routes.js';
import { StateUploadService } from './state-versions/state-upload-service.js';
import { stateRepos } from './state-versions/state-repos.js';
import type { StateRepos } from './state-versions/state-repos.js';
import { registerStateVersionRoutes } from './state-versions/state-version-routes.js';
import { EXTRACT_STATE_JOB, STATE_BLOB_GC_JOB, StateVersionService } from './state-versions/state-version-service.js';
import { enqueueMissingExtractions } from './state-versions/extraction-backfill.js';
import { registerStateDiffRoutes } from './state-versions/state-diff-routes.js';
import { LoginRepo } from './login/login-repo.js';
import { LoginService } from './login/login-service.js';
import { registerLoginApprovalRoutes, registerLoginTokenRoute } from './login/login-routes.js';
import { StateDiffService } from './state-versions/state-diff-service.js';
import { registerStateVersionOutputRoutes } from './state-version-outputs/state-version-output-routes.js';
import { StateVersionOutputService } from './state-version-outputs/state-version-output-service.js';
import { AuditEventRepo } from './audit-trail/audit-event-repo.js';
import { registerAuditTrailHooks, registerAuditTrailRoutes } from './audit-trail/audit-event-routes.js';
import { AuditEventService } from './audit-trail/audit-event-service.js';

/**
 * The Terraform state service's composition root: builds its repos and services from
 * the core dependencies and registers its routes inside the /api/v2 plugin.
 */
export interface TfeServices {
  /** Routes under /api/v2. */
  registerRoutes(app: FastifyInstance, opts: TfePluginOptions): Promise<void>;
  /** Routes outside /api/v2 (/.well-known/terraform.json, upload URLs), with the same JSON:API errors. */
  registerRootRoutes(app: FastifyInstance, opts: TfePluginOptions): Promise<void>;
  /** What the hourly (and start-up) housekeeping job runs for this product. */
  housekeepingTasks: HousekeepingTask[];
  /** Job handlers this product runs, by job kind. */
  jobHandlers: Record<
    string,
    (payload: unknown, ctx: { jobId: string; attempt: number; signal: AbortSignal }) => Promise<void>
  >;
  /** The services themselves, for the CLI and tests. */
  identity: IdentityService;
  organizations: OrganizationService;
  teams: TeamService;
  tokens: TokenService;
  projects: ProjectService;
  workspaces: WorkspaceService;
  teamAccess: TeamAccessService;
  stateVersions: StateVersionService;
  /** The state tables' repositories and units of work, whose writes the current-version cache follows. */
  stateRepos: StateRepos;
  /** Called after requests that committed jobs (state finalized); deps.ts points it at this node's worker. */
  onJobsEnqueued(listener: () => void): void;
}

/**
 * Identity, organizations, teams, tokens, projects, workspaces and team access: what the CLI needs without the rest.
 */
export function buildTfeIdentityLayer(
  core: Pick<CoreDeps, 'db' | 'clock' | 'adminTokens'> & Partial<Pick<CoreDeps, 'peers'>>,
) {
  const { db, clock, peers } = core;
  const identityRepo = new IdentityRepo({ db: db.kysely });
  const tokenCache = new TokenActorCache({ clock, peers });
  const identity = new IdentityService({ repo: identityRepo, adminTokens: core.adminTokens, clock, tokenCache });
  const organizations = new OrganizationService({ db, repo: new OrganizationRepo({ db: db.kysely }), identity, clock });
  const teams = new TeamService({ repo: identityRepo, organizations, clock, tokenCache });
  const tokens = new TokenService({ db, repo: identityRepo, organizations, clock, tokenCache });
  const projects = new ProjectService({ repo: new ProjectRepo({ db: db.kysely }), organizations, identity, clock });
  const workspaces = new WorkspaceService({
    db,
    repo: new WorkspaceRepo({ db: db.kysely }),
    organizations,
    identity,
    projects,
    clock,
    peers,
  });
  const teamAccess = new TeamAccessService({ repo: new TeamAccessRepo({ db: db.kysely }), workspaces, teams, clock });
  return { identity, organizations, teams, tokens, projects, workspaces, teamAccess };
}

export function buildTfeServices(core: CoreDeps): TfeServices {
  const { db, clock, config } = core;
  const { identity, organizations, teams, tokens, projects, workspaces, teamAccess } = buildTfeIdentityLayer(core);
  const login = new LoginService({ repo: new LoginRepo({ db: db.kysely }), tokens, clock });

  const stateSettings = {
    allowSerialMismatch: config.stateAllowSerialMismatch,
    allowEncrypted: config.stateAllowEncrypted,
    uploadUrlTtlSeconds: config.stateUploadUrlTtlSeconds,
    maxUploadSize: config.maxUploadSize,
    softDeletePurgeDays: config.stateSoftDeletePurgeDays,
    retentionKeepLatest: config.stateRetentionKeepLatest,
    retentionMaxAgeDays: config.stateRetentionMaxAgeDays,
    maintenanceIntervalSeconds: config.stateMaintenanceIntervalSeconds,
    inlineMaxSize: config.stateInlineMaxSize,
  };
  const repos = stateRepos(db, core.sealing);
  const stateCore = { repos, blobs: core.blobs, jobs: core.jobs, clock, settings: stateSettings };
  // The current version is kept in memory where other writers are seen (decisions 0014 and 0048): every commit of
  // another SQLite connection, every change another PostgreSQL node notifies. With several workers on one SQLite file,
  // each read first asks whether another one committed (decision 0047).
  const currentVersionCache = db.externalChanges
    ? {
        externalChanges: db.externalChanges,
        externalCheckMs: db.kind === 'sqlite' && config.workers > 1 ? 0 : undefined,
      }
    : undefined;
  const stateVersions = new StateVersionService({
    ...stateCore,
    workspaces,
    secrets: core.secrets,
    sealing: core.sealing,
    currentVersionCache,
  });
  const stateUploads = new StateUploadService({ ...stateCore, versions: stateVersions, admission: core.uploads });
  const stateMaintenance = new StateMaintenance({
    ...stateCore,
    logger: core.logger.child({ component: 'tfe-state' }),
  });
  const stateOutputs = new StateVersionOutputService({
    repo: repos.outputs,
    versions: stateVersions,
    workspaces,
  });
  const stateDiffs = new StateDiffService({ versions: stateVersions });
  const stateEncryption = new StateEncryption({
    repo: new StateEncryptionRepo({ db: db.kysely }),
    blobs: core.blobs,
    jobs: core.jobs,
    db: db.kysely,
    sealing: core.sealing,
    ...(db.scrub ? { scrub: db.scrub } : {}),
    clock,
    logger: core.logger.child({ component: 'tfe-state-encryption' }),
    metrics: core.metrics,
  });
  core.metrics.onScrape(() => stateEncryption.observe());
  workspaces.setStateVersionHooks({
    latestIsPending: (id) => stateVersions.latestIsPending(id),
    currentIds: (ids) => stateVersions.currentIds(ids),
    onWorkspacesDeleted: (ex, ids) => stateVersions.onWorkspacesDeleted(ex, ids),
  });

  let jobsEnqueued: () => void = () => {};
  // Requests that may have committed an extraction job wake this node's worker at once
  // instead of leaving the job to the next poll (the response is sent after the commit).
  const nudgeAfterStateWrite = (app: FastifyInstance) =>
    app.addHook('onResponse', (request, reply, done) => {
      if (
        request.method !== 'GET' &&
        reply.statusCode < 300 &&
        /state-versions|^\/v1\/object\//.test(request.routeOptions.url ?? '')
      )
        jobsEnqueued();
      done();
    });

  // The audit trail of state reads and writes, token and team changes (docs/audit.md).
  const auditEvents = new AuditEventService({
    repo: new AuditEventRepo({ db: core.db.kysely, kind: core.db.kind }),
    units: core.db.units,
    audit: core.audit,
    clock: core.clock,
    logger: core.logger.child({ component: 'tfe-audit' }),
  });

  return {
    onJobsEnqueued(listener) {
      jobsEnqueued = listener;
    },
    identity,
    organizations,
    teams,
    tokens,
    projects,
    workspaces,
    teamAccess,
    stateVersions,
    stateRepos: repos,
    async registerRoutes(app) {
      registerApiHeadersAndPing(app);
      registerAuthHook(app, identity);
      registerAuditTrailHooks(app, auditEvents, '/api/v2');
      nudgeAfterStateWrite(app);
      registerAuditTrailRoutes(app, auditEvents);
      registerOrganizationRoutes(app, {
        organizations,
        config,
        defaultProject: async (actor, view) =>
          projectResource(await projects.get(actor, view.organization.defaultProjectId)),
      });
      registerIdentityRoutes(app, { identity, tokens, teams, config });
      registerProjectRoutes(app, { projects, config });
      registerWorkspaceRoutes(app, { workspaces, organizations, projects, config });
      registerTeamAccessRoutes(app, { teamAccess });
      await registerStateVersionRoutes(app, {
        versions: stateVersions,
        uploads: stateUploads,
        identity,
        teams,
        publicUrl: config.publicUrl,
      });
      registerStateVersionOutputRoutes(app, { outputs: stateOutputs, config });
      registerStateDiffRoutes(app, { diffs: stateDiffs });
      registerLoginApprovalRoutes(app, { login });
    },
    async registerRootRoutes(app) {
      registerDiscoveryRoutes(app);
      registerAuditTrailHooks(app, auditEvents, '');
      await registerLoginTokenRoute(app, { login });
      nudgeAfterStateWrite(app);
      app.addHook('onReady', async () => {
        const n = await enqueueMissingExtractions({ repos, jobs: core.jobs });
        if (n > 0) core.logger.info({ enqueued: n }, 'enqueued extraction of state versions finalized without it');
        jobsEnqueued();
      });
      await registerStateUploadRoutes(app, { uploads: stateUploads, maxUploadSize: config.maxUploadSize });
      app.addHook('onReady', () => stateMaintenance.scheduleNext());
    },
    // Blobs stored by writes whose version never committed (a crash, a failed commit).
    housekeepingTasks: [(signal) => stateMaintenance.collectOrphanBlobs(signal), () => stateEncryption.schedule()],
    jobHandlers: {
      [EXTRACT_STATE_JOB]: extractStateJob({ repos, blobs: core.blobs }),
      [ENCRYPT_STATE_JOB]: (_payload, ctx) => stateEncryption.run(ctx.signal),
      [STATE_BLOB_GC_JOB]: async (_payload, ctx) => {
        await stateMaintenance.collectBlobs(ctx.signal);
      },
      [STATE_MAINTENANCE_JOB]: async (_payload, ctx) => {
        await stateMaintenance.run(ctx.signal);
        await stateMaintenance.scheduleNext();
      },
    },
  };
}
