import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { invalid } from '../../shared/errors.js';
import { requireActor } from '../identity/request-actor.js';
import { COMMON_ERRORS, Document, ErrorDocument, Params, Query, QueryString, Resource } from '../jsonapi-schemas.js';
import { sendDocument } from '../route-helpers.js';
import type { ChangedOutput, ChangedResource, DiffResource } from './state-diff.js';
import type { StateDiffResult, StateDiffService } from './state-diff-service.js';

/**
 * State diff, `GET /state-versions/:id/diff?against=:other_id` (an extension of the
 * State Versions API; documented in docs/state-diff.md). Registered inside /api/v2.
 */
export function registerStateDiffRoutes(app: FastifyInstance, deps: { diffs: StateDiffService }): void {
  const schema = {
    summary: 'What changed between two state versions',
    tags: ['state versions'],
    params: Params('id'),
    querystring: QueryString({ against: Query.text('the other state version (required)') }),
    response: { 200: StateDiffDocument, ...COMMON_ERRORS, 422: ErrorDocument },
  };
  app.withTypeProvider<TypeBoxTypeProvider>().get('/state-versions/:id/diff', { schema }, async (request, reply) => {
    const against = request.query.against;
    if (against === undefined || against === '')
      throw invalid('the query parameter "against" (a state version id) is required', '/query/against');
    const controller = new AbortController();
    // Stop reading blobs when the client goes away.
    request.raw.once('close', () => controller.abort());
    const result = await deps.diffs.diff(requireActor(request), request.params.id, against, controller.signal);
    return sendDocument(reply, 200, stateDiffDocument(result));
  });
}

const StateDiffDocument = Document(
  Resource(
    'state-version-diffs',
    {
      'resources-added': Type.Array(Type.Unknown()),
      'resources-removed': Type.Array(Type.Unknown()),
      'resources-changed': Type.Array(Type.Unknown()),
      'outputs-added': Type.Array(Type.Unknown()),
      'outputs-removed': Type.Array(Type.Unknown()),
      'outputs-changed': Type.Array(Type.Unknown()),
      summary: Type.Record(Type.String(), Type.Integer()),
    },
    'StateVersionDiff',
  ),
  'StateVersionDiffDocument',
);

const resource = (r: DiffResource) => ({
  address: r.address,
  module: r.module,
  mode: r.mode,
  type: r.type,
  name: r.name,
});
const changed = (r: ChangedResource) => ({ ...resource(r), 'changed-attributes': r.changedAttributes });
const output = (o: ChangedOutput) => ({ name: o.name, sensitive: o.sensitive });

export function stateDiffDocument({ version, against, diff }: StateDiffResult): Record<string, unknown> {
  return {
    data: {
      id: `${version.id}..${against.id}`,
      type: 'state-version-diffs',
      attributes: {
        'resources-added': diff.resourcesAdded.map(resource),
        'resources-removed': diff.resourcesRemoved.map(resource),
        'resources-changed': diff.resourcesChanged.map(changed),
        'outputs-added': diff.outputsAdded.map(output),
        'outputs-removed': diff.outputsRemoved.map(output),
        'outputs-changed': diff.outputsChanged.map(output),
        summary: {
          added: diff.resourcesAdded.length,
          removed: diff.resourcesRemoved.length,
          changed: diff.resourcesChanged.length,
          'outputs-added': diff.outputsAdded.length,
          'outputs-removed': diff.outputsRemoved.length,
          'outputs-changed': diff.outputsChanged.length,
        },
      },
      relationships: {
        'state-version': { data: { type: 'state-versions', id: version.id } },
        against: { data: { type: 'state-versions', id: against.id } },
        workspace: { data: { type: 'workspaces', id: version.workspaceId } },
      },
      links: { self: `/api/v2/state-versions/${version.id}/diff?against=${encodeURIComponent(against.id)}` },
    },
  };
}
