import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { invalid } from '../../shared/errors.js';
import { requireActor } from '../identity/request-actor.js';
import {
  BODY_ERRORS,
  COMMON_ERRORS,
  NoContent,
  Params,
  Query,
  QueryString,
  relationshipOf,
} from '../jsonapi-schemas.js';
import { onePage, sendDocument, sendNoContent } from '../route-helpers.js';
import type { TeamAccessInput } from './team-access.js';
import {
  TeamAccessBody,
  TeamAccessCreateBody,
  TeamAccessDocument,
  TeamAccessListDocument,
  teamAccessResource,
} from './team-access-jsonapi.js';
import type { TeamAccessService } from './team-access-service.js';

function accessInput(body: TeamAccessBody | TeamAccessCreateBody): TeamAccessInput {
  const a = body.data.attributes ?? {};
  return {
    access: a.access ?? undefined,
    runs: a.runs ?? undefined,
    variables: a.variables ?? undefined,
    stateVersions: a['state-versions'] ?? undefined,
    sentinelMocks: a['sentinel-mocks'] ?? undefined,
    workspaceLocking: a['workspace-locking'] ?? undefined,
    runTasks: a['run-tasks'] ?? undefined,
  };
}

const tags = ['team access'];
const ById = Params('id');

/** https://developer.hashicorp.com/terraform/cloud-docs/api-docs/team-access (reference 8.2). */
export function registerTeamAccessRoutes(app: FastifyInstance, deps: { teamAccess: TeamAccessService }): void {
  const { teamAccess } = deps;
  const api = app.withTypeProvider<TypeBoxTypeProvider>();

  api.get(
    '/team-workspaces',
    {
      schema: {
        summary: "List the teams' access to a workspace",
        tags,
        querystring: QueryString({ 'filter[workspace][id]': Query.text('the workspace (required)') }),
        response: { 200: TeamAccessListDocument, ...COMMON_ERRORS },
      },
    },
    async (request, reply) => {
      const ws = request.query['filter[workspace][id]'];
      if (ws === undefined || ws === '')
        throw invalid('filter[workspace][id] is required', '/query/filter[workspace][id]');
      const list = await teamAccess.listForWorkspace(requireActor(request), ws);
      return sendDocument(reply, 200, onePage(list.map(teamAccessResource)));
    },
  );

  api.post(
    '/team-workspaces',
    {
      schema: {
        summary: 'Give a team access to a workspace',
        tags,
        body: TeamAccessCreateBody,
        // HCP documents 200 for this create.
        response: { 200: TeamAccessDocument, ...COMMON_ERRORS, ...BODY_ERRORS },
      },
    },
    async (request, reply) => {
      const rels = request.body.data.relationships;
      const team = relationshipOf(rels.team);
      const workspace = relationshipOf(rels.workspace);
      if (!team) throw invalid('relationships.team is required', '/data/relationships/team');
      if (!workspace) throw invalid('relationships.workspace is required', '/data/relationships/workspace');
      const grant = await teamAccess.create(requireActor(request), team.id, workspace.id, accessInput(request.body));
      return sendDocument(reply, 200, { data: teamAccessResource(grant) });
    },
  );

  api.get(
    '/team-workspaces/:id',
    {
      schema: {
        summary: "Show a team's access to a workspace",
        tags,
        params: ById,
        response: { 200: TeamAccessDocument, ...COMMON_ERRORS },
      },
    },
    async (request, reply) => {
      const grant = await teamAccess.get(requireActor(request), request.params.id);
      return sendDocument(reply, 200, { data: teamAccessResource(grant) });
    },
  );

  api.patch(
    '/team-workspaces/:id',
    {
      schema: {
        summary: "Change a team's access to a workspace",
        tags,
        params: ById,
        body: TeamAccessBody,
        response: { 200: TeamAccessDocument, ...COMMON_ERRORS, ...BODY_ERRORS },
      },
    },
    async (request, reply) => {
      const grant = await teamAccess.update(requireActor(request), request.params.id, accessInput(request.body));
      return sendDocument(reply, 200, { data: teamAccessResource(grant) });
    },
  );

  api.delete(
    '/team-workspaces/:id',
    {
      schema: {
        summary: "Remove a team's access to a workspace",
        tags,
        params: ById,
        response: { 204: NoContent, ...COMMON_ERRORS },
      },
    },
    async (request, reply) => {
      await teamAccess.delete(requireActor(request), request.params.id);
      return sendNoContent(reply);
    },
  );
}
