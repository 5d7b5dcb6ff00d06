import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Config } from '../../config.js';
import { requireActor } from '../identity/request-actor.js';
import {
  BODY_ERRORS,
  COMMON_ERRORS,
  ErrorDocument,
  NoContent,
  Params,
  Query,
  QueryString,
  TagListBody,
  optionalAttributes,
  relationshipOf,
} from '../jsonapi-schemas.js';
import { organizationResource } from '../organizations/organization-jsonapi.js';
import type { OrganizationService } from '../organizations/organization-service.js';
import { checkProjectType } from '../projects/project.js';
import { projectResource } from '../projects/project-jsonapi.js';
import type { ProjectService } from '../projects/project-service.js';
import { includes, listDocument, pageRequest, sendDocument, sendNoContent } from '../route-helpers.js';
import type { WorkspaceInput, WorkspaceView } from './workspace.js';
import {
  LockBody,
  TagListDocument,
  WorkspaceBody,
  WorkspaceDocument,
  WorkspaceListDocument,
  workspaceResource,
} from './workspace-jsonapi.js';
import { isPendingUnlockError } from './workspace-service.js';
import type { WorkspaceRef, WorkspaceService } from './workspace-service.js';

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

function workspaceInput(body: WorkspaceBody): WorkspaceInput {
  const a = body.data.attributes ?? {};
  const rels = body.data.relationships;
  const relTags = rels?.tags?.data?.map((t) => t.attributes.name);
  const attrTags = a['tag-names'] ?? undefined;
  const project = relationshipOf(rels?.project);
  if (project) checkProjectType(project.type);
  return {
    projectId: project?.id,
    name: a.name ?? undefined,
    description: a.description,
    executionMode: a['execution-mode'] ?? undefined,
    operations: a.operations ?? undefined,
    terraformVersion: a['terraform-version'] ?? undefined,
    autoApply: a['auto-apply'] ?? undefined,
    allowDestroyPlan: a['allow-destroy-plan'] ?? undefined,
    fileTriggersEnabled: a['file-triggers-enabled'] ?? undefined,
    queueAllRuns: a['queue-all-runs'] ?? undefined,
    speculativeEnabled: a['speculative-enabled'] ?? undefined,
    globalRemoteState: a['global-remote-state'] ?? undefined,
    assessmentsEnabled: a['assessments-enabled'] ?? undefined,
    workingDirectory: a['working-directory'],
    triggerPrefixes: a['trigger-prefixes'] ?? undefined,
    triggerPatterns: a['trigger-patterns'] ?? undefined,
    tagNames: relTags === undefined ? attrTags : [...new Set([...(attrTags ?? []), ...relTags])],
    sourceName: a['source-name'],
    sourceUrl: a['source-url'],
  };
}

