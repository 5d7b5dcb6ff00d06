import type { VaultOperation } from './pki-route.js';
import type { FieldSchema, FieldType } from './vault-fields.js';

/**
 * The OpenAPI 3 document of `GET /v1/sys/internal/specs/openapi`, built as Vault builds
 * its own: one path per route pattern (system paths as they are, mount paths under each
 * mount), parameters from the pattern, the request body from the route's field
 * definitions (vault-fields.ts), and only the paths the caller's token can reach.
 */
export interface DescribedRoute {
  pattern: string;
  operations: readonly VaultOperation[];
  fields?: { readonly schema: FieldSchema };
  summary?: string;
  unauthenticated?: boolean;
}

type Json = Record<string, unknown>;

const FIELD_SCHEMAS: Record<FieldType, Json> = {
  string: { type: 'string' },
  int: { type: 'integer' },
  bool: { type: 'boolean' },
  duration: { type: 'string', format: 'duration', description: 'a duration ("72h") or seconds' },
  commaList: { type: 'array', items: { type: 'string' }, description: 'a list, or a comma-separated string' },
  map: { type: 'object' },
  any: {},
};

/** `issuer/:ref/issue/:role` → `issuer/{ref}/issue/{role}`; a trailing `*name` becomes `{name}`, `*` `{path}`. */
export function vaultOpenApiPath(pattern: string): string {
  return pattern
    .replace(/:([A-Za-z0-9_]+)/g, '{$1}')
    .replace(/\*([A-Za-z0-9_]+)$/, '{$1}')
    .replace(/\*$/, '{path}');
}

function requestBody(route: DescribedRoute, pathParams: readonly string[]): Json | undefined {
  const schema = route.fields?.schema;
  if (!schema) return undefined;
  const properties: Record<string, Json> = {};
  const required: string[] = [];
  for (const [name, spec] of Object.entries(schema)) {
    if (pathParams.includes(name)) continue;
    properties[name] = {
      ...FIELD_SCHEMAS[spec.type],
      ...(spec.default !== undefined ? { default: spec.default } : {}),
    };
    if (spec.required) required.push(name);
  }
  if (Object.keys(properties).length === 0) return undefined;
  return {
    required: required.length > 0,
    content: {
      'application/json': {
        schema: { type: 'object', properties, ...(required.length > 0 ? { required } : {}) },
      },
    },
  };
}

const OK = { '200': { description: 'OK' }, '204': { description: 'No Content' } };

function operations(route: DescribedRoute, path: string, tag: string): Json {
  const names = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1] as string);
  const parameters = names.map((name) => ({ name, in: 'path', required: true, schema: { type: 'string' } }));
  const base = (op: string): Json => ({
    operationId: `${op}${path.replace(/[^A-Za-z0-9]+(.)?/g, (_m, c: string | undefined) => (c ?? '').toUpperCase())}`,
    tags: [tag],
    ...(route.summary ? { summary: route.summary } : {}),
    ...(route.unauthenticated ? { security: [] } : {}),
    responses: OK,
  });
  const out: Json = {};
  const ops = new Set(route.operations);
  if (ops.has('read')) out.get = base('read');
  if (ops.has('list')) {
    const list = {
      ...base('list'),
      parameters: [
        { name: 'list', in: 'query', required: !ops.has('read'), schema: { type: 'string', enum: ['true'] } },
      ],
    };
    // A path both read and listed is listed with ?list=true (or the LIST method).
    if (ops.has('read')) (out.get as Json).description = 'read; with ?list=true (or the LIST method) lists';
    else out.get = list;
  }
  if (ops.has('update') || ops.has('create')) {
    const body = requestBody(route, names);
    out.post = { ...base('write'), ...(body ? { requestBody: body } : {}) };
  }
  if (ops.has('patch')) {
    const body = requestBody(route, names);
    out.patch = { ...base('patch'), ...(body ? { requestBody: body } : {}) };
  }
  if (ops.has('delete')) out.delete = base('delete');
  return parameters.length > 0 ? { parameters, ...out } : out;
}

/** The part of a path before its first parameter: what the ACL is asked about. */
function stemOf(path: string): string {
  const i = path.indexOf('{');
  return i < 0 ? path : path.slice(0, i);
}

export function buildVaultOpenApi(opts: {
  systemRoutes: readonly DescribedRoute[];
  mountRoutes: readonly DescribedRoute[];
  /** Mount paths without their trailing slash ("pki", "pki-int"). */
  mounts: readonly string[];
  /** Auth mounts (paths below auth/, without slashes) and the routes of their method. */
  authMounts: readonly { path: string; routes: readonly DescribedRoute[] }[];
  /** Whether the caller may reach a path (relative to /v1) or something below it. */
  visible: (stem: string) => boolean;
  version: string;
}): Json {
  const paths: Record<string, Json> = {};
  const add = (path: string, route: DescribedRoute, tag: string) => {
    if (!route.unauthenticated && !opts.visible(stemOf(path))) return;
    paths[`/${path}`] = { ...paths[`/${path}`], ...operations(route, path, tag) };
  };
  for (const r of opts.systemRoutes) add(vaultOpenApiPath(r.pattern), r, r.pattern.split('/')[0] ?? 'system');
  for (const mount of opts.mounts)
    for (const r of opts.mountRoutes) add(`${mount}/${vaultOpenApiPath(r.pattern)}`, r, mount);
  for (const { path, routes } of opts.authMounts)
    for (const r of routes) add(`auth/${path}/${vaultOpenApiPath(r.pattern)}`, r, `auth/${path}`);
  return {
    openapi: '3.0.2',
    info: {
      title: 'Strongroom',
      description:
        'The Vault-compatible API of this server (PKI mounts, auth methods, tokens, policies, system paths).',
      version: opts.version,
      license: { name: 'MPL-2.0', url: 'https://www.mozilla.org/en-US/MPL/2.0' },
    },
    servers: [{ url: '/v1' }],
    paths: Object.fromEntries(Object.entries(paths).sort(([a], [b]) => a.localeCompare(b))),
    components: {
      securitySchemes: { token: { type: 'apiKey', in: 'header', name: 'X-Vault-Token' } },
    },
    security: [{ token: [] }],
  };
}
