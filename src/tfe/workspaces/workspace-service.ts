import type { Kysely } from 'kysely';
import type { Db } from '../../db/database.js';
import type { Database } from '../../db/schema.js';
import type { Clock } from '../../shared/clock.js';
import type { PeerChanges } from '../../shared/peer-changes.js';
import { DomainError, conflict, forbidden, invalid, notFound } from '../../shared/errors.js';
import { tfeId } from '../../shared/ids.js';
import type { Actor } from '../identity/actor.js';
import { actorAccessKey } from '../identity/actor.js';
import { TOKEN_ACTOR_TTL_MS } from '../identity/token-actor-cache.js';
import { RecentCache } from '../recent-cache.js';
import { SharedReads } from '../../shared/shared-reads.js';
import type { IdentityService } from '../identity/identity-service.js';
import { allows, organizationAccess, workspaceAccess } from '../identity/permissions.js';
import type { WorkspaceAccess } from '../identity/permissions.js';
import type { OrganizationService } from '../organizations/organization-service.js';
import type { Page, PageRequest } from '../pagination.js';
import type { ProjectService } from '../projects/project-service.js';
import {
  PENDING_STATE_VERSION_MESSAGE,
  heldByOtherMessage,
  lockHolderOf,
  lockRefusal,
  unlockCheck,
} from './workspace-lock.js';
import type { WorkspaceFilter, WorkspaceRepo } from './workspace-repo.js';
import { checkWorkspaceInput, permissionsFor } from './workspace.js';
import type { LockHolder, Workspace, WorkspaceInput, WorkspaceNeed, WorkspaceView } from './workspace.js';

/**
 * Answers whether the latest state version of a workspace is still pending (created
 * without content and not yet uploaded). While it says true, a normal unlock is refused
 * with "latest state version is still pending" (reference 7.4); force-unlock still works.
 */
export type PendingStateVersionCheck = (workspaceId: string) => Promise<boolean>;

/**
 * What the state versions module plugs into workspaces (set by the composition root,
 * src/tfe/tfe-services.ts, with `workspaces.setStateVersionHooks(...)`):
 *  - `latestIsPending(workspaceId)`: true while the latest state version is pending;
 *    a normal unlock is then refused (400/503 "latest state version is still pending",
 *    reference 7.4); force-unlock still works.
 *  - `currentIds(workspaceIds)`: current state version id per workspace (absent = none),
 *    for the `current-state-version` relationship of workspace documents.
 *  - `onWorkspacesDeleted(executor, workspaceIds)`: runs inside the transaction that
 *    deletes workspaces (directly or through their organization) so their state goes too.
 */
export interface StateVersionHooks {
  latestIsPending: PendingStateVersionCheck;
  currentIds(workspaceIds: string[]): Promise<Map<string, string>>;
  onWorkspacesDeleted(executor: Kysely<Database>, workspaceIds: string[]): Promise<void>;
}

/**
 * How long a permission answer is reused: the token cache's bound, so a revocation elsewhere is seen as soon in both.
 */
export const ACCESS_TTL_MS = TOKEN_ACTOR_TTL_MS;

/** A workspace addressed by id (`ws-…`) or by organization and name. */
export type WorkspaceRef = { id: string } | { organization: string; name: string };

/**
 * Thrown by unlock while the latest state version is pending; `meta.stateVersionPending` lets the route pick 400 or
 * 503.
 */
export function isPendingUnlockError(err: unknown): boolean {
  return err instanceof DomainError && err.meta?.stateVersionPending === true;
}

/**
 * Workspaces: CRUD, lookups, locking, and the authorization other TFE modules use.
 *
 * For the state versions module:
 *   - `authorize(actor, workspaceId, need)` → Workspace, or throws not_found (unknown
 *     workspace, or one the actor cannot read) or forbidden (readable, but `need` is not
 *     allowed). Both render as 404 under /api/v2: unauthorized reads look like missing
 *     resources. `need` 'read-and-write-state-versions' also refuses organization tokens.
 *     'organization-owner' is for the backing-data actions.
 *   - `assertWritable(actor, ws)` throws conflict (409) unless `ws` is locked by `actor`
 *     (the user, or the team of a team token).
 *   - `setStateVersionHooks(hooks)` plugs in the pending-upload rule for unlock, the
 *     current state version lookup and cascade on delete (StateVersionHooks above).
 */
