import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Readable } from 'node:stream';
import { DomainError, invalid } from '../../shared/errors.js';
import { stringifyWithRaw } from '../../shared/raw-json.js';
import { isTfeIdOf } from '../../shared/ids.js';
import type { Actor } from '../identity/actor.js';
import type { IdentityService } from '../identity/identity-service.js';
import { requireActor } from '../identity/request-actor.js';
import type { TeamService } from '../identity/team-service.js';
import { sendDocument } from '../route-helpers.js';
import {
  BODY_ERRORS,
  COMMON_ERRORS,
  ErrorDocument,
  Params,
  Query,
  QueryString,
  optionalAttributes,
  relationshipOf,
} from '../jsonapi-schemas.js';
import { parsePageQuery } from '../pagination.js';
import type { StateUploadService } from './state-upload-service.js';
import {
  STATE_VERSION_INCLUDES,
  SoftDeleteBody,
  StateVersionCreateBody,
  StateVersionDocument,
  StateVersionListDocument,
  StateVersionRollbackBody,
  includedResources,
  stateVersionDocument,
  stateVersionListDocument,
} from './state-version-jsonapi.js';
import type { IncludedCreators, StateVersionInclude, StateVersionRenderContext } from './state-version-jsonapi.js';
import type { CurrentStateVersion, StateVersionService } from './state-version-service.js';
import { BACKING_DATA_ACTIONS, isTransitionNotAllowed, parseStatusFilter } from './state-version.js';
import type { StateVersion } from './state-version.js';

/**
 * State Versions API (https://developer.hashicorp.com/terraform/cloud-docs/api-docs/state-versions;
 * reference section 4): create, rollback, list, show, current, downloads and the
 * self-hosted backing-data actions. Registered inside the /api/v2 plugin.
 */
export interface StateVersionRoutesDeps {
  versions: StateVersionService;
  uploads: StateUploadService;
  /** For `include=created_by`: the creators are rendered as GET /users/:id and /teams/:id render them. */
  identity: IdentityService;
  teams: TeamService;
  /** Configured public base URL; when unset each request's own scheme and host are used. */
  publicUrl: string | undefined;
}

class HttpStatusError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
  ) {
    super(message);
  }
}

export function baseUrlOf(request: FastifyRequest, publicUrl: string | undefined): string {
  return publicUrl ?? `${request.protocol}://${request.host}`;
}

function parseIncludes(raw: unknown): StateVersionInclude[] {
  if (raw === undefined || raw === '') return [];
  const parts = String(raw)
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  for (const p of parts) {
    if (!(STATE_VERSION_INCLUDES as readonly string[]).includes(p)) {
      // go-tfe maps a 400 mentioning "include parameter" to ErrInvalidIncludeValue.
      throw new HttpStatusError(
        400,
        `invalid include parameter "${p}": expected one of ${STATE_VERSION_INCLUDES.join(', ')}`,
      );
    }
  }
  return parts as StateVersionInclude[];
}

/**
 * A to-one relationship the request must type exactly (`data.type` is required by the
 * specification for these), or undefined when absent.
 */
function typedRelationship(
  rel: { data?: { type?: string; id: string } | null } | undefined,
  name: string,
  type: string,
): { type: string; id: string } | undefined {
  const r = relationshipOf(rel);
  if (r && r.type !== type)
    throw invalid(`relationships.${name}.data.type must be "${type}"`, `/data/relationships/${name}/data/type`);
  return r;
}

/**
 * The run a new version names. Runs are not stored on this server (it runs no plans), so
 * the id is kept as an opaque reference once it has a run id's shape.
 */
function parseRunId(body: StateVersionCreateBody): string | null {
  const run = typedRelationship(body.data.relationships?.run, 'run', 'runs');
  if (!run) return null;
  if (!isTfeIdOf('run', run.id))
    throw invalid(
      'relationships.run.data.id must be a run id (run- and 16 letters or digits)',
      '/data/relationships/run/data/id',
    );
  return run.id;
}

/** A create body as the service takes it (types, serial and md5 are checked by the schema). */
function createInput(body: StateVersionCreateBody) {
  const a = body.data.attributes;
  // The schema requires attributes; this only tells the compiler.
  if (!a) throw invalid('serial is required', '/data/attributes/serial');
  return {
    serial: a.serial,
    md5: a.md5,
    lineage: a.lineage ?? null,
    state: a.state ?? undefined,
    jsonState: a['json-state'] ?? undefined,
    jsonStateOutputs: a['json-state-outputs'] ?? undefined,
    force: a.force ?? false,
    runId: parseRunId(body),
  };
}

const tags = ['state versions'];
const ById = Params('id');
const ByWorkspace = Params('workspaceId');
const IncludeQuery = QueryString({ include: Query.include(STATE_VERSION_INCLUDES) });

