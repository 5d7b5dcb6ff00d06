import type { Clock } from '../../shared/clock.js';
import { conflict, forbidden, notFound } from '../../shared/errors.js';
import { tfeId } from '../../shared/ids.js';
import type { Actor } from '../identity/actor.js';
import type { IdentityService } from '../identity/identity-service.js';
import type { OrganizationAccess } from '../identity/permissions.js';
import type { OrganizationService } from '../organizations/organization-service.js';
import type { Page, PageRequest } from '../pagination.js';
import type { ProjectFilter, ProjectRepo } from './project-repo.js';
import { DEFAULT_PROJECT_NAME, checkProjectInput, projectPermissions } from './project.js';
import type { Project, ProjectInput, ProjectView } from './project.js';

/** `filter[permissions][…]` of the list: only projects where the caller may do that. */
export interface ProjectPermissionFilter {
  createWorkspace?: boolean;
  update?: boolean;
}

/**
 * Projects of an organization. Team access to projects is not offered, so what a caller
 * sees and may do follows its organization access (permissions.ts): owners, the
 * organization token and teams that read or manage workspaces or projects see every
 * project; other members see the projects holding a workspace one of their teams has a
 * grant on. Every organization gets its default project in its create transaction.
 */
export class ProjectService {
  constructor(
    private readonly deps: {
      repo: ProjectRepo;
      organizations: OrganizationService;
      identity: IdentityService;
      clock: Clock;
    },
  ) {
    deps.organizations.onCreate(async (ex, org) => {
      await deps.repo.insert(
        {
          id: org.defaultProjectId,
          organizationId: org.id,
          name: DEFAULT_PROJECT_NAME,
          description: null,
          createdAt: org.createdAt,
        },
        ex,
      );
    });
  }

  private async teamIds(actor: Actor, organizationId: string): Promise<string[]> {
    return (await this.deps.identity.teamsOf(actor, organizationId)).map((t) => t.id);
  }

  /** Whether the caller sees the project: all of them with readAllProjects, else through a workspace grant. */
  private async sees(actor: Actor, access: OrganizationAccess, project: Project): Promise<boolean> {
    if (access.readAllProjects) return true;
    return this.deps.repo.grantedThrough(project.id, await this.teamIds(actor, project.organizationId));
  }

  async list(
    actor: Actor,
    organization: string,
    q: ProjectFilter & { page: PageRequest; permissions?: ProjectPermissionFilter },
  ): Promise<Page<ProjectView>> {
    const { organization: org, permissions } = await this.deps.organizations.authorize(actor, organization);
    const empty = { items: [], number: q.page.number, size: q.page.size, totalCount: 0 };
    if (q.permissions?.createWorkspace && !permissions.createWorkspace) return empty;
    if (q.permissions?.update && !permissions.manageProjects) return empty;
    const visibility = permissions.readAllProjects
      ? ({ all: true } as const)
      : ({ all: false, teamIds: await this.teamIds(actor, org.id) } as const);
    const { items, total } = await this.deps.repo.page(org.id, visibility, q, q.page);
    return {
      items: items.map((project) => ({ project, permissions: projectPermissions(permissions, project) })),
      number: q.page.number,
      size: q.page.size,
      totalCount: total,
    };
  }

  /** A project the caller sees; not_found otherwise (missing or hidden alike). */
  async get(actor: Actor, id: string): Promise<ProjectView> {
    const project = await this.deps.repo.byId(id);
    if (!project) throw notFound(`project ${id} not found`);
    const { permissions } = await this.deps.organizations.authorize(actor, project.organization).catch(() => {
      throw notFound(`project ${id} not found`);
    });
    if (!(await this.sees(actor, permissions, project))) throw notFound(`project ${id} not found`);
    return { project, permissions: projectPermissions(permissions, project) };
  }

  /** Creates a project (owners, the organization token, teams that manage projects). */
  async create(actor: Actor, organization: string, input: ProjectInput): Promise<ProjectView> {
    const { organization: org, permissions } = await this.deps.organizations.authorize(
      actor,
      organization,
      'manageProjects',
    );
    checkProjectInput(input, true);
    const id = tfeId('prj');
    await this.deps.repo.insert({
      id,
      organizationId: org.id,
      name: input.name as string,
      description: input.description ?? null,
      createdAt: this.deps.clock.now(),
    });
    const project = (await this.deps.repo.byId(id)) as Project;
    return { project, permissions: projectPermissions(permissions, project) };
  }

  async update(actor: Actor, id: string, input: ProjectInput): Promise<ProjectView> {
    const view = await this.get(actor, id);
    if (!view.permissions.canUpdate) throw forbidden(`not allowed to update project ${id}`);
    checkProjectInput(input, false);
    if (input.name !== undefined || input.description !== undefined)
      await this.deps.repo.update(id, input, this.deps.clock.now());
    return this.get(actor, id);
  }

  /** Deletes an empty project; the default project and one holding workspaces are refused (409). */
  async delete(actor: Actor, id: string): Promise<void> {
    const view = await this.get(actor, id);
    if (!view.permissions.canUpdate) throw forbidden(`not allowed to delete project ${id}`);
    if (view.project.isDefault) throw conflict("the organization's default project cannot be deleted");
    if (!(await this.deps.repo.deleteEmpty(id))) {
      if (await this.deps.repo.byId(id)) throw conflict('the project holds workspaces; move or delete them first');
      throw notFound(`project ${id} not found`);
    }
  }

  /**
   * The project a workspace of `organizationId` goes to: `requested`, or the default one.
   * A requested project must be one the caller sees in that organization (404 naming the
   * relationship otherwise, as JSON:API answers a reference to a missing resource).
   */
  async placement(actor: Actor, organization: string, requested: string | undefined): Promise<string> {
    const { organization: org } = await this.deps.organizations.authorize(actor, organization);
    if (requested === undefined) return org.defaultProjectId;
    const pointer = '/data/relationships/project/data/id';
    const view = await this.get(actor, requested).catch(() => undefined);
    if (!view || view.project.organizationId !== org.id)
      throw notFound(`project ${requested} not found in organization ${org.name}`, pointer);
    if (!view.permissions.canCreateWorkspace)
      throw forbidden(`not allowed to place workspaces in project ${requested}`);
    return view.project.id;
  }

  /** Projects by id for the workspaces' `include=project` (those already shown through their workspaces). */
  async byIds(actor: Actor, ids: string[]): Promise<ProjectView[]> {
    const projects = await this.deps.repo.byIds([...new Set(ids)]);
    const views: ProjectView[] = [];
    for (const project of projects) {
      const { permissions } = await this.deps.organizations.authorize(actor, project.organization);
      views.push({ project, permissions: projectPermissions(permissions, project) });
    }
    return views;
  }
}
