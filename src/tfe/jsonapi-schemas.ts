import { Type } from '@sinclair/typebox';
import type { TObject, TProperties, TSchema } from '@sinclair/typebox';

/**
 * The JSON:API documents of /api/v2 as TypeBox schemas, written once and reused by every
 * route file: request bodies (validated at the edge by jsonapi-validation.ts), resources,
 * single and list documents, error documents, and the query parameters the routes share.
 *
 * Request schemas carry the texts of today's 422 answers as `x-error-*` keywords (JSON
 * Schema ignores unknown keywords; OpenAPI 3.1 allows them):
 * - `x-error-type`: the value has the wrong JSON type;
 * - `x-error-value`: the right type but a value the schema refuses (const, enum, pattern, range);
 * - `x-error-empty`: an empty string where one is required;
 * - `x-error-required`: the member is missing (or null at the document's root);
 * - `x-pointer`: the `source.pointer` of these errors when it is not the member's own path.
 * Without them, a message names the member and the JSON type it needs.
 */

/** Every scalar attribute also takes null, read as "not given" (or "clear" where the service says so). */
function nullable<T extends TSchema>(schema: T, options: Record<string, unknown> = {}) {
  return Type.Optional(Type.Union([schema, Type.Null()], options));
}

/** Request attribute builders: each a nullable optional member with the message of its JSON type. */
export const Attr = {
  string: (description?: string) => nullable(Type.String(), { description }),
  boolean: (description?: string) => nullable(Type.Boolean(), { description }),
  integer: (description?: string) =>
    nullable(Type.Integer({ minimum: -Number.MAX_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER }), { description }),
  stringArray: (description?: string) => nullable(Type.Array(Type.String()), { description }),
  /** An object whose listed members are booleans (unknown members are ignored). */
  flags: (name: string, flags: readonly string[], description?: string) =>
    nullable(
      Type.Object(
        Object.fromEntries(
          flags.map((k) => [k, nullable(Type.Boolean(), { 'x-error-type': `${name}.${k} must be a boolean` })]),
        ),
      ),
      { description },
    ),
};

/**
 * `{"data":{"type","id"}}`: a to-one relationship in a request (type optional, as go-tfe
 * sometimes omits it). With `required`, a missing relationship is refused with that text.
 */
export function RelationshipInput(name: string, opts: { description?: string; required?: string } = {}) {
  const message = `relationship ${name} must be {"data":{"type","id"}}`;
  const pointer = `/data/relationships/${name}`;
  const idErrors = { 'x-error-type': message, 'x-error-required': message, 'x-pointer': pointer };
  const linkage = Type.Object(
    { type: Type.Optional(Type.String({ 'x-error-type': message, 'x-pointer': pointer })), id: Type.String(idErrors) },
    { 'x-error-type': message, 'x-pointer': pointer },
  );
  if (opts.required) {
    const missing = { 'x-error-required': opts.required, 'x-pointer-required': pointer };
    const data = Type.Object(linkage.properties, { 'x-error-type': message, 'x-pointer': pointer, ...missing });
    return Type.Object({ data }, { description: opts.description, 'x-error-type': message, ...missing });
  }
  const data = Type.Union([linkage, Type.Null()], { 'x-error-type': message, 'x-pointer': pointer });
  return Type.Optional(
    Type.Object({ data: Type.Optional(data) }, { description: opts.description, 'x-error-type': message }),
  );
}

/** The `{"type","id"}` of a request's to-one relationship, or undefined when absent or null. */
export function relationshipOf(
  rel: { data?: { type?: string; id: string } | null } | undefined,
): { type: string; id: string } | undefined {
  const data = rel?.data;
  return data ? { type: data.type ?? '', id: data.id } : undefined;
}

/** A JSON:API type member: the given types, or (unless `requireType`) empty or absent, as go-tfe sends it. */
function TypeMember(types: readonly string[], requireType: boolean) {
  const named = types.map((t) => `"${t}"`).join(' or ');
  const required = `"type" is required and must be ${named}`;
  return Type.Union(
    [...types, ...(requireType ? [] : [''])].map((t) => Type.Literal(t)),
    {
      'x-error-type': '"type" must be a string',
      'x-error-value': `"type" must be ${named}`,
      ...(requireType ? { 'x-error-empty': required, 'x-error-required': required } : {}),
    },
  );
}