/** The key of an actor's permissions on a workspace, in the permission cache and its reads in flight. */
function accessKey(actor: Actor, workspaceId: string): string {
  return `${actorAccessKey(actor)}\u0000${workspaceId}`;
}

export class WorkspaceService {
  private hooks: Partial<StateVersionHooks> = {};
  /**
   * (actor, workspace) → the actor's permissions there, for ACCESS_TTL_MS. Only the
   * permission answer is kept, never the workspace (its lock must be read fresh).
   * Changes through this node clear it at once (identity changes, team access, workspace
   * deletion), as do commits by another process on SQLite; changes made on another
   * PostgreSQL node are seen within the TTL, as for the token cache (decision 0014).
   */
  private readonly accessCache: RecentCache<WorkspaceAccess>;

  constructor(
    private readonly deps: {
      db: Db;
      repo: WorkspaceRepo;
      organizations: OrganizationService;
      identity: IdentityService;
      projects: ProjectService;
      clock: Clock;
      peers?: PeerChanges;
    },
  ) {
    deps.organizations.onDelete(async (ex, organizationId) => {
      const ids = await deps.repo.idsOfOrganization(organizationId, ex);
      if (ids.length > 0 && this.hooks.onWorkspacesDeleted) await this.hooks.onWorkspacesDeleted(ex, ids);
    });
    this.accessCache = new RecentCache({
      clock: deps.clock,
      ttlMs: ACCESS_TTL_MS,
      max: 10_000,
      externalChanges: deps.db.externalChanges,
      peers: deps.peers,
    });
    deps.identity.onIdentityChange(() => this.accessCache.clear());
  }

  /** Forgets every cached permission answer, here and on the other workers; call after a change of team access. */
  forgetAccess(): void {
    this.accessCache.clear();
    this.deps.peers?.changed();
  }

  setStateVersionHooks(hooks: Partial<StateVersionHooks>): void {
    this.hooks = { ...this.hooks, ...hooks };
  }

  private async access(actor: Actor, ws: Workspace): Promise<WorkspaceAccess> {
    const key = accessKey(actor, ws.id);
    const cached = this.accessCache.get(key);
    if (cached) return cached;
    const since = this.accessCache.epoch();
    const { facts, grants } = await this.deps.identity.accessFacts(actor, ws.organizationId, [ws.id]);
    const access = workspaceAccess({ ...facts, grants: grants.get(ws.id) ?? [] });
    // Only answers that allow something: a refusal is recomputed, so a new grant works at once.
    if (access.read) this.accessCache.set(key, Object.freeze(access), since);
    return access;
  }

  private async withCurrent(list: Workspace[]): Promise<Workspace[]> {
    if (!this.hooks.currentIds || list.length === 0) return list;
    const current = await this.hooks.currentIds(list.map((w) => w.id));
    return list.map((w) => ({ ...w, currentStateVersionId: current.get(w.id) ?? null }));
  }

  private async view(actor: Actor, ws: Workspace, access?: WorkspaceAccess): Promise<WorkspaceView> {
    const [withCurrent] = await this.withCurrent([ws]);
    return {
      workspace: withCurrent as Workspace,
      permissions: permissionsFor(access ?? (await this.access(actor, ws))),
    };
  }

  private async find(ref: WorkspaceRef): Promise<Workspace | undefined> {
    if ('id' in ref) return this.deps.repo.byId(ref.id);
    const org = await this.deps.organizations.byNameUnchecked(ref.organization);
    return org ? this.deps.repo.byName(org.id, ref.name) : undefined;
  }

  /** Loads a workspace and checks `need`; missing and not allowed both throw not_found. */
  private async load(
    actor: Actor,
    ref: WorkspaceRef,
    need: WorkspaceNeed,
  ): Promise<{ ws: Workspace; access: WorkspaceAccess }> {
    return this.#checked(await this.#findWithAccess(actor, ref), ref, need);
  }

