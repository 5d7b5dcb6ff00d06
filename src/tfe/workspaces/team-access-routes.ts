import type { FastifyInstance } from 'fastify';
import { invalid } from '../../shared/errors.js';
import { requireActor } from '../identity/request-actor.js';
import { JsonApiInput } from '../jsonapi-input.js';
import { query, sendDocument, sendNoContent } from '../route-helpers.js';
import type { TeamAccessInput } from './team-access.js';
import { teamAccessResource } from './team-access-jsonapi.js';
import type { TeamAccessService } from './team-access-service.js';

function accessInput(a: JsonApiInput): TeamAccessInput {
  return {
    access: a.string('access'),
    runs: a.string('runs'),
    variables: a.string('variables'),
    stateVersions: a.string('state-versions'),
    sentinelMocks: a.string('sentinel-mocks'),
    workspaceLocking: a.boolean('workspace-locking'),
    runTasks: a.boolean('run-tasks'),
  };
}

/** https://developer.hashicorp.com/terraform/cloud-docs/api-docs/team-access (reference 8.2). */
export function registerTeamAccessRoutes(app: FastifyInstance, deps: { teamAccess: TeamAccessService }): void {
  const { teamAccess } = deps;

  app.get('/team-workspaces', async (request, reply) => {
    const ws = query(request)['filter[workspace][id]'];
    if (typeof ws !== 'string' || ws === '')
      throw invalid('filter[workspace][id] is required', '/query/filter[workspace][id]');
    const list = await teamAccess.listForWorkspace(requireActor(request), ws);
    return sendDocument(reply, 200, {
      data: list.map(teamAccessResource),
      meta: {
        pagination: {
          'current-page': 1,
          'page-size': list.length,
          'prev-page': null,
          'next-page': null,
          'total-pages': 1,
          'total-count': list.length,
        },
      },
    });
  });

  app.post('/team-workspaces', async (request, reply) => {
    const a = JsonApiInput.parse(request.body, 'team-workspaces');
    const team = a.relationship('team');
    const workspace = a.relationship('workspace');
    if (!team) throw invalid('relationships.team is required', '/data/relationships/team');
    if (!workspace) throw invalid('relationships.workspace is required', '/data/relationships/workspace');
    const grant = await teamAccess.create(requireActor(request), team.id, workspace.id, accessInput(a));
    // HCP documents 200 for this create.
    return sendDocument(reply, 200, { data: teamAccessResource(grant) });
  });

  app.get<{ Params: { id: string } }>('/team-workspaces/:id', async (request, reply) => {
    return sendDocument(reply, 200, {
      data: teamAccessResource(await teamAccess.get(requireActor(request), request.params.id)),
    });
  });

  app.patch<{ Params: { id: string } }>('/team-workspaces/:id', async (request, reply) => {
    const grant = await teamAccess.update(
      requireActor(request),
      request.params.id,
      accessInput(JsonApiInput.parse(request.body, 'team-workspaces')),
    );
    return sendDocument(reply, 200, { data: teamAccessResource(grant) });
  });

  app.delete<{ Params: { id: string } }>('/team-workspaces/:id', async (request, reply) => {
    await teamAccess.delete(requireActor(request), request.params.id);
    return sendNoContent(reply);
  });
}
