import { invalid } from '../shared/errors.js';

/**
 * Reads JSON:API request documents (`{"data":{"type","attributes","relationships"}}`)
 * with exact types: a wrong JSON type is a 422 whose `source.pointer` names the
 * attribute, as clients that decode strictly expect. Absent attributes read as
 * undefined; unknown ones are ignored, as HCP does.
 */
export class JsonApiInput {
  private constructor(
    private readonly attrs: Record<string, unknown>,
    private readonly rels: Record<string, unknown>,
  ) {}

  /**
   * Parses a request body. `type`, when given, must match (one of the types, when several
   * are accepted) unless the client sent an empty or missing type (go-tfe sends
   * `"type":""` on lock requests); with `requireType` an empty or missing type is refused too.
   */
  static parse(
    body: unknown,
    type?: string | readonly string[],
    opts: { optional?: boolean; requireType?: boolean } = {},
  ): JsonApiInput {
    if (body === undefined || body === null || body === '') {
      if (opts.optional) return new JsonApiInput({}, {});
      throw invalid('request body must be a JSON:API document with a "data" object', '/data');
    }
    if (typeof body !== 'object' || Array.isArray(body)) throw invalid('request body must be a JSON object', '/data');
    const data = (body as Record<string, unknown>).data;
    if (data === undefined && opts.optional) return new JsonApiInput({ ...(body as Record<string, unknown>) }, {});
    if (typeof data !== 'object' || data === null || Array.isArray(data))
      throw invalid('"data" must be an object', '/data');
    const d = data as Record<string, unknown>;
    if (d.type !== undefined && typeof d.type !== 'string') throw invalid('"type" must be a string', '/data/type');
    const types = type === undefined ? [] : typeof type === 'string' ? [type] : type;
    const named = types.map((t) => `"${t}"`).join(' or ');
    if (types.length > 0 && opts.requireType && (d.type === undefined || d.type === ''))
      throw invalid(`"type" is required and must be ${named}`, '/data/type');
    if (types.length > 0 && typeof d.type === 'string' && d.type !== '' && !types.includes(d.type))
      throw invalid(`"type" must be ${named}`, '/data/type');
    const attrs = d.attributes ?? {};
    if (typeof attrs !== 'object' || attrs === null || Array.isArray(attrs))
      throw invalid('"attributes" must be an object', '/data/attributes');
    const rels = d.relationships ?? {};
    if (typeof rels !== 'object' || rels === null || Array.isArray(rels))
      throw invalid('"relationships" must be an object', '/data/relationships');
    return new JsonApiInput(attrs as Record<string, unknown>, rels as Record<string, unknown>);
  }

  has(name: string): boolean {
    return this.attrs[name] !== undefined;
  }

  string(name: string): string | undefined {
    const v = this.attrs[name];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'string') throw invalid(`${name} must be a string`, `/data/attributes/${name}`);
    return v;
  }

  /** A string attribute where an explicit null clears the value. */
  nullableString(name: string): string | null | undefined {
    const v = this.attrs[name];
    if (v === null) return null;
    return this.string(name);
  }

  boolean(name: string): boolean | undefined {
    const v = this.attrs[name];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'boolean') throw invalid(`${name} must be a boolean`, `/data/attributes/${name}`);
    return v;
  }

  integer(name: string): number | undefined {
    const v = this.attrs[name];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'number' || !Number.isSafeInteger(v))
      throw invalid(`${name} must be an integer`, `/data/attributes/${name}`);
    return v;
  }

  stringArray(name: string): string[] | undefined {
    const v = this.attrs[name];
    if (v === undefined || v === null) return undefined;
    if (!Array.isArray(v) || v.some((x) => typeof x !== 'string'))
      throw invalid(`${name} must be an array of strings`, `/data/attributes/${name}`);
    return v as string[];
  }

  object(name: string): Record<string, unknown> | undefined {
    const v = this.attrs[name];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'object' || Array.isArray(v))
      throw invalid(`${name} must be an object`, `/data/attributes/${name}`);
    return v as Record<string, unknown>;
  }

  /** `relationships.<name>.data` when it is an array (to-many), undefined when absent. */
  relationshipList(name: string): unknown[] | undefined {
    const r = this.rels[name];
    if (r === undefined || r === null) return undefined;
    const data = typeof r === 'object' && !Array.isArray(r) ? (r as Record<string, unknown>).data : undefined;
    if (data === undefined || data === null) return undefined;
    if (!Array.isArray(data)) throw invalid(`relationship ${name} must be {"data":[…]}`, `/data/relationships/${name}`);
    return data;
  }

  /** `relationships.<name>.data` as `{type, id}`, or undefined when absent or null. */
  relationship(name: string): { type: string; id: string } | undefined {
    const r = this.rels[name];
    if (r === undefined || r === null) return undefined;
    const data = typeof r === 'object' && !Array.isArray(r) ? (r as Record<string, unknown>).data : undefined;
    if (data === undefined || data === null) return undefined;
    const d = data as Record<string, unknown>;
    if (typeof d !== 'object' || typeof d.id !== 'string' || (d.type !== undefined && typeof d.type !== 'string')) {
      throw invalid(`relationship ${name} must be {"data":{"type","id"}}`, `/data/relationships/${name}`);
    }
    return { type: (d.type as string | undefined) ?? '', id: d.id };
  }
}
