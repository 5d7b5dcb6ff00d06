import { sql } from 'kysely';
import type { Kysely, Selectable } from 'kysely';
import { constraintViolation, isUniqueViolation } from '../../db/constraint-errors.js';
import { likeEscape } from '../../db/dialect.js';
import type { Database } from '../../db/schema.js';
import type { TfeProjectsTable } from '../../db/schema-tfe.js';
import { conflict, invalid } from '../../shared/errors.js';
import type { PageRequest } from '../pagination.js';
import { pageOffset } from '../pagination.js';
import type { Project } from './project.js';

type Row = Selectable<TfeProjectsTable> & {
  organization_name: string;
  default_project_id: string | null;
  workspace_count: number;
};

function toProject(r: Row): Project {
  return {
    id: r.id,
    organizationId: r.organization_id,
    organization: r.organization_name,
    name: r.name,
    description: r.description,
    isDefault: r.default_project_id === r.id,
    workspaceCount: Number(r.workspace_count),
    createdAt: new Date(r.created_at),
    updatedAt: new Date(r.updated_at),
  };
}

function nameTaken(err: unknown, name: string | undefined): unknown {
  return isUniqueViolation(err, 'tfe_projects_organization_id_name_key')
    ? invalid(`a project named "${name}" already exists in this organization`, '/data/attributes/name')
    : err;
}

/** Which projects of an organization a caller sees: all, or those holding a workspace granted to its teams. */
export type ProjectVisibility = { all: true } | { all: false; teamIds: string[] };

export interface ProjectFilter {
  /** Exact names, ignoring case (`filter[names]`). */
  names?: string[];
  /** Substring of the name, ignoring case (`q`); unused when `names` is given. */
  query?: string;
  sort: 'asc' | 'desc';
}

/** All SQL of projects. */
export class ProjectRepo {
  constructor(private readonly deps: { db: Kysely<Database> }) {}

  private base(ex: Kysely<Database> = this.deps.db) {
    return ex
      .selectFrom('tfe_projects as p')
      .innerJoin('organizations as o', 'o.id', 'p.organization_id')
      .selectAll('p')
      .select(['o.name as organization_name', 'o.default_project_id'])
      .select((eb) =>
        eb
          .selectFrom('workspaces as w')
          .whereRef('w.project_id', '=', 'p.id')
          .select((e2) => e2.fn.countAll<number>().as('n'))
          .as('workspace_count'),
      );
  }

  async insert(
    p: Pick<Project, 'id' | 'organizationId' | 'name' | 'description' | 'createdAt'>,
    ex: Kysely<Database> = this.deps.db,
  ): Promise<void> {
    try {
      await ex
        .insertInto('tfe_projects')
        .values({
          id: p.id,
          organization_id: p.organizationId,
          name: p.name,
          description: p.description,
          created_at: p.createdAt.toISOString(),
          updated_at: p.createdAt.toISOString(),
        })
        .execute();
    } catch (err) {
      throw nameTaken(err, p.name);
    }
  }

  async byId(id: string): Promise<Project | undefined> {
    const r = await this.base().where('p.id', '=', id).executeTakeFirst();
    return r && toProject(r as Row);
  }

  async byIds(ids: string[]): Promise<Project[]> {
    if (ids.length === 0) return [];
    const rows = await this.base().where('p.id', 'in', ids).execute();
    return rows.map((r) => toProject(r as Row));
  }

  async page(
    organizationId: string,
    visibility: ProjectVisibility,
    filter: ProjectFilter,
    page: PageRequest,
  ): Promise<{ items: Project[]; total: number }> {
    if (!visibility.all && visibility.teamIds.length === 0) return { items: [], total: 0 };
    let q = this.base().where('p.organization_id', '=', organizationId);
    if (!visibility.all) {
      const teamIds = visibility.teamIds;
      q = q.where('p.id', 'in', (eb) =>
        eb
          .selectFrom('workspaces as w')
          .innerJoin('tfe_team_workspaces as tw', 'tw.workspace_id', 'w.id')
          .select('w.project_id')
          .where('tw.team_id', 'in', teamIds),
      );
    }
    if (filter.names) {
      q = q.where(
        sql<string>`lower(p.name)`,
        'in',
        filter.names.map((n) => n.toLowerCase()),
      );
    } else if (filter.query) {
      const pattern = `%${likeEscape(filter.query.toLowerCase())}%`;
      q = q.where(sql<boolean>`lower(p.name) like ${pattern} escape '\\'`);
    }
    const total = await q
      .clearSelect()
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    const rows = await q
      .orderBy(sql`lower(p.name)`, filter.sort)
      .orderBy('p.id')
      .limit(page.size)
      .offset(pageOffset(page))
      .execute();
    return { items: rows.map((r) => toProject(r as Row)), total: Number(total.n) };
  }

  /** Whether one of the teams holds a grant on a workspace of the project. */
  async grantedThrough(projectId: string, teamIds: string[]): Promise<boolean> {
    if (teamIds.length === 0) return false;
    const r = await this.deps.db
      .selectFrom('workspaces as w')
      .innerJoin('tfe_team_workspaces as tw', 'tw.workspace_id', 'w.id')
      .select('w.id')
      .where('w.project_id', '=', projectId)
      .where('tw.team_id', 'in', teamIds)
      .limit(1)
      .executeTakeFirst();
    return r !== undefined;
  }

  async update(id: string, patch: { name?: string; description?: string | null }, at: Date): Promise<void> {
    try {
      await this.deps.db
        .updateTable('tfe_projects')
        .set({
          ...(patch.name !== undefined ? { name: patch.name } : {}),
          ...(patch.description !== undefined ? { description: patch.description } : {}),
          updated_at: at.toISOString(),
        })
        .where('id', '=', id)
        .execute();
    } catch (err) {
      throw nameTaken(err, patch.name);
    }
  }

  /**
   * Deletes the project unless it holds workspaces: the statement checks, and the foreign
   * key of `workspaces.project_id` refuses one that a concurrent create or move put there.
   */
  async deleteEmpty(id: string): Promise<boolean> {
    try {
      const res = await this.deps.db
        .deleteFrom('tfe_projects')
        .where('id', '=', id)
        .where((eb) => eb.not(eb.exists(eb.selectFrom('workspaces').select('id').where('project_id', '=', id))))
        .executeTakeFirst();
      return Number(res.numDeletedRows) > 0;
    } catch (err) {
      if (constraintViolation(err)?.type === 'foreign_key')
        throw conflict('the project holds workspaces; move or delete them first');
      throw err;
    }
  }
}
