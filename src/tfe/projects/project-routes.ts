import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config.js';
import { requireActor } from '../identity/request-actor.js';
import { BODY_ERRORS, COMMON_ERRORS, NoContent, Params, Query, QueryString } from '../jsonapi-schemas.js';
import { listDocument, pageRequest, sendDocument, sendNoContent } from '../route-helpers.js';
import { parseNamesFilter, parseProjectSort } from './project.js';
import type { ProjectInput } from './project.js';
import { ProjectBody, ProjectDocument, ProjectListDocument, projectResource } from './project-jsonapi.js';
import type { ProjectService } from './project-service.js';

/** `name` and `description`; the type must be `projects` (422 at /data/type otherwise, missing included). */
function projectInput(body: ProjectBody): ProjectInput {
  const a = body.data.attributes ?? {};
  return { name: a.name ?? undefined, description: a.description };
}

const tags = ['projects'];
const ById = Params('id');

/** https://developer.hashicorp.com/terraform/cloud-docs/api-docs/projects */
export function registerProjectRoutes(app: FastifyInstance, deps: { projects: ProjectService; config: Config }): void {
  const { projects, config } = deps;
  const api = app.withTypeProvider<TypeBoxTypeProvider>();

  api.get(
    '/organizations/:org/projects',
    {
      schema: {
        summary: "List an organization's projects",
        tags,
        params: Params('org'),
        querystring: QueryString({
          'filter[names]': Query.list('comma-separated exact names'),
          q: Query.text('part of the name'),
          sort: Query.text('"name" or "-name"'),
          'filter[permissions][create-workspace]': Query.text('present: only projects the caller may add to'),
          'filter[permissions][update]': Query.text('present: only projects the caller may change'),
          ...Query.page,
        }),
        response: { 200: ProjectListDocument, ...COMMON_ERRORS },
      },
    },
    async (request, reply) => {
      const q = request.query;
      const page = await projects.list(requireActor(request), request.params.org, {
        names: parseNamesFilter(q['filter[names]']),
        query: q.q !== undefined && q.q !== '' ? q.q : undefined,
        sort: parseProjectSort(q.sort),
        permissions: {
          createWorkspace: q['filter[permissions][create-workspace]'] !== undefined,
          update: q['filter[permissions][update]'] !== undefined,
        },
        page: pageRequest(request),
      });
      return sendDocument(reply, 200, listDocument(request, config, page, projectResource));
    },
  );

  api.post(
    '/organizations/:org/projects',
    {
      schema: {
        summary: 'Create a project',
        tags,
        params: Params('org'),
        body: ProjectBody,
        response: { 201: ProjectDocument, ...COMMON_ERRORS, ...BODY_ERRORS },
      },
    },
    async (request, reply) => {
      const view = await projects.create(requireActor(request), request.params.org, projectInput(request.body));
      request.log.info({ projectId: view.project.id }, 'project created');
      return sendDocument(reply, 201, { data: projectResource(view) });
    },
  );

  api.get(
    '/projects/:id',
    { schema: { summary: 'Show a project', tags, params: ById, response: { 200: ProjectDocument, ...COMMON_ERRORS } } },
    async (request, reply) => {
      const view = await projects.get(requireActor(request), request.params.id);
      return sendDocument(reply, 200, { data: projectResource(view) });
    },
  );

  api.patch(
    '/projects/:id',
    {
      schema: {
        summary: 'Update a project',
        tags,
        params: ById,
        body: ProjectBody,
        response: { 200: ProjectDocument, ...COMMON_ERRORS, ...BODY_ERRORS },
      },
    },
    async (request, reply) => {
      const view = await projects.update(requireActor(request), request.params.id, projectInput(request.body));
      return sendDocument(reply, 200, { data: projectResource(view) });
    },
  );

  api.delete(
    '/projects/:id',
    { schema: { summary: 'Delete a project', tags, params: ById, response: { 204: NoContent, ...COMMON_ERRORS } } },
    async (request, reply) => {
      await projects.delete(requireActor(request), request.params.id);
      request.log.info({ projectId: request.params.id }, 'project deleted');
      return sendNoContent(reply);
    },
  );

  // Projects have no tags here; the document links to these, so they answer an empty list.
  const EmptyList = Type.Object({ data: Type.Array(Type.Unknown(), { maxItems: 0 }) }, { title: 'EmptyList' });
  for (const kind of ['tag-bindings', 'effective-tag-bindings']) {
    api.get(
      `/projects/:id/${kind}`,
      {
        schema: {
          summary: `A project's ${kind} (none here)`,
          tags,
          params: ById,
          response: { 200: EmptyList, ...COMMON_ERRORS },
        },
      },
      async (request, reply) => {
        await projects.get(requireActor(request), request.params.id);
        return sendDocument(reply, 200, { data: [] });
      },
    );
  }
}
