import { sql } from 'kysely';
import type { Kysely, Selectable, Updateable } from 'kysely';
import { constraintViolation, isUniqueViolation } from '../../db/constraint-errors.js';
import { OneParamQuery } from '../../db/one-param-query.js';
import { likeEscape } from '../../db/dialect.js';
import type { Database } from '../../db/schema.js';
import type { WorkspacesTable } from '../../db/schema-tfe.js';
import { invalid, notFound } from '../../shared/errors.js';
import type { PageRequest } from '../pagination.js';
import { pageOffset } from '../pagination.js';
import type { LockHolder, Workspace } from './workspace.js';

type Row = Selectable<WorkspacesTable> & { organization_name: string };

function strings(json: string): string[] {
  const v: unknown = JSON.parse(json);
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

function holderOf(r: Pick<Row, 'locked_by_kind' | 'locked_by_id'>): LockHolder | null {
  return r.locked_by_kind && r.locked_by_id
    ? { kind: r.locked_by_kind === 'team' ? 'team' : 'user', id: r.locked_by_id }
    : null;
}

function toWorkspace(r: Row): Workspace {
  const lockedBy = holderOf(r);
  return {
    id: r.id,
    organization: r.organization_name,
    organizationId: r.organization_id,
    projectId: r.project_id ?? '',
    name: r.name,
    description: r.description,
    executionMode: 'local',
    terraformVersion: r.terraform_version,
    autoApply: r.auto_apply === 1,
    allowDestroyPlan: r.allow_destroy_plan === 1,
    fileTriggersEnabled: r.file_triggers_enabled === 1,
    queueAllRuns: r.queue_all_runs === 1,
    speculativeEnabled: r.speculative_enabled === 1,
    globalRemoteState: r.global_remote_state === 1,
    assessmentsEnabled: r.assessments_enabled === 1,
    workingDirectory: r.working_directory,
    triggerPrefixes: strings(r.trigger_prefixes),
    triggerPatterns: strings(r.trigger_patterns),
    tagNames: strings(r.tag_names),
    sourceName: r.source_name,
    sourceUrl: r.source_url,
    locked: lockedBy !== null,
    lockedBy,
    lockedReason: lockedBy ? r.locked_reason : null,
    lockedAt: lockedBy && r.locked_at ? new Date(r.locked_at) : null,
    currentStateVersionId: null,
    createdAt: new Date(r.created_at),
    updatedAt: new Date(r.updated_at),
  };
}

function settable(w: Partial<Workspace>): Updateable<WorkspacesTable> {
  const v: Updateable<WorkspacesTable> = {};
  const b = (x: boolean) => (x ? 1 : 0);
  if (w.name !== undefined) v.name = w.name;
  if (w.description !== undefined) v.description = w.description;
  if (w.executionMode !== undefined) v.execution_mode = w.executionMode;
  if (w.terraformVersion !== undefined) v.terraform_version = w.terraformVersion;
  if (w.autoApply !== undefined) v.auto_apply = b(w.autoApply);
  if (w.allowDestroyPlan !== undefined) v.allow_destroy_plan = b(w.allowDestroyPlan);
  if (w.fileTriggersEnabled !== undefined) v.file_triggers_enabled = b(w.fileTriggersEnabled);
  if (w.queueAllRuns !== undefined) v.queue_all_runs = b(w.queueAllRuns);
  if (w.speculativeEnabled !== undefined) v.speculative_enabled = b(w.speculativeEnabled);
  if (w.globalRemoteState !== undefined) v.global_remote_state = b(w.globalRemoteState);
  if (w.assessmentsEnabled !== undefined) v.assessments_enabled = b(w.assessmentsEnabled);
  if (w.workingDirectory !== undefined) v.working_directory = w.workingDirectory;
  if (w.triggerPrefixes !== undefined) v.trigger_prefixes = JSON.stringify(w.triggerPrefixes);
  if (w.triggerPatterns !== undefined) v.trigger_patterns = JSON.stringify(w.triggerPatterns);
  if (w.tagNames !== undefined) v.tag_names = JSON.stringify(w.tagNames);
  if (w.sourceName !== undefined) v.source_name = w.sourceName;
  if (w.sourceUrl !== undefined) v.source_url = w.sourceUrl;
  if (w.projectId !== undefined) v.project_id = w.projectId;
  return v;
}

/** The domain error for a failed insert or update: a taken name, or a project deleted meanwhile. */
function nameTaken(err: unknown, name: string | undefined): unknown {
  if (isUniqueViolation(err, 'workspaces_organization_id_name_key'))
    return invalid(`workspace name "${name}" has already been taken in this organization`, '/data/attributes/name');
  // The only reference a workspace write can break: its project was deleted since it was checked.
  if (constraintViolation(err)?.type === 'foreign_key')
    return notFound('the project was deleted meanwhile', '/data/relationships/project/data/id');
  return err;
}

/** Filters of the workspace list (reference 7.2). */
export interface WorkspaceFilter {
  /** Substring of the name, case-insensitive. */
  search?: string;
  /** `*` at the start and/or end matches anything; otherwise the exact name. */
  wildcardName?: string;
  /** Every one of these tags. */
  tags?: string[];
  /** None of these tags. */
  excludeTags?: string[];
  /** Only workspaces of this project (`filter[project][id]`). */
  projectId?: string;
}

/** Which workspaces of an organization a list may show. */
export type WorkspaceVisibility = { all: true } | { all: false; teamIds: string[] };

export class WorkspaceRepo {
  constructor(private readonly deps: { db: Kysely<Database> }) {}

  private base(ex: Kysely<Database> = this.deps.db) {
    return ex
      .selectFrom('workspaces as w')
      .innerJoin('organizations as o', 'o.id', 'w.organization_id')
      .selectAll('w')
      .select('o.name as organization_name');
  }

  async insert(w: Workspace): Promise<void> {
    try {
      await this.deps.db
        .insertInto('workspaces')
        .values({
          id: w.id,
          organization_id: w.organizationId,
          project_id: w.projectId,
          name: w.name,
          description: w.description,
          execution_mode: w.executionMode,
          terraform_version: w.terraformVersion,
          auto_apply: w.autoApply ? 1 : 0,
          allow_destroy_plan: w.allowDestroyPlan ? 1 : 0,
          file_triggers_enabled: w.fileTriggersEnabled ? 1 : 0,
          queue_all_runs: w.queueAllRuns ? 1 : 0,
          speculative_enabled: w.speculativeEnabled ? 1 : 0,
          global_remote_state: w.globalRemoteState ? 1 : 0,
          assessments_enabled: w.assessmentsEnabled ? 1 : 0,
          working_directory: w.workingDirectory,
          trigger_prefixes: JSON.stringify(w.triggerPrefixes),
          trigger_patterns: JSON.stringify(w.triggerPatterns),
          tag_names: JSON.stringify(w.tagNames),
          source_name: w.sourceName,
          source_url: w.sourceUrl,
          locked_by_kind: null,
          locked_by_id: null,
          locked_reason: null,
          locked_at: null,
          created_at: w.createdAt.toISOString(),
          updated_at: w.updatedAt.toISOString(),
        })
        .execute();
    } catch (err) {
      throw nameTaken(err, w.name);
    }
  }

  // Every workspace-scoped request starts here, so the query is compiled once.
  private readonly byIdQuery = new OneParamQuery((id: string) => this.base().where('w.id', '=', id));

  async byId(id: string): Promise<Workspace | undefined> {
    const r = await this.byIdQuery.first(this.deps.db, id);
    return r && toWorkspace(r);
  }

  async byName(organizationId: string, name: string): Promise<Workspace | undefined> {
    const r = await this.base()
      .where('w.organization_id', '=', organizationId)
      .where('w.name', '=', name)
      .executeTakeFirst();
    return r && toWorkspace(r);
  }

  async page(
    organizationId: string,
    visibility: WorkspaceVisibility,
    filter: WorkspaceFilter,
    page: PageRequest,
  ): Promise<{ items: Workspace[]; total: number }> {
    if (!visibility.all && visibility.teamIds.length === 0) return { items: [], total: 0 };
    let q = this.base().where('w.organization_id', '=', organizationId);
    if (!visibility.all) {
      const teamIds = visibility.teamIds;
      q = q.where('w.id', 'in', (eb) =>
        eb.selectFrom('tfe_team_workspaces').select('workspace_id').where('team_id', 'in', teamIds),
      );
    }
    if (filter.projectId !== undefined) q = q.where('w.project_id', '=', filter.projectId);
    if (filter.search) {
      const pattern = `%${likeEscape(filter.search.toLowerCase())}%`;
      q = q.where(sql<boolean>`lower(w.name) like ${pattern} escape '\\'`);
    }
    if (filter.wildcardName) {
      const w = filter.wildcardName;
      const core = likeEscape(w.replace(/^\*/, '').replace(/\*$/, '').toLowerCase());
      const pattern = `${w.startsWith('*') ? '%' : ''}${core}${w.endsWith('*') && w.length > 1 ? '%' : ''}`;
      q = q.where(sql<boolean>`lower(w.name) like ${pattern} escape '\\'`);
    }
    // Tags are kept as a JSON array of names that cannot contain quotes, so `"name"` matches one element.
    // lower() on both sides: SQLite's LIKE ignores ASCII case and PostgreSQL's does not.
    const tagPattern = (tag: string) => `%${likeEscape(JSON.stringify(tag.toLowerCase()))}%`;
    for (const tag of filter.tags ?? [])
      q = q.where(sql<boolean>`lower(w.tag_names) like ${tagPattern(tag)} escape '\\'`);
    for (const tag of filter.excludeTags ?? [])
      q = q.where(sql<boolean>`lower(w.tag_names) not like ${tagPattern(tag)} escape '\\'`);
    const total = await q
      .clearSelect()
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    const rows = await q.orderBy('w.name').limit(page.size).offset(pageOffset(page)).execute();
    return { items: rows.map(toWorkspace), total: Number(total.n) };
  }

  async update(id: string, patch: Partial<Workspace>, updatedAt: Date): Promise<void> {
    try {
      await this.deps.db
        .updateTable('workspaces')
        .set({ ...settable(patch), updated_at: updatedAt.toISOString() })
        .where('id', '=', id)
        .execute();
    } catch (err) {
      throw nameTaken(err, patch.name);
    }
  }

  async idsOfOrganization(organizationId: string, ex: Kysely<Database>): Promise<string[]> {
    const rows = await ex.selectFrom('workspaces').select('id').where('organization_id', '=', organizationId).execute();
    return rows.map((r) => r.id);
  }

  async delete(id: string, ex: Kysely<Database>): Promise<boolean> {
    const res = await ex.deleteFrom('workspaces').where('id', '=', id).executeTakeFirst();
    return Number(res.numDeletedRows) > 0;
  }

  /**
   * The lock holder of each workspace of `ids` that exists, read in `ex`. With `share`
   * (PostgreSQL) each row stays share-locked until `ex` ends, so that no lock or unlock of
   * these workspaces commits in between; rows are taken in id order, as by every reader.
   */
  async lockHolders(
    ex: Kysely<Database>,
    ids: readonly string[],
    share: boolean,
  ): Promise<Map<string, LockHolder | null>> {
    if (ids.length === 0) return new Map();
    let q = ex
      .selectFrom('workspaces')
      .select(['id', 'locked_by_kind', 'locked_by_id'])
      .where('id', 'in', ids)
      .orderBy('id');
    if (share) q = q.forShare();
    return new Map((await q.execute()).map((r) => [r.id, holderOf(r)]));
  }

  /** Takes the lock only if nobody holds it; false when someone does. */
  async lock(id: string, holder: LockHolder, reason: string | null, at: Date): Promise<boolean> {
    const res = await this.deps.db
      .updateTable('workspaces')
      .set({ locked_by_kind: holder.kind, locked_by_id: holder.id, locked_reason: reason, locked_at: at.toISOString() })
      .where('id', '=', id)
      .where('locked_by_kind', 'is', null)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  /** Releases the lock only if `holder` holds it (or anyone does, when holder is null). */
  async unlock(id: string, holder: LockHolder | null): Promise<boolean> {
    let q = this.deps.db
      .updateTable('workspaces')
      .set({ locked_by_kind: null, locked_by_id: null, locked_reason: null, locked_at: null })
      .where('id', '=', id)
      .where('locked_by_kind', 'is not', null);
    if (holder) q = q.where('locked_by_kind', '=', holder.kind).where('locked_by_id', '=', holder.id);
    const res = await q.executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  /** Display name of a lock holder (username or team name). */
  async holderName(holder: LockHolder): Promise<string> {
    if (holder.kind === 'user') {
      const r = await this.deps.db
        .selectFrom('tfe_users')
        .select('username')
        .where('id', '=', holder.id)
        .executeTakeFirst();
      return r?.username ?? holder.id;
    }
    const r = await this.deps.db.selectFrom('tfe_teams').select('name').where('id', '=', holder.id).executeTakeFirst();
    return r?.name ?? holder.id;
  }
}
