import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config.js';
import { requireActor } from '../identity/request-actor.js';
import { listDocument, pageRequest, sendDocument } from '../route-helpers.js';
import {
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

  app.get<{ Params: { id: string } }>('/state-version-outputs/:id', async (request, reply) => {
    return sendDocument(
      reply,
      200,
      stateVersionOutputDocument(await outputs.get(requireActor(request), request.params.id)),
    );
  });

  app.get<{ Params: { id: string } }>('/state-versions/:id/outputs', async (request, reply) => {
    const page = await outputs.listForVersion(requireActor(request), request.params.id, pageRequest(request));
    return sendDocument(reply, 200, listDocument(request, config, page, stateVersionOutputResource));
  });

  app.get<{ Params: { workspaceId: string } }>(
    '/workspaces/:workspaceId/current-state-version-outputs',
    async (request, reply) => {
      return sendDocument(
        reply,
        200,
        currentOutputsDocument(await outputs.current(requireActor(request), request.params.workspaceId)),
      );
    },
  );
}
