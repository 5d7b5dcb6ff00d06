import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';
import { teamResource, userResource } from '../identity/identity-jsonapi.js';
import {
  Attr,
  Document,
  JsonApiBody,
  ListDocument,
  OptionalJsonApiBody,
  RelationshipInput,
  Resource,
} from '../jsonapi-schemas.js';
import type { TeamView, User } from '../identity/identity.js';
import type { Page } from '../pagination.js';
import { paginationLinks, paginationMeta } from '../pagination.js';
import type { StateVersion, StateVersionOutput } from './state-version.js';

/**
 * State versions as JSON:API documents (reference 4.1; specification "Resources and
 * their fields"). Attribute names are kebab-case; instants are UTC with milliseconds.
 */

/** The `include` values the specification lists for every state version read. */
export const STATE_VERSION_INCLUDES = [
  'created_by',
  'run',
  'run.created_by',
  'run.configuration_version',
  'outputs',
] as const;
export type StateVersionInclude = (typeof STATE_VERSION_INCLUDES)[number];

const SERIAL_REQUIRED = 'serial is required';

/**
 * The body of POST /workspaces/:id/state-versions (reference 4.2): serial and md5 required, contents inline or later.
 */
export const StateVersionCreateBody = JsonApiBody({
  types: ['state-versions'],
  requireType: true,
  attributes: {
    serial: Type.Integer({
      minimum: 0,
      maximum: Number.MAX_SAFE_INTEGER,
      'x-error-required': SERIAL_REQUIRED,
      'x-error-value': 'serial must be a non-negative integer',
    }),
    md5: Type.String({
      pattern: '^[0-9a-fA-F]{32}$',
      description: 'MD5 of the state file, hexadecimal',
      'x-error-required': 'md5 is required',
      'x-error-value': 'md5 must be 32 hexadecimal characters',
    }),
    lineage: Attr.string(),
    state: Attr.string('the state file, base64; without it the answer names an upload URL'),
    'json-state': Attr.string('the JSON state (terraform show -json), base64'),
    'json-state-outputs': Attr.string('the outputs of the JSON state, base64'),
    force: Attr.boolean('create even when the serial or lineage does not follow the current version'),
  },
  attributesRequired: { message: SERIAL_REQUIRED, pointer: '/data/attributes/serial' },
  relationships: { run: RelationshipInput('run', { description: 'the run that wrote the state (kept as given)' }) },
});
export type StateVersionCreateBody = Static<typeof StateVersionCreateBody>;

/** The body of PATCH /workspaces/:id/state-versions: a rollback to an earlier version. */
export const StateVersionRollbackBody = JsonApiBody({
  types: ['state-versions'],
  requireType: true,
  attributes: {},
  relationships: { 'rollback-state-version': RelationshipInput('rollback-state-version') },
});

/** The optional body of the soft_delete_backing_data action. */
export const SoftDeleteBody = OptionalJsonApiBody({
  types: ['state-versions'],
  attributes: { 'delete-older-than-n-days': Attr.integer('delete when the version is older than this') },
});
export type SoftDeleteBody = Static<typeof SoftDeleteBody>;

const nullableString = Type.Union([Type.String(), Type.Null()]);
const StateVersion = Resource(
  'state-versions',
  {
    'created-at': Type.String({ format: 'date-time' }),
    size: Type.Integer(),
    'hosted-state-download-url': nullableString,
    'hosted-json-state-download-url': nullableString,
    'hosted-state-upload-url': nullableString,
    'hosted-json-state-upload-url': nullableString,
    'resources-processed': Type.Boolean(),
    serial: Type.Integer(),
    'state-version': Type.Union([Type.Integer(), Type.Null()]),
    status: Type.String({ description: 'pending, finalized, discarded, backing_data_soft_deleted, …' }),
    'terraform-version': nullableString,
  },
  'StateVersion',
);
export const StateVersionDocument = Document(StateVersion, 'StateVersionDocument');
export const StateVersionListDocument = ListDocument(StateVersion, 'StateVersionListDocument');

/** Per-version facts the serializer needs beyond the record. */
export interface StateVersionRenderContext {
  /** Absolute base URL (scheme://host[:port]) for download and upload URLs. */
  baseUrl: string;
  uploadTokens: { state: string | null; json: string | null };
  outputIds: string[];
}

export function downloadPath(id: string, target: 'state' | 'json'): string {
  return `/api/v2/state-versions/${id}/${target === 'state' ? 'download' : 'json-download'}`;
}

export function uploadPath(token: string): string {
  return `/v1/object/${token}`;
}

const rel = (type: string, id: string | null) => ({ data: id === null ? null : { type, id } });