export async function registerStateVersionRoutes(app: FastifyInstance, deps: StateVersionRoutesDeps): Promise<void> {
  const { versions, uploads } = deps;
  const api = app.withTypeProvider<TypeBoxTypeProvider>();

  /**
   * The distinct creators of `list` as the caller sees them, in list order; one that is gone (or hidden) is left out.
   */
  async function creatorsOf(actor: Actor, list: StateVersion[]): Promise<IncludedCreators> {
    const distinct = new Map(list.flatMap((v) => (v.createdBy ? [[v.createdBy.id, v.createdBy] as const] : [])));
    const hidden = (err: unknown) => {
      if (err instanceof DomainError && (err.kind === 'not_found' || err.kind === 'forbidden')) return undefined;
      throw err;
    };
    const found = await Promise.all(
      [...distinct.values()].map((c) =>
        c.kind === 'team'
          ? deps.teams.view(actor, c.id).then((team) => ({ team }), hidden)
          : deps.identity.getUser(actor, c.id).then((user) => ({ user }), hidden),
      ),
    );
    return {
      users: found.flatMap((f) => (f && 'user' in f ? [f.user] : [])),
      teams: found.flatMap((f) => (f && 'team' in f ? [f.team] : [])),
    };
  }

  async function render(
    request: FastifyRequest,
    list: StateVersion[],
    includes: StateVersionInclude[],
    knownOutputIds?: Map<string, string[]>,
  ) {
    const baseUrl = baseUrlOf(request, deps.publicUrl);
    const [ids, outputs, creators] = await Promise.all([
      knownOutputIds ?? versions.outputIds(list),
      includes.includes('outputs') ? versions.outputs(list) : Promise.resolve([]),
      includes.includes('created_by') ? creatorsOf(requireActor(request), list) : undefined,
    ]);
    const ctxOf = (v: StateVersion): StateVersionRenderContext => ({
      baseUrl,
      uploadTokens: versions.uploadTokens(v),
      outputIds: ids.get(v.id) ?? [],
    });
    return { ctxOf, included: includedResources(includes, outputs, creators) };
  }

  async function one(
    request: FastifyRequest,
    reply: FastifyReply,
    v: StateVersion,
    status = 200,
    outputIds?: string[],
  ) {
    const includes = parseIncludes((request.query as Record<string, unknown>).include);
    const { ctxOf, included } = await render(
      request,
      [v],
      includes,
      outputIds ? new Map([[v.id, outputIds]]) : undefined,
    );
    return sendDocument(reply, status, stateVersionDocument(v, ctxOf(v), included));
  }

  api.post(
    '/workspaces/:workspaceId/state-versions',
    {
      schema: {
        summary: 'Create a state version',
        tags,
        params: ByWorkspace,
        querystring: IncludeQuery,
        body: StateVersionCreateBody,
        response: { 201: StateVersionDocument, ...COMMON_ERRORS, ...BODY_ERRORS, 409: ErrorDocument },
      },
    },
    async (request, reply) => {
      const input = createInput(request.body);
      const { version: v, outputIds } = await versions.createWithOutputIds(
        requireActor(request),
        request.params.workspaceId,
        input,
      );
      request.log.info(
        { workspaceId: v.workspaceId, stateVersionId: v.id, serial: v.serial, status: v.status },
        'state version created',
      );
      return one(request, reply, v, 201, outputIds);
    },
  );

  api.patch(
    '/workspaces/:workspaceId/state-versions',
    {
      schema: {
        summary: 'Roll back to an earlier state version',
        tags,
        params: ByWorkspace,
        querystring: IncludeQuery,
        body: StateVersionRollbackBody,
        response: { 201: StateVersionDocument, ...COMMON_ERRORS, ...BODY_ERRORS, 409: ErrorDocument },
      },
    },
    async (request, reply) => {
      const rel = request.body.data.relationships?.['rollback-state-version'];
      const target = typedRelationship(rel, 'rollback-state-version', 'state-versions');
      if (!target)
        throw invalid(
          'relationships.rollback-state-version.data is required',
          '/data/relationships/rollback-state-version',
        );
      const v = await versions.rollback(requireActor(request), request.params.workspaceId, target.id);
      request.log.info(
        { workspaceId: v.workspaceId, stateVersionId: v.id, rollbackOf: v.rollbackOfId },
        'state version rolled back',
      );
      return one(request, reply, v, 201);
    },
  );

  // The service hands out the same object while the current version is unchanged, so its
  // document (without includes) is rendered once per base URL.
  const renderedCurrent = new WeakMap<CurrentStateVersion, { baseUrl: string; body: string }>();
  api.get(
    '/workspaces/:workspaceId/current-state-version',
    {
      schema: {
        summary: "A workspace's current state version",
        tags,
        params: ByWorkspace,
        querystring: IncludeQuery,
        response: { 200: StateVersionDocument, ...COMMON_ERRORS },
      },
    },
    async (request, reply) => {
      const current = await versions.currentWithOutputIds(requireActor(request), request.params.workspaceId);
      const include = request.query.include;
      if (include !== undefined && include !== '')
        return one(request, reply, current.version, 200, [...current.outputIds]);
      const baseUrl = baseUrlOf(request, deps.publicUrl);
      let memo = renderedCurrent.get(current);
      if (memo?.baseUrl !== baseUrl) {
        const uploadTokens = versions.uploadTokens(current.version);
        const body = stringifyWithRaw(
          stateVersionDocument(current.version, { baseUrl, uploadTokens, outputIds: [...current.outputIds] }),
        );
        memo = { baseUrl, body };
        // A document with an upload URL changes when the URL expires.
        if (uploadTokens.state === null && uploadTokens.json === null) renderedCurrent.set(current, memo);
      }
      return sendDocument(reply, 200, memo.body);
    },
  );

  api.get(
    '/state-versions',
    {
      schema: {
        summary: "List a workspace's state versions",
        tags,
        querystring: QueryString({
          'filter[workspace][name]': Query.text('the workspace (required)'),
          'filter[organization][name]': Query.text('its organization (required)'),
          'filter[status]': Query.text('comma-separated statuses'),
          ...Query.page,
          include: Query.include(STATE_VERSION_INCLUDES),
        }),
        response: { 200: StateVersionListDocument, ...COMMON_ERRORS, 422: ErrorDocument },
      },
    },
    async (request, reply) => {
      const q = request.query;
      const workspace = q['filter[workspace][name]'];
      const organization = q['filter[organization][name]'];
      if (workspace === undefined || workspace === '')
        throw invalid('filter[workspace][name] is required', '/query/filter[workspace][name]');
      if (organization === undefined || organization === '')
        throw invalid('filter[organization][name] is required', '/query/filter[organization][name]');
      const statuses = parseStatusFilter(q['filter[status]']);
      const page = parsePageQuery(q);
      const includes = parseIncludes(q.include);
      const result = await versions.list(requireActor(request), { organization, workspace, statuses, page });
      const { ctxOf, included } = await render(request, result.items, includes);
      const selfUrl = baseUrlOf(request, deps.publicUrl) + request.url;
      return sendDocument(reply, 200, stateVersionListDocument(result, ctxOf, selfUrl, included));
    },
  );

  api.get(
    '/state-versions/:id',
    {
      schema: {
        summary: 'Show a state version',
        tags,
        params: ById,
        querystring: IncludeQuery,
        response: { 200: StateVersionDocument, ...COMMON_ERRORS },
      },
    },
    async (request, reply) => one(request, reply, await versions.get(requireActor(request), request.params.id)),
  );

  for (const [path, target, what] of [
    ['download', 'state', 'The state file of a version'],
    ['json-download', 'json', 'The JSON state of a version'],
  ] as const) {
    const StateFile = Type.Unknown({ description: 'the stored file, as uploaded', 'x-media-type': 'application/json' });
    api.get(
      `/state-versions/:id/${path}`,
      { schema: { summary: what, tags, params: ById, response: { 200: StateFile, ...COMMON_ERRORS } } },
      async (request, reply) => {
        const d = await uploads.download(requireActor(request), request.params.id, target);
        if (d.size !== null) void reply.header('content-length', d.size);
        return reply
          .status(200)
          .type('application/json')
          .send(Readable.from(d.body, { objectMode: false }));
      },
    );
  }

  // The self-hosted backing-data actions, each its own route (an unknown action is an unknown route).
  for (const action of BACKING_DATA_ACTIONS) {
    const softDelete = action === 'soft_delete_backing_data';
    api.post(
      `/state-versions/:id/actions/${action}`,
      {
        schema: {
          summary: `Backing data: ${action.replace(/_/g, ' ')}`,
          tags,
          params: ById,
          querystring: IncludeQuery,
          ...(softDelete ? { body: SoftDeleteBody } : {}),
          response: { 200: StateVersionDocument, ...COMMON_ERRORS, ...BODY_ERRORS },
        },
      },
      async (request, reply) => {
        let days: number | undefined;
        if (softDelete) {
          days = optionalAttributes(request.body as SoftDeleteBody)['delete-older-than-n-days'] ?? undefined;
          if (days !== undefined && days < 0)
            throw invalid('delete-older-than-n-days must not be negative', '/data/attributes/delete-older-than-n-days');
        }
        try {
          const v = await versions.backingData(requireActor(request), request.params.id, action, days);
          request.log.info({ stateVersionId: v.id, action, status: v.status }, 'state version backing data changed');
          return await one(request, reply, v);
        } catch (err) {
          // The specification answers a refused transition with 400.
          if (isTransitionNotAllowed(err)) throw new HttpStatusError(400, (err as Error).message);
          throw err;
        }
      },
    );
  }
}
