import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config.js';
import { requireActor } from '../identity/request-actor.js';
import { JsonApiInput } from '../jsonapi-input.js';
import { listDocument, pageRequest, query, sendDocument, sendNoContent } from '../route-helpers.js';
import { parseNamesFilter, parseProjectSort } from './project.js';
import type { ProjectInput } from './project.js';
import { projectResource } from './project-jsonapi.js';
import type { ProjectService } from './project-service.js';

type ById = { id: string };

/** `name` and `description`; the type must be `projects` (422 at /data/type otherwise, missing included). */
function projectInput(body: unknown): ProjectInput {
  const a = JsonApiInput.parse(body, 'projects', { requireType: true });
  return { name: a.string('name'), description: a.nullableString('description') };
}

/** https://developer.hashicorp.com/terraform/cloud-docs/api-docs/projects */
export function registerProjectRoutes(app: FastifyInstance, deps: { projects: ProjectService; config: Config }): void {
  const { projects, config } = deps;

  app.get<{ Params: { org: string } }>('/organizations/:org/projects', async (request, reply) => {
    const q = query(request);
    const page = await projects.list(requireActor(request), request.params.org, {
      names: parseNamesFilter(q['filter[names]']),
      query: typeof q.q === 'string' && q.q !== '' ? q.q : undefined,
      sort: parseProjectSort(q.sort),
      permissions: {
        createWorkspace: q['filter[permissions][create-workspace]'] !== undefined,
        update: q['filter[permissions][update]'] !== undefined,
      },
      page: pageRequest(request),
    });
    return sendDocument(reply, 200, listDocument(request, config, page, projectResource));
  });

  app.post<{ Params: { org: string } }>('/organizations/:org/projects', async (request, reply) => {
    const view = await projects.create(requireActor(request), request.params.org, projectInput(request.body));
    request.log.info({ projectId: view.project.id }, 'project created');
    return sendDocument(reply, 201, { data: projectResource(view) });
  });

  app.get<{ Params: ById }>('/projects/:id', async (request, reply) => {
    return sendDocument(reply, 200, {
      data: projectResource(await projects.get(requireActor(request), request.params.id)),
    });
  });

  app.patch<{ Params: ById }>('/projects/:id', async (request, reply) => {
    const view = await projects.update(requireActor(request), request.params.id, projectInput(request.body));
    return sendDocument(reply, 200, { data: projectResource(view) });
  });

  app.delete<{ Params: ById }>('/projects/:id', async (request, reply) => {
    await projects.delete(requireActor(request), request.params.id);
    request.log.info({ projectId: request.params.id }, 'project deleted');
    return sendNoContent(reply);
  });

  // Projects have no tags here; the document links to these, so they answer an empty list.
  for (const kind of ['tag-bindings', 'effective-tag-bindings']) {
    app.get<{ Params: ById }>(`/projects/:id/${kind}`, async (request, reply) => {
      await projects.get(requireActor(request), request.params.id);
      return sendDocument(reply, 200, { data: [] });
    });
  }
}
