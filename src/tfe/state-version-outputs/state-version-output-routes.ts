import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config.js';
import { requireActor } from '../identity/request-actor.js';
import { COMMON_ERRORS, Params, Query, QueryString } from '../jsonapi-schemas.js';
import { listDocument, pageRequest, sendDocument } from '../route-helpers.js';
import {
  StateVersionOutputDocument,
  StateVersionOutputListDocument,
  currentOutputsDocument,
  stateVersionOutputDocument,
  stateVersionOutputResource,
} from './state-version-output-jsonapi.js';
import type { StateVersionOutputService } from './state-version-output-service.js';

/**
 * State Version Outputs API
 * (https://developer.hashicorp.com/terraform/cloud-docs/api-docs/state-version-outputs;
 * reference 6.2). Registered inside the /api/v2 plugin.
 */
export function registerStateVersionOutputRoutes(
  app: FastifyInstance,
  deps: { outputs: StateVersionOutputService; config: Config },
): void {
  const { outputs, config } = deps;
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['state version outputs'];

  api.get(
    '/state-version-outputs/:id',
    {
      schema: {
        summary: 'Show a state version output',
        tags,
        params: Params('id'),
        response: { 200: StateVersionOutputDocument, ...COMMON_ERRORS },
      },
    },
    async (request, reply) => {
      const output = await outputs.get(requireActor(request), request.params.id);
      return sendDocument(reply, 200, stateVersionOutputDocument(output));
    },
  );

  api.get(
    '/state-versions/:id/outputs',
    {
      schema: {
        summary: "List a state version's outputs",
        tags,
        params: Params('id'),
        querystring: QueryString({ ...Query.page }),
        response: { 200: StateVersionOutputListDocument, ...COMMON_ERRORS },
      },
    },
    async (request, reply) => {
      const page = await outputs.listForVersion(requireActor(request), request.params.id, pageRequest(request));
      return sendDocument(reply, 200, listDocument(request, config, page, stateVersionOutputResource));
    },
  );

  api.get(
    '/workspaces/:workspaceId/current-state-version-outputs',
    {
      schema: {
        summary: "The outputs of a workspace's current state version",
        tags,
        params: Params('workspaceId'),
        response: { 200: StateVersionOutputListDocument, ...COMMON_ERRORS },
      },
    },
    async (request, reply) => {
      const list = await outputs.current(requireActor(request), request.params.workspaceId);
      return sendDocument(reply, 200, currentOutputsDocument(list));
    },
  );
}
