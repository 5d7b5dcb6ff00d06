import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Config } from '../../config.js';
import { invalid } from '../../shared/errors.js';
import { requireActor } from '../identity/request-actor.js';
import { JsonApiInput } from '../jsonapi-input.js';
import { organizationResource } from '../organizations/organization-jsonapi.js';
import type { OrganizationService } from '../organizations/organization-service.js';
import { checkProjectType } from '../projects/project.js';
import { projectResource } from '../projects/project-jsonapi.js';
import type { ProjectService } from '../projects/project-service.js';
import { includes, listDocument, pageRequest, query, sendDocument, sendNoContent } from '../route-helpers.js';
import type { WorkspaceInput, WorkspaceView } from './workspace.js';
import { workspaceResource } from './workspace-jsonapi.js';
import { isPendingUnlockError } from './workspace-service.js';
import type { WorkspaceRef, WorkspaceService } from './workspace-service.js';

type ByName = { org: string; name: string };
type ById = { id: string };

/** Include values HCP documents for workspaces; `organization` and `project` add something here. */
const WORKSPACE_INCLUDES = [
  'organization',
  'current_configuration_version',
  'current_configuration_version.ingress_attributes',
  'current_run',
  'current_run.plan',
  'current_run.configuration_version',
  'current_run.configuration_version.ingress_attributes',
  'locked_by',
  'readme',
  'outputs',
  'project',
  'effective_tag_bindings',
  'current-state-version',
  'current_state_version',
];

/** Tag names from `{"data":[{"type":"tags","attributes":{"name":"…"}}]}` (also inside relationships.tags). */
function tagNames(data: unknown, pointer: string): string[] {
  if (!Array.isArray(data)) throw invalid('tags must be an array of {"type":"tags","attributes":{"name"}}', pointer);
  return data.map((d: unknown, i) => {
    const name = (d as { attributes?: { name?: unknown } } | null)?.attributes?.name;
    if (typeof name !== 'string') throw invalid('each tag needs attributes.name', `${pointer}/${i}/attributes/name`);
    return name;
  });
}

function workspaceInput(body: unknown): WorkspaceInput {
  const a = JsonApiInput.parse(body, 'workspaces');
  const relTags = a.relationshipList('tags');
  const attrTags = a.stringArray('tag-names');
  const project = a.relationship('project');
  if (project) checkProjectType(project.type);
  return {
    projectId: project?.id,
    name: a.string('name'),
    description: a.nullableString('description'),
    executionMode: a.string('execution-mode'),
    operations: a.boolean('operations'),
    terraformVersion: a.string('terraform-version'),
    autoApply: a.boolean('auto-apply'),
    allowDestroyPlan: a.boolean('allow-destroy-plan'),
    fileTriggersEnabled: a.boolean('file-triggers-enabled'),
    queueAllRuns: a.boolean('queue-all-runs'),
    speculativeEnabled: a.boolean('speculative-enabled'),
    globalRemoteState: a.boolean('global-remote-state'),
    assessmentsEnabled: a.boolean('assessments-enabled'),
    workingDirectory: a.nullableString('working-directory'),
    triggerPrefixes: a.stringArray('trigger-prefixes'),
    triggerPatterns: a.stringArray('trigger-patterns'),
    tagNames:
      relTags === undefined
        ? attrTags
        : [...new Set([...(attrTags ?? []), ...tagNames(relTags, '/data/relationships/tags/data')])],
    sourceName: a.nullableString('source-name'),
    sourceUrl: a.nullableString('source-url'),
  };
}

/** The lock reason from any of the body shapes clients send (reference 7.4), or none. */
function lockReason(body: unknown): string | null {
  if (body === undefined || body === null || body === '') return null;
  const a = JsonApiInput.parse(body, 'workspaces', { optional: true });
  return a.string('reason') ?? null;
}

/**
 * Terraform ≥ 1.10 retries an unlock refused with 400 and "latest state version is still
 * pending"; older clients only retry server errors, so they get 503 (reference 7.4).
 */
function pendingUnlockStatus(request: FastifyRequest): number {
  const v = request.headers['terraform-version'];
  const m = typeof v === 'string' ? /^(\d+)\.(\d+)/.exec(v) : null;
  if (!m) return 400;
  const [major, minor] = [Number(m[1]), Number(m[2])];
  return major > 1 || (major === 1 && minor >= 10) ? 400 : 503;
}