export interface JsonApiBodyOptions<A extends TProperties, R extends TProperties> {
  /** Accepted `data.type` values. */
  types: readonly string[];
  /** An empty or missing type is refused too. */
  requireType?: boolean;
  attributes: A;
  relationships?: R;
  /**
   * The text when `relationships` is missing: the member is then required (as when the route
   * needs one of them); its relationships are also checked before the attributes.
   */
  relationshipsRequired?: { message: string; pointer: string };
  /** The text when `attributes` is missing: the member is then required. */
  attributesRequired?: { message: string; pointer: string };
  description?: string;
}

/** The `data` object of a request document. */
function dataObject<A extends TProperties, R extends TProperties>(opts: JsonApiBodyOptions<A, R>) {
  const type = opts.requireType ? TypeMember(opts.types, true) : Type.Optional(TypeMember(opts.types, false));
  const attributes = Type.Optional(Type.Object(opts.attributes, { 'x-error-type': '"attributes" must be an object' }));
  const rels = Type.Object(opts.relationships ?? ({} as R), { 'x-error-type': '"relationships" must be an object' });
  const required = opts.relationshipsRequired;
  const members = required
    ? {
        type,
        relationships: Type.Object(rels.properties, {
          'x-error-type': '"relationships" must be an object',
          'x-error-required': required.message,
          'x-pointer-required': required.pointer,
        }),
        attributes,
      }
    : { type, attributes, relationships: Type.Optional(rels) };
  return Type.Object(members, {
    'x-error-type': '"data" must be an object',
    'x-error-required': '"data" must be an object',
  });
}

const ROOT_ERRORS = {
  'x-error-type': 'request body must be a JSON object',
  'x-error-required': 'request body must be a JSON:API document with a "data" object',
  'x-pointer': '/data',
};

/** A JSON:API request document `{"data":{"type","attributes","relationships"}}`. */
export function JsonApiBody<A extends TProperties, R extends TProperties = TProperties>(
  opts: JsonApiBodyOptions<A, R>,
) {
  return Type.Object({ data: dataObject(opts) }, { ...ROOT_ERRORS, description: opts.description });
}

/**
 * A body clients may leave out (or send `null`), or send as a document, or as its bare
 * attributes (older clients send `{"reason":"…"}` to the lock action): the attributes are
 * then read from the top level, with the same pointers as inside `data.attributes`.
 */
export function OptionalJsonApiBody<A extends TProperties>(opts: JsonApiBodyOptions<A, TProperties>) {
  const bare = Object.fromEntries(
    Object.entries(opts.attributes).map(([k, s]) => [k, { ...s, 'x-pointer': `/data/attributes/${k}` }]),
  ) as unknown as A;
  return Type.Union([Type.Null(), Type.Object({ data: Type.Optional(dataObject(opts)), ...bare })], {
    ...ROOT_ERRORS,
    'x-optional-body': true,
    description: opts.description,
  });
}

/** The attributes of an optional body, wherever the client put them. */
export function optionalAttributes<A>(body: { data?: { attributes?: A } } | null | undefined): Partial<A> {
  if (body === null || body === undefined) return {};
  if (body.data === undefined) return body as Partial<A>;
  return body.data.attributes ?? {};
}

/**
 * Tags as `[{"type":"tags","attributes":{"name"}}]`: the body of the tag relationship
 * routes, and the data of a workspace's `relationships.tags`. Every problem inside an item
 * points at the item's `attributes/name`.
 */
function TagItems(listMessage: string) {
  const each = 'each tag needs attributes.name';
  return Type.Array(
    Type.Object(
      {
        type: Type.Optional(Type.String()),
        attributes: Type.Object(
          { name: Type.String({ 'x-error-type': each, 'x-error-required': each }) },
          { 'x-error-type': each, 'x-error-required': each, 'x-pointer-suffix': '/name' },
        ),
      },
      { 'x-error-type': each, 'x-error-required': each, 'x-pointer-suffix': '/attributes/name' },
    ),
    { 'x-error-type': listMessage, 'x-error-required': listMessage },
  );
}

const TAG_LIST_SHAPE = 'tags must be an array of {"type":"tags","attributes":{"name"}}';

/** `{"data":[tag…]}`, the body of POST and DELETE /workspaces/:id/relationships/tags. */
export const TagListBody = Type.Object(
  { data: TagItems(TAG_LIST_SHAPE) },
  { 'x-error-type': TAG_LIST_SHAPE, 'x-error-required': TAG_LIST_SHAPE, 'x-pointer': '/data' },
);