  async #findWithAccess(
    actor: Actor,
    ref: WorkspaceRef,
  ): Promise<{ ws: Workspace; access: WorkspaceAccess } | undefined> {
    const ws = await this.find(ref);
    return ws && { ws, access: await this.access(actor, ws) };
  }

  /** Throws not_found (missing, or not readable) or forbidden (readable, but not `need`). */
  #checked<T extends { access: WorkspaceAccess }>(found: T | undefined, ref: WorkspaceRef, need: WorkspaceNeed): T {
    const label = 'id' in ref ? ref.id : `${ref.organization}/${ref.name}`;
    if (!found || !found.access.read) throw notFound(`workspace ${label} not found`);
    if (!allows(found.access, need)) throw forbidden(`not allowed: ${need} on workspace ${label}`);
    return found;
  }

  /** The workspace if the actor may do `need` on it; throws not_found otherwise. */
  async authorize(actor: Actor, workspaceId: string, need: WorkspaceNeed): Promise<Workspace> {
    const { ws } = await this.load(actor, { id: workspaceId }, need);
    return ws;
  }

  /**
   * The id of the workspace if the actor may do `need` on it, without reading the
   * workspace when a recent permission answer says yes (the hot reads). The answer may
   * be up to ACCESS_TTL_MS old for changes made elsewhere (see `accessCache`), and a
   * workspace deleted on another node may still pass for that long: callers read what
   * they need next by this id and find nothing.
   */
  async authorizedId(actor: Actor, workspaceId: string, need: WorkspaceNeed): Promise<string> {
    if (this.#recentlyAllowed(actor, workspaceId, need)) return workspaceId;
    // Requests that arrive while this permission is read share the read (the entry lapses
    // under load). Only the permission is used here, never the workspace's lock, which a
    // read begun before a lock change would have stale.
    const ref = { id: workspaceId };
    const found = await this.#permissionReads.run(
      accessKey(actor, workspaceId),
      this.accessCache.epoch(),
      () => this.#findWithAccess(actor, ref),
      (f) => f?.access.read === true,
    );
    return this.#checked(found, ref, need).ws.id;
  }

  /** Permission reads in flight for authorizedId, by actor and workspace. */
  readonly #permissionReads = new SharedReads<{ ws: Workspace; access: WorkspaceAccess } | undefined>();

  /** Whether a recent permission answer (accessCache) lets the actor do `need` on the workspace. */
  #recentlyAllowed(actor: Actor, workspaceId: string, need: WorkspaceNeed): boolean {
    const cached = this.accessCache.get(accessKey(actor, workspaceId));
    return cached !== undefined && allows(cached, need);
  }

  /** Throws conflict unless the workspace is locked by the actor (state writes need the lock). */
  assertWritable(actor: Actor, ws: Workspace): void {
    const refused = lockRefusal(ws, actor);
    if (refused) throw refused;
  }

  /**
   * The id of a workspace the actor may write state versions to, for a write that checks
   * the lock in its own transaction (`lockHoldersIn`). The workspace is read only when no
   * recent permission answer exists (as for `authorizedId`), and its lock is then checked
   * at once too, so that a write to an unlocked workspace is refused before its content is
   * looked at.
   */
  async stateWriteId(actor: Actor, workspaceId: string): Promise<string> {
    const need = 'read-and-write-state-versions';
    if (this.#recentlyAllowed(actor, workspaceId, need)) return workspaceId;
    const ws = await this.authorize(actor, workspaceId, need);
    this.assertWritable(actor, ws);
    return ws.id;
  }

  /**
   * Inside a write transaction: the lock holders of these workspaces, share-locked on
   * PostgreSQL until the transaction ends (no lock or unlock commits in between). A
   * workspace that no longer exists is absent from the map.
   */
  lockHoldersIn(trx: Kysely<Database>, workspaceIds: readonly string[]): Promise<Map<string, LockHolder | null>> {
    return this.deps.repo.lockHolders(trx, workspaceIds, this.deps.db.kind === 'postgres');
  }

  async getById(actor: Actor, id: string): Promise<WorkspaceView> {
    const { ws, access } = await this.load(actor, { id }, 'read');
    return this.view(actor, ws, access);
  }

  async getByName(actor: Actor, organization: string, name: string): Promise<WorkspaceView> {
    // Whoever may read a workspace may read its organization, so load() alone decides.
    const { ws, access } = await this.load(actor, { organization, name }, 'read');
    return this.view(actor, ws, access);
  }

  async get(actor: Actor, ref: WorkspaceRef): Promise<WorkspaceView> {
    return 'id' in ref ? this.getById(actor, ref.id) : this.getByName(actor, ref.organization, ref.name);
  }

  /** Workspaces of an organization the actor can see, by name; `search` matches a substring of the name. */
  async list(
    actor: Actor,
    organization: string,
    opts: WorkspaceFilter & { page: PageRequest },
  ): Promise<Page<WorkspaceView>> {
    const { organization: org } = await this.deps.organizations.authorize(actor, organization);
    const teams = await this.deps.identity.teamsOf(actor, org.id);
    const orgAccess = organizationAccess(await this.deps.identity.organizationFacts(actor, org.id));
    const visibility = orgAccess.readAllWorkspaces
      ? ({ all: true } as const)
      : ({ all: false, teamIds: teams.map((t) => t.id) } as const);
    const { items, total } = await this.deps.repo.page(org.id, visibility, opts, opts.page);
    const { facts, grants } = await this.deps.identity.accessFacts(
      actor,
      org.id,
      items.map((w) => w.id),
    );
    const withCurrent = await this.withCurrent(items);
    return {
      items: withCurrent.map((w) => ({
        workspace: w,
        permissions: permissionsFor(workspaceAccess({ ...facts, grants: grants.get(w.id) ?? [] })),
      })),
      number: opts.page.number,
      size: opts.page.size,
      totalCount: total,
    };
  }

  /**
   * Creates a workspace (local execution only: this server runs nothing remotely) in the
   * project named by `relationships.project`, or the organization's default project.
   */
  async create(actor: Actor, organization: string, input: WorkspaceInput): Promise<WorkspaceView> {
    const { organization: org } = await this.deps.organizations.authorize(actor, organization, 'createWorkspace');
    if (input.name === undefined) throw invalid('name is required', '/data/attributes/name');
    checkWorkspaceInput(input);
    const projectId = await this.deps.projects.placement(actor, org.name, input.projectId);
    const now = this.deps.clock.now();
    const ws: Workspace = {
      id: tfeId('ws'),
      organization: org.name,
      organizationId: org.id,
      projectId,
      name: input.name,
      description: input.description ?? null,
      executionMode: 'local',
      terraformVersion: input.terraformVersion ?? 'latest',
      autoApply: input.autoApply ?? false,
      allowDestroyPlan: input.allowDestroyPlan ?? true,
      fileTriggersEnabled: input.fileTriggersEnabled ?? true,
      queueAllRuns: input.queueAllRuns ?? false,
      speculativeEnabled: input.speculativeEnabled ?? true,
      globalRemoteState: input.globalRemoteState ?? false,
      assessmentsEnabled: input.assessmentsEnabled ?? false,
      workingDirectory: input.workingDirectory ?? '',
      triggerPrefixes: input.triggerPrefixes ?? [],
      triggerPatterns: input.triggerPatterns ?? [],
      tagNames: input.tagNames ?? [],
      sourceName: input.sourceName ?? null,
      sourceUrl: input.sourceUrl ?? null,
      locked: false,
      lockedBy: null,
      lockedReason: null,
      lockedAt: null,
      currentStateVersionId: null,
      createdAt: now,
      updatedAt: now,
    };
    await this.deps.repo.insert(ws);
    return this.view(actor, ws);
  }

  /** Partial update; a rename keeps the id; `relationships.project` moves it to another project. */
  async update(actor: Actor, ref: WorkspaceRef, input: WorkspaceInput): Promise<WorkspaceView> {
    const { ws } = await this.load(actor, ref, 'admin');
    checkWorkspaceInput(input);
    const projectId =
      input.projectId === undefined || input.projectId === ws.projectId
        ? undefined
        : await this.deps.projects.placement(actor, ws.organization, input.projectId);
    const patch: Partial<Workspace> = {
      projectId,
      name: input.name,
      description: input.description,
      terraformVersion: input.terraformVersion,
      autoApply: input.autoApply,
      allowDestroyPlan: input.allowDestroyPlan,
      fileTriggersEnabled: input.fileTriggersEnabled,
      queueAllRuns: input.queueAllRuns,
      speculativeEnabled: input.speculativeEnabled,
      globalRemoteState: input.globalRemoteState,
      assessmentsEnabled: input.assessmentsEnabled,
      workingDirectory: input.workingDirectory === null ? '' : input.workingDirectory,
      triggerPrefixes: input.triggerPrefixes,
      triggerPatterns: input.triggerPatterns,
      tagNames: input.tagNames,
      sourceName: input.sourceName,
      sourceUrl: input.sourceUrl,
    };
    if (Object.values(patch).some((v) => v !== undefined))
      await this.deps.repo.update(ws.id, patch, this.deps.clock.now());
    return this.getById(actor, ws.id);
  }

  /** Deletes the workspace and (through the state versions hook) its state. */
  async delete(actor: Actor, ref: WorkspaceRef): Promise<void> {
    const { ws } = await this.load(actor, ref, 'admin');
    await this.deps.db.units.readWrite(async (trx) => {
      if (this.hooks.onWorkspacesDeleted) await this.hooks.onWorkspacesDeleted(trx, [ws.id]);
      await this.deps.repo.delete(ws.id, trx);
    });
    this.forgetAccess();
  }

  /** Adds flat tags (`POST /workspaces/:id/relationships/tags`); existing ones are kept. */
  async addTags(actor: Actor, id: string, tags: string[]): Promise<void> {
    const { ws } = await this.load(actor, { id }, 'admin');
    const next = [...new Set([...ws.tagNames, ...tags])];
    checkWorkspaceInput({ tagNames: next });
    if (next.length !== ws.tagNames.length)
      await this.deps.repo.update(ws.id, { tagNames: next }, this.deps.clock.now());
  }

  async removeTags(actor: Actor, id: string, tags: string[]): Promise<void> {
    const { ws } = await this.load(actor, { id }, 'admin');
    const drop = new Set(tags);
    const next = ws.tagNames.filter((t) => !drop.has(t));
    if (next.length !== ws.tagNames.length)
      await this.deps.repo.update(ws.id, { tagNames: next }, this.deps.clock.now());
  }

  async tags(actor: Actor, id: string): Promise<string[]> {
    const { ws } = await this.load(actor, { id }, 'read');
    return ws.tagNames;
  }

  /** Locks for the actor; 409 when anyone (the actor included) already holds the lock. */
  async lock(actor: Actor, id: string, reason: string | null): Promise<WorkspaceView> {
    const { ws, access } = await this.load(actor, { id }, 'lock');
    const holder = lockHolderOf(actor);
    if (!holder) throw forbidden('organization tokens cannot lock workspaces');
    const taken = await this.deps.repo.lock(ws.id, holder, reason, this.deps.clock.now());
    if (!taken) throw conflict('workspace already locked');
    return this.view(actor, (await this.deps.repo.byId(ws.id)) as Workspace, access);
  }

  /**
   * Releases the actor's own lock. 409 when unlocked or held by someone else; refused
   * (not 409) while the latest state version is still pending.
   */
  async unlock(actor: Actor, id: string): Promise<WorkspaceView> {
    const { ws, access } = await this.load(actor, { id }, 'lock');
    await this.explainUnlockRefusal(ws, actor);
    if (this.hooks.latestIsPending && (await this.hooks.latestIsPending(ws.id))) {
      throw new DomainError('unavailable', PENDING_STATE_VERSION_MESSAGE, { meta: { stateVersionPending: true } });
    }
    if (!(await this.deps.repo.unlock(ws.id, lockHolderOf(actor)))) {
      // The lock changed hands between the read and the write.
      const now = await this.deps.repo.byId(ws.id);
      if (now) await this.explainUnlockRefusal(now, actor);
      throw conflict('workspace already unlocked');
    }
    return this.view(actor, (await this.deps.repo.byId(ws.id)) as Workspace, access);
  }

  private async explainUnlockRefusal(ws: Workspace, actor: Actor): Promise<void> {
    const check = unlockCheck(ws, actor);
    if (check === 'not-locked') throw conflict('workspace already unlocked');
    if (check === 'held-by-other' && ws.lockedBy)
      throw conflict(heldByOtherMessage(ws.lockedBy, await this.deps.repo.holderName(ws.lockedBy)));
  }

  /** Releases anyone's lock (admins), even while a state version is pending. */
  async forceUnlock(actor: Actor, id: string): Promise<WorkspaceView> {
    const { ws, access } = await this.load(actor, { id }, 'admin');
    if (!(await this.deps.repo.unlock(ws.id, null))) throw conflict('workspace already unlocked');
    return this.view(actor, (await this.deps.repo.byId(ws.id)) as Workspace, access);
  }
}