const tags = ['workspaces'];
const ById = Params('id');
const WorkspaceQuery = QueryString({ include: Query.include(WORKSPACE_INCLUDES) });

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
  const api = app.withTypeProvider<TypeBoxTypeProvider>();

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

  api.get(
    '/organizations/:org/workspaces',
    {
      schema: {
        summary: "List an organization's workspaces",
        tags,
        params: Params('org'),
        querystring: QueryString({
          'search[name]': Query.text('part of the name'),
          'search[wildcard-name]': Query.text('a name with * wildcards'),
          'search[tags]': Query.text('comma-separated tags every workspace has'),
          'search[exclude-tags]': Query.text('comma-separated tags no workspace has'),
          'filter[project][id]': Query.text(),
          ...Query.page,
          include: Query.include(WORKSPACE_INCLUDES),
        }),
        response: { 200: WorkspaceListDocument, ...COMMON_ERRORS },
      },
    },
    async (request, reply) => {
      const q = request.query;
      const text = (v: string | undefined) => (v === '' ? undefined : v);
      const list = (v: string | undefined) =>
        text(v)
          ?.split(',')
          .map((t) => t.trim())
          .filter(Boolean);
      const page = await workspaces.list(requireActor(request), request.params.org, {
        search: text(q['search[name]']),
        wildcardName: text(q['search[wildcard-name]']),
        tags: list(q['search[tags]']),
        excludeTags: list(q['search[exclude-tags]']),
        projectId: text(q['filter[project][id]']),
        page: pageRequest(request),
      });
      const included = await related(request, page.items);
      const extra = included.length > 0 ? { included } : {};
      return sendDocument(reply, 200, listDocument(request, config, page, workspaceResource, extra));
    },
  );

  api.post(
    '/organizations/:org/workspaces',
    {
      schema: {
        summary: 'Create a workspace',
        tags,
        params: Params('org'),
        body: WorkspaceBody,
        response: { 201: WorkspaceDocument, ...COMMON_ERRORS, ...BODY_ERRORS },
      },
    },
    async (request, reply) => {
      const view = await workspaces.create(requireActor(request), request.params.org, workspaceInput(request.body));
      request.log.info({ workspaceId: view.workspace.id }, 'workspace created');
      return sendDocument(reply, 201, { data: workspaceResource(view) });
    },
  );

  // The same three routes by organization and name, and by id.
  const refOf = (p: { org?: string; name?: string; id?: string }): WorkspaceRef =>
    p.id !== undefined ? { id: p.id } : { organization: p.org ?? '', name: p.name ?? '' };
  for (const [path, params] of [
    ['/organizations/:org/workspaces/:name', Params('org', 'name')],
    ['/workspaces/:id', ById],
  ] as const) {
    api.get(
      path,
      {
        schema: {
          summary: 'Show a workspace',
          tags,
          params,
          querystring: WorkspaceQuery,
          response: { 200: WorkspaceDocument, ...COMMON_ERRORS },
        },
      },
      async (request, reply) => {
        const view = await workspaces.get(requireActor(request), refOf(request.params));
        return sendDocument(reply, 200, await single(request, view));
      },
    );
    api.patch(
      path,
      {
        schema: {
          summary: 'Update a workspace',
          tags,
          params,
          body: WorkspaceBody,
          response: { 200: WorkspaceDocument, ...COMMON_ERRORS, ...BODY_ERRORS },
        },
      },
      async (request, reply) => {
        const input = workspaceInput(request.body);
        const view = await workspaces.update(requireActor(request), refOf(request.params), input);
        return sendDocument(reply, 200, { data: workspaceResource(view) });
      },
    );
    api.delete(
      path,
      { schema: { summary: 'Delete a workspace', tags, params, response: { 204: NoContent, ...COMMON_ERRORS } } },
      async (request, reply) => {
        await workspaces.delete(requireActor(request), refOf(request.params));
        request.log.info({ workspace: request.params }, 'workspace deleted');
        return sendNoContent(reply);
      },
    );
  }

  const tagsPath = '/workspaces/:id/relationships/tags';
  api.get(
    tagsPath,
    {
      schema: {
        summary: "A workspace's tags",
        tags,
        params: ById,
        response: { 200: TagListDocument, ...COMMON_ERRORS },
      },
    },
    async (request, reply) => {
      const names = await workspaces.tags(requireActor(request), request.params.id);
      return sendDocument(reply, 200, {
        data: names.map((name) => ({ id: name, type: 'tags', attributes: { name } })),
      });
    },
  );
  const tagChange = (summary: string) => ({
    schema: {
      summary,
      tags,
      params: ById,
      body: TagListBody,
      response: { 204: NoContent, ...COMMON_ERRORS, ...BODY_ERRORS },
    },
  });
  api.post(tagsPath, tagChange('Add tags to a workspace'), async (request, reply) => {
    const names = request.body.data.map((t) => t.attributes.name);
    await workspaces.addTags(requireActor(request), request.params.id, names);
    return sendNoContent(reply);
  });
  api.delete(tagsPath, tagChange('Remove tags from a workspace'), async (request, reply) => {
    const names = request.body.data.map((t) => t.attributes.name);
    await workspaces.removeTags(requireActor(request), request.params.id, names);
    return sendNoContent(reply);
  });

  const action = (summary: string) => ({
    schema: { summary, tags, params: ById, response: { 200: WorkspaceDocument, ...COMMON_ERRORS, 409: ErrorDocument } },
  });
  const lock = {
    schema: {
      ...action('Lock a workspace').schema,
      body: LockBody,
      response: { ...action('').schema.response, ...BODY_ERRORS },
    },
  };
  api.post('/workspaces/:id/actions/lock', lock, async (request, reply) => {
    const reason = optionalAttributes(request.body).reason ?? null;
    const view = await workspaces.lock(requireActor(request), request.params.id, reason);
    request.log.info({ workspaceId: view.workspace.id }, 'workspace locked');
    return sendDocument(reply, 200, { data: workspaceResource(view) });
  });

  api.post('/workspaces/:id/actions/unlock', action('Unlock a workspace'), async (request, reply) => {
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

  api.post('/workspaces/:id/actions/force-unlock', action('Force-unlock a workspace'), async (request, reply) => {
    const view = await workspaces.forceUnlock(requireActor(request), request.params.id);
    request.log.info({ workspaceId: view.workspace.id }, 'workspace force-unlocked');
    return sendDocument(reply, 200, { data: workspaceResource(view) });
  });
}
