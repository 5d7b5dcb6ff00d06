import type { FastifyInstance, FastifySchema, RouteOptions } from 'fastify';

declare module 'fastify' {
  interface FastifySchema {
    /** OpenAPI: the operation's one-line summary, longer description and groups. */
    summary?: string;
    description?: string;
    tags?: readonly string[];
  }
}

/**
 * OpenAPI 3.1 descriptions built from the routes Fastify registers: each route's params,
 * querystring, body and response schemas (JSON Schema, as TypeBox writes them) become its
 * operation. Schemas with a `title` are described once under components/schemas and
 * referred to. HEAD routes (which Fastify adds for every GET) are left out.
 */
export interface RouteRecord {
  method: string;
  url: string;
  schema: FastifySchema | undefined;
  /** True when the route needs no credentials. */
  public: boolean;
}

export interface OpenApiInfo {
  title: string;
  version: string;
  description: string;
  /** Media type of request and response bodies. */
  mediaType: string;
  /** The server URL the paths are relative to ("/api/v2"). */
  serverUrl: string;
  /** Prefix removed from each route's URL to give its path. */
  prefix: string;
}

/** Records the routes of an app (and the plugins registered inside it) as they are added. */
export function collectRoutes(app: FastifyInstance, isPublic: (r: RouteOptions) => boolean): RouteRecord[] {
  const routes: RouteRecord[] = [];
  app.addHook('onRoute', (r) => {
    for (const method of Array.isArray(r.method) ? r.method : [r.method]) {
      if (method === 'HEAD') continue;
      routes.push({ method, url: r.url, schema: r.schema, public: isPublic(r) });
    }
  });
  return routes;
}

/** Fastify's `:name` parameters as OpenAPI's `{name}`. */
export function openApiPath(url: string): string {
  return url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

type Json = Record<string, unknown>;

export function buildOpenApiDocument(routes: readonly RouteRecord[], info: OpenApiInfo): Json {
  const components = new Components();
  const paths: Record<string, Record<string, Json>> = {};
  for (const r of routes) {
    if (!r.url.startsWith(info.prefix)) continue;
    const path = openApiPath(r.url.slice(info.prefix.length) || '/');
    const op = operation(r, path, info.mediaType, components);
    (paths[path] ??= {})[r.method.toLowerCase()] = op;
  }
  return {
    openapi: '3.1.0',
    info: { title: info.title, version: info.version, description: info.description },
    servers: [{ url: info.serverUrl }],
    paths: Object.fromEntries(Object.entries(paths).sort(([a], [b]) => a.localeCompare(b))),
    components: {
      schemas: components.schemas,
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'an API token' } },
    },
    security: [{ bearer: [] }],
  };
}

function operation(r: RouteRecord, path: string, mediaType: string, components: Components): Json {
  const s: FastifySchema = r.schema ?? {};
  const parameters: Json[] = [];
  const pathNames = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1] as string);
  const paramProps = (plain(s.params) as Json | undefined)?.properties as Record<string, Json> | undefined;
  for (const name of pathNames)
    parameters.push({
      name,
      in: 'path',
      required: true,
      schema: components.use(paramProps?.[name] ?? { type: 'string' }),
    });
  const q = plain(s.querystring) as Json | undefined;
  const required = new Set((q?.required as string[] | undefined) ?? []);
  for (const [name, schema] of Object.entries((q?.properties as Record<string, Json> | undefined) ?? {})) {
    const { description, ...rest } = schema;
    parameters.push({
      name,
      in: 'query',
      required: required.has(name),
      ...(description ? { description } : {}),
      schema: components.use(rest),
    });
  }
  const op: Json = {
    operationId:
      r.method.toLowerCase() + path.replace(/[^A-Za-z0-9]+(.)?/g, (_m, c?: string) => (c ?? '').toUpperCase()),
    ...(s.summary ? { summary: s.summary } : {}),
    ...(s.description ? { description: s.description } : {}),
    ...(s.tags ? { tags: s.tags } : {}),
    ...(parameters.length > 0 ? { parameters } : {}),
  };
  if (s.body) {
    const body = plain(s.body) as Json;
    op.requestBody = {
      required: body['x-optional-body'] !== true,
      content: { [mediaType]: { schema: components.use(body) } },
    };
  }
  const responses: Json = {};
  for (const [status, schema] of Object.entries((s.response ?? {}) as Record<string, unknown>)) {
    const resp = plain(schema) as Json;
    const description = (resp.description as string | undefined) ?? statusText(status);
    // `x-media-type` marks an answer that is not in the API's own media type (a state file download).
    const media = (resp['x-media-type'] as string | undefined) ?? mediaType;
    responses[status] =
      resp.type === 'null' ? { description } : { description, content: { [media]: { schema: components.use(resp) } } };
  }
  op.responses = Object.keys(responses).length > 0 ? responses : { default: { description: 'the answer' } };
  if (r.public) op.security = [];
  return op;
}

/** The schema as plain JSON (TypeBox's symbol keys dropped). */
function plain(schema: unknown): unknown {
  return schema === undefined ? undefined : JSON.parse(JSON.stringify(schema));
}

/** Titled schemas, each described once and referred to by `$ref`. */
class Components {
  readonly schemas: Record<string, Json> = {};
  private readonly texts = new Map<string, string>();

  use(schema: Json): Json {
    return this.hoist(schema) as Json;
  }

  private hoist(node: unknown): unknown {
    if (Array.isArray(node)) return node.map((n) => this.hoist(n));
    if (typeof node !== 'object' || node === null) return node;
    const out: Json = {};
    for (const [k, v] of Object.entries(node))
      out[k] = k === 'properties' || k === 'patternProperties' ? this.map(v) : this.hoist(v);
    const title = out.title;
    if (typeof title !== 'string') return out;
    const text = JSON.stringify(out);
    const seen = this.texts.get(title);
    if (seen !== undefined && seen !== text) throw new Error(`two different schemas are titled ${title}`);
    this.texts.set(title, text);
    this.schemas[title] = out;
    return { $ref: `#/components/schemas/${title}` };
  }

  private map(v: unknown): unknown {
    if (typeof v !== 'object' || v === null) return v;
    return Object.fromEntries(Object.entries(v).map(([k, s]) => [k, this.hoist(s)]));
  }
}

function statusText(status: string): string {
  const texts: Record<string, string> = {
    '200': 'OK',
    '201': 'Created',
    '204': 'No Content',
    '400': 'Bad Request',
    '401': 'Unauthorized',
    '404': 'Not Found',
    '409': 'Conflict',
    '412': 'Precondition Failed',
    '413': 'Payload Too Large',
    '415': 'Unsupported Media Type',
    '422': 'Unprocessable Entity',
    '423': 'Locked',
    '503': 'Service Unavailable',
  };
  return texts[status] ?? 'the answer';
}