export function stateVersionResource(v: StateVersion, ctx: StateVersionRenderContext): Record<string, unknown> {
  // Finalized and soft-deleted versions name their download URL; a soft-deleted one answers 404 there.
  const hasData = v.status === 'finalized' || v.status === 'backing_data_soft_deleted';
  const attributes: Record<string, unknown> = {
    'created-at': v.createdAt.toISOString(),
    size: v.size,
    'hosted-state-download-url': hasData && v.stateSha256 ? ctx.baseUrl + downloadPath(v.id, 'state') : null,
    'hosted-json-state-download-url': hasData && v.jsonSha256 ? ctx.baseUrl + downloadPath(v.id, 'json') : null,
    'hosted-state-upload-url': ctx.uploadTokens.state ? ctx.baseUrl + uploadPath(ctx.uploadTokens.state) : null,
    'hosted-json-state-upload-url': ctx.uploadTokens.json ? ctx.baseUrl + uploadPath(ctx.uploadTokens.json) : null,
    modules: v.modules,
    providers: v.providers,
    resources: v.resources,
    'resources-processed': v.resourcesProcessed,
    // Not an HCP attribute: tells why resources and outputs stayed empty (clients ignore unknown attributes).
    'resources-processing-error': v.processingError,
    intermediate: false,
    serial: v.serial,
    'state-version': v.stateFormatVersion,
    status: v.status,
    'terraform-version': v.terraformVersion,
    'tool-version': v.terraformVersion,
    'billable-rum-count': v.billableRumCount,
    'vcs-commit-sha': null,
    'vcs-commit-url': null,
  };
  if (v.deleteOlderThanNDays !== null) attributes['delete-older-than-n-days'] = v.deleteOlderThanNDays;
  const creatorType = v.createdBy?.kind === 'team' ? 'teams' : 'users';
  const createdBy: Record<string, unknown> = rel(creatorType, v.createdBy?.id ?? null);
  if (v.createdBy) {
    // Both links name the creator's own route (GET /users/:id or /teams/:id), which exists here.
    const creatorPath = `/api/v2/${creatorType}/${v.createdBy.id}`;
    createdBy.links = { self: creatorPath, related: creatorPath };
  }
  return {
    id: v.id,
    type: 'state-versions',
    attributes,
    relationships: {
      run: rel('runs', v.runId),
      'created-by': createdBy,
      workspace: rel('workspaces', v.workspaceId),
      outputs: {
        data: ctx.outputIds.map((id) => ({ type: 'state-version-outputs', id })),
        links: { related: `/api/v2/state-versions/${v.id}/outputs` },
      },
      'rollback-state-version': rel('state-versions', v.rollbackOfId),
    },
    links: { self: `/api/v2/state-versions/${v.id}` },
  };
}

export function outputResource(o: StateVersionOutput): Record<string, unknown> {
  return {
    id: o.id,
    type: 'state-version-outputs',
    attributes: { name: o.name, sensitive: o.sensitive, type: o.type, value: o.value, 'detailed-type': o.detailedType },
    links: { self: `/api/v2/state-version-outputs/${o.id}` },
  };
}

/** The creators (`created_by`) the caller may see, looked up for an include. */
export interface IncludedCreators {
  users: User[];
  teams: TeamView[];
}

/**
 * The `included` array: each related object once, only for what was asked. Creators are
 * rendered as GET /users/:id and /teams/:id render them (no e-mail address, no secrets).
 */
export function includedResources(
  includes: StateVersionInclude[],
  outputs: StateVersionOutput[],
  creators: IncludedCreators = { users: [], teams: [] },
): Record<string, unknown>[] | undefined {
  if (includes.length === 0) return undefined;
  const out: Record<string, unknown>[] = [];
  const seen = new Set<string>();
  const add = (r: Record<string, unknown>) => {
    const key = `${String(r.type)}:${String(r.id)}`;
    if (seen.has(key)) return;
    seen.add(key);
    out.push(r);
  };
  if (includes.includes('created_by')) {
    for (const u of creators.users) add(userResource(u));
    for (const t of creators.teams) add(teamResource(t));
  }
  if (includes.includes('outputs')) for (const o of outputs) add(outputResource(o));
  // Runs are not stored on this server (it runs no plans; a run id given at creation is an
  // opaque reference), so run, run.created_by and run.configuration_version add nothing.
  return out;
}

export function stateVersionDocument(
  v: StateVersion,
  ctx: StateVersionRenderContext,
  included?: Record<string, unknown>[],
): Record<string, unknown> {
  const doc: Record<string, unknown> = { data: stateVersionResource(v, ctx) };
  if (included) doc.included = included;
  return doc;
}

export function stateVersionListDocument(
  page: Page<StateVersion>,
  ctxOf: (v: StateVersion) => StateVersionRenderContext,
  selfUrl: string,
  included?: Record<string, unknown>[],
): Record<string, unknown> {
  const doc: Record<string, unknown> = {
    data: page.items.map((v) => stateVersionResource(v, ctxOf(v))),
    links: paginationLinks(selfUrl, page),
    meta: { pagination: paginationMeta(page) },
  };
  if (included) doc.included = included;
  return doc;
}