/** https://developer.hashicorp.com/terraform/cloud-docs/api-docs/workspaces (reference 7.2–7.4). */
export function registerWorkspaceRoutes(
  app: FastifyInstance,
  deps: { workspaces: WorkspaceService; organizations: OrganizationService; projects: ProjectService; config: Config },
): void {
  const { workspaces, organizations, projects, config } = deps;

  /** `included` for `organization` and `project`: each related object once. */
  async function related(request: FastifyRequest, views: WorkspaceView[]): Promise<Record<string, unknown>[]> {
    const inc = includes(request, WORKSPACE_INCLUDES);
    const out: Record<string, unknown>[] = [];
    if (views.length === 0 || inc.size === 0) return out;
    const actor = requireActor(request);
    if (inc.has('organization'))
      out.push(
        organizationResource(await organizations.get(actor, (views[0] as WorkspaceView).workspace.organization)),
      );
    if (inc.has('project')) {
      const found = await projects.byIds(
        actor,
        views.map((v) => v.workspace.projectId),
      );
      out.push(...found.map(projectResource));
    }
    return out;
  }

  async function single(request: FastifyRequest, view: WorkspaceView): Promise<Record<string, unknown>> {
    const included = await related(request, [view]);
    return included.length > 0 ? { data: workspaceResource(view), included } : { data: workspaceResource(view) };
  }

  app.get<{ Params: { org: string } }>('/organizations/:org/workspaces', async (request, reply) => {
    const q = query(request);
    const text = (k: string) => (typeof q[k] === 'string' && q[k] !== '' ? (q[k] as string) : undefined);
    const list = (k: string) =>
      text(k)
        ?.split(',')
        .map((t) => t.trim())
        .filter(Boolean);
    const actor = requireActor(request);
    const page = await workspaces.list(actor, request.params.org, {
      search: text('search[name]'),
      wildcardName: text('search[wildcard-name]'),
      tags: list('search[tags]'),
      excludeTags: list('search[exclude-tags]'),
      projectId: text('filter[project][id]'),
      page: pageRequest(request),
    });
    const included = await related(request, page.items);
    const extra = included.length > 0 ? { included } : {};
    return sendDocument(reply, 200, listDocument(request, config, page, workspaceResource, extra));
  });

  app.post<{ Params: { org: string } }>('/organizations/:org/workspaces', async (request, reply) => {
    const view = await workspaces.create(requireActor(request), request.params.org, workspaceInput(request.body));
    request.log.info({ workspaceId: view.workspace.id }, 'workspace created');
    return sendDocument(reply, 201, { data: workspaceResource(view) });
  });

  const refOf = (p: ByName | ById): WorkspaceRef => ('id' in p ? { id: p.id } : { organization: p.org, name: p.name });
  for (const path of ['/organizations/:org/workspaces/:name', '/workspaces/:id']) {
    app.get<{ Params: ByName | ById }>(path, async (request, reply) => {
      const view = await workspaces.get(requireActor(request), refOf(request.params));
      return sendDocument(reply, 200, await single(request, view));
    });
    app.patch<{ Params: ByName | ById }>(path, async (request, reply) => {
      const view = await workspaces.update(requireActor(request), refOf(request.params), workspaceInput(request.body));
      return sendDocument(reply, 200, { data: workspaceResource(view) });
    });
    app.delete<{ Params: ByName | ById }>(path, async (request, reply) => {
      await workspaces.delete(requireActor(request), refOf(request.params));
      request.log.info({ workspace: request.params }, 'workspace deleted');
      return sendNoContent(reply);
    });
  }

  app.get<{ Params: ById }>('/workspaces/:id/relationships/tags', async (request, reply) => {
    const tags = await workspaces.tags(requireActor(request), request.params.id);
    return sendDocument(reply, 200, { data: tags.map((name) => ({ id: name, type: 'tags', attributes: { name } })) });
  });
  app.post<{ Params: ById }>('/workspaces/:id/relationships/tags', async (request, reply) => {
    await workspaces.addTags(
      requireActor(request),
      request.params.id,
      tagNames((request.body as { data?: unknown } | null)?.data, '/data'),
    );
    return sendNoContent(reply);
  });
  app.delete<{ Params: ById }>('/workspaces/:id/relationships/tags', async (request, reply) => {
    await workspaces.removeTags(
      requireActor(request),
      request.params.id,
      tagNames((request.body as { data?: unknown } | null)?.data, '/data'),
    );
    return sendNoContent(reply);
  });

  app.post<{ Params: ById }>('/workspaces/:id/actions/lock', async (request, reply) => {
    const view = await workspaces.lock(requireActor(request), request.params.id, lockReason(request.body));
    request.log.info({ workspaceId: view.workspace.id }, 'workspace locked');
    return sendDocument(reply, 200, { data: workspaceResource(view) });
  });

  app.post<{ Params: ById }>('/workspaces/:id/actions/unlock', async (request, reply) => {
    try {
      const view = await workspaces.unlock(requireActor(request), request.params.id);
      request.log.info({ workspaceId: view.workspace.id }, 'workspace unlocked');
      return sendDocument(reply, 200, { data: workspaceResource(view) });
    } catch (err) {
      // The service error is kind 'unavailable' (503); newer clients get the 400 they retry on.
      if (isPendingUnlockError(err) && pendingUnlockStatus(request) === 400)
        throw Object.assign(new Error((err as Error).message), { statusCode: 400 });
      throw err;
    }
  });

  app.post<{ Params: ById }>('/workspaces/:id/actions/force-unlock', async (request, reply) => {
    const view = await workspaces.forceUnlock(requireActor(request), request.params.id);
    request.log.info({ workspaceId: view.workspace.id }, 'workspace force-unlocked');
    return sendDocument(reply, 200, { data: workspaceResource(view) });
  });
}