/** `relationships.tags` of a workspace body: `{"data":[tag…]}`. */
export function TagsRelationshipInput() {
  const message = 'relationship tags must be {"data":[…]}';
  return Type.Optional(
    Type.Object(
      {
        data: Type.Optional(
          Type.Union([TagItems(message), Type.Null()], {
            'x-error-type': message,
            'x-pointer': '/data/relationships/tags',
          }),
        ),
      },
      { 'x-error-type': message },
    ),
  );
}

// ---- responses ----

/** A resource object: id, type, attributes (the listed ones documented; others may follow), relationships, links. */
export function Resource(type: string, attributes: TProperties, title: string) {
  return Type.Object(
    {
      id: Type.String(),
      type: Type.Literal(type),
      attributes: Type.Object(attributes),
      relationships: Type.Optional(Type.Record(Type.String(), RelationshipOut)),
      links: Type.Optional(Links),
    },
    { title },
  );
}

const Links = Type.Record(Type.String(), Type.Union([Type.String(), Type.Null()]));

const ResourceIdentifier = Type.Object({ id: Type.String(), type: Type.String() }, { title: 'ResourceIdentifier' });

/** A relationship in an answer: a linkage (one, many or null) and/or links. */
export const RelationshipOut = Type.Object(
  {
    data: Type.Optional(Type.Union([ResourceIdentifier, Type.Array(ResourceIdentifier), Type.Null()])),
    links: Type.Optional(Links),
  },
  { title: 'Relationship' },
);

const AnyResource = Type.Object(
  { id: Type.String(), type: Type.String(), attributes: Type.Optional(Type.Record(Type.String(), Type.Unknown())) },
  { title: 'IncludedResource' },
);

export const PaginationMeta = Type.Object(
  {
    'current-page': Type.Integer(),
    'page-size': Type.Integer(),
    'prev-page': Type.Union([Type.Integer(), Type.Null()]),
    'next-page': Type.Union([Type.Integer(), Type.Null()]),
    'total-pages': Type.Integer(),
    'total-count': Type.Integer(),
  },
  { title: 'PaginationMeta' },
);

/** `{"data": resource, "included": […]}`. */
export function Document(resource: TSchema, title: string) {
  return Type.Object({ data: resource, included: Type.Optional(Type.Array(AnyResource)) }, { title });
}

/** `{"data": [resource…], "links", "meta": {"pagination"}}`. */
export function ListDocument(resource: TSchema, title: string) {
  return Type.Object(
    {
      data: Type.Array(resource),
      included: Type.Optional(Type.Array(AnyResource)),
      links: Type.Optional(Links),
      meta: Type.Optional(Type.Object({ pagination: Type.Optional(PaginationMeta) })),
    },
    { title },
  );
}

export const ErrorDocument = Type.Object(
  {
    errors: Type.Array(
      Type.Object({
        status: Type.String(),
        title: Type.String(),
        detail: Type.String(),
        source: Type.Optional(Type.Object({ pointer: Type.String() })),
      }),
    ),
  },
  { title: 'ErrorDocument' },
);

export const NoContent = Type.Null({ description: 'No Content' });

/** The error answers every authenticated route may give, added to each route's own. */
export const COMMON_ERRORS = { 401: ErrorDocument, 404: ErrorDocument } as const;
/** …and those of routes that take a body. */
export const BODY_ERRORS = { 400: ErrorDocument, 415: ErrorDocument, 422: ErrorDocument } as const;

// ---- parameters ----

const pageMessage = (name: string) => `${name} must be an integer from 1 to 2147483647`;

/** Query parameters: `include` (comma list, or repeated), pagination. */
export const Query = {
  text: (description?: string) => Type.Optional(Type.String({ description })),
  /** A comma-separated list, which may also be repeated. */
  list: (description: string) => Type.Optional(Type.Union([Type.String(), Type.Array(Type.String())], { description })),
  include: (values: readonly string[]) =>
    Type.Optional(
      Type.Union([Type.String(), Type.Array(Type.String())], {
        description: `comma-separated: ${values.join(', ')}`,
      }),
    ),
  page: {
    'page[number]': Type.Optional(
      Type.String({ description: 'page number, from 1', 'x-error-type': pageMessage('page[number]') }),
    ),
    'page[size]': Type.Optional(
      Type.String({ description: 'page size, 20 by default, at most 100', 'x-error-type': pageMessage('page[size]') }),
    ),
  },
};

export function QueryString<P extends TProperties>(properties: P): TObject<P> {
  return Type.Object(properties);
}

/** Path parameters, each a string. */
export function Params<K extends string>(...names: K[]) {
  return Type.Object(
    Object.fromEntries(names.map((n) => [n, Type.String()])) as { [P in K]: ReturnType<typeof Type.String> },
  );
}
