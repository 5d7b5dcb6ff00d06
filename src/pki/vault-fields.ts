import { invalid } from '../shared/errors.js';
import { parseDurationSeconds } from '../shared/durations.js';

/**
 * Vault's lenient input types in one place. Clients send `"72h"` or `259200`, `"a,b"` or
 * `["a","b"]`, `"true"` or `true`; form bodies carry only strings. Every path declares its
 * fields once with defineFields() and gets typed values back.
 * https://developer.hashicorp.com/vault/api-docs#api-operations (request data) and the
 * framework's field types (string, int, bool, duration, comma string slice, map).
 */

export type FieldType = 'string' | 'int' | 'bool' | 'duration' | 'commaList' | 'map' | 'any';

export interface FieldTypeMap {
  string: string;
  int: number;
  bool: boolean;
  /** Whole seconds. */
  duration: number;
  commaList: string[];
  map: Record<string, unknown>;
  any: unknown;
}

export interface FieldSpec<T extends FieldType = FieldType> {
  readonly type: T;
  readonly default?: FieldTypeMap[T] | Readonly<FieldTypeMap[T]>;
  readonly required?: boolean;
}

export type FieldSchema = Readonly<Record<string, FieldSpec>>;

type ValueFor<F> =
  F extends FieldSpec<infer T>
    ? F extends { readonly required: true }
      ? FieldTypeMap[T]
      : F extends { readonly default: unknown }
        ? FieldTypeMap[T]
        : FieldTypeMap[T] | undefined
    : never;

export type FieldValues<S extends FieldSchema> = { -readonly [K in keyof S]: ValueFor<S[K]> };

export interface ParsedFields<S extends FieldSchema> {
  readonly values: FieldValues<S>;
  /** Fields the caller actually sent (non-null), as opposed to defaults. */
  readonly supplied: ReadonlySet<keyof S & string>;
  /** Keys not in the schema, sorted; Vault ignores them with a warning. */
  readonly unknown: readonly string[];
  /** Body keys overridden by a path parameter of the same name, sorted. */
  readonly replacedByPath: readonly string[];
  /** The warnings Vault adds to the response for the two lists above. */
  readonly warnings: readonly string[];
}

export interface FieldSet<S extends FieldSchema> {
  readonly schema: S;
  /**
   * Coerces a request's parameters. `pathParams` win over body keys of the same name.
   * Throws DomainError('invalid') naming the field and the value on a conversion failure.
   */
  parse(body: unknown, pathParams?: Readonly<Record<string, string>>): ParsedFields<S>;
}

export function defineFields<const S extends FieldSchema>(schema: S): FieldSet<S> {
  // Worked out once per schema: every request of a path then costs one pass over its fields.
  const fields = Object.entries(schema).map(([name, spec]) => ({
    name,
    spec,
    // Lists and maps are copied per request so that no caller can change the shared default.
    fresh: Array.isArray(spec.default) || isRecord(spec.default),
  }));
  const known = new Set(Object.keys(schema));
  return {
    schema,
    parse(body, pathParams = {}) {
      const raw = toParamMap(body);
      let replacedByPath: string[] = [];
      for (const k in pathParams) {
        if (!Object.hasOwn(pathParams, k)) continue;
        if (Object.hasOwn(raw, k)) replacedByPath.push(k);
        raw[k] = pathParams[k];
      }
      if (replacedByPath.length > 1) replacedByPath = replacedByPath.sort();

      const values: Record<string, unknown> = {};
      const supplied = new Set<string>();
      for (const { name, spec, fresh } of fields) {
        const input = raw[name];
        if (input === undefined || input === null) {
          if (spec.required) throw invalid(`missing required field "${name}"`, name);
          values[name] = fresh ? cloneDefault(spec.default) : spec.default;
          continue;
        }
        values[name] = coerceField(name, spec.type, input);
        supplied.add(name);
      }
      let unknown: string[] = [];
      for (const k in raw) if (!known.has(k)) unknown.push(k);
      if (unknown.length > 1) unknown = unknown.sort();
      const warnings: string[] = [];
      if (unknown.length > 0) warnings.push(unknownFieldsWarning(unknown));
      if (replacedByPath.length > 0) warnings.push(replacedByPathWarning(replacedByPath));
      return {
        values: values as FieldValues<S>,
        supplied: supplied as ReadonlySet<keyof S & string>,
        unknown,
        replacedByPath,
        warnings,
      };
    },
  };
}

export function unknownFieldsWarning(names: readonly string[]): string {
  return `Endpoint ignored these unrecognized parameters: [${[...names].sort().join(' ')}]`;
}

export function replacedByPathWarning(names: readonly string[]): string {
  const list = [...names].sort().join(' ');
  return `Endpoint replaced the value of these parameters with the values captured from the endpoint's path: [${list}]`;
}

/** Converts one value to a field type; exported for callers that coerce ad hoc. */
export function coerceField<T extends FieldType>(name: string, type: T, input: unknown): FieldTypeMap[T] {
  // Repeated form keys arrive as lists; a scalar field takes a single such value.
  const v = type !== 'commaList' && type !== 'any' && Array.isArray(input) && input.length === 1 ? input[0] : input;
  let out: unknown;
  switch (type) {
    case 'string':
      out = toStringValue(v);
      break;
    case 'int':
      out = toInt(v);
      break;
    case 'bool':
      out = toBool(v);
      break;
    case 'duration':
      out = toDuration(v);
      break;
    case 'commaList':
      out = toCommaList(v);
      break;
    case 'map':
      out = toMap(v);
      break;
    default:
      out = v;
  }
  if (out === undefined) {
    throw invalid(
      `Field validation failed: error converting input ${display(input)} for field "${name}": not a ` +
        `valid ${TYPE_NAMES[type]}`,
      name,
    );
  }
  return out as FieldTypeMap[T];
}

const TYPE_NAMES: Record<FieldType, string> = {
  string: 'string',
  int: 'integer',
  bool: 'boolean',
  duration: 'duration',
  commaList: 'list of strings',
  map: 'map',
  any: 'value',
};

function toStringValue(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  if (typeof v === 'boolean') return String(v);
  return undefined;
}

function toInt(v: unknown): number | undefined {
  if (typeof v === 'number') return Number.isSafeInteger(v) ? v : undefined;
  if (typeof v === 'string' && /^\s*[-+]?\d+\s*$/.test(v)) {
    const n = Number(v.trim());
    return Number.isSafeInteger(n) ? n : undefined;
  }
  return undefined;
}

const TRUE_STRINGS = new Set(['1', 't', 'true']);
const FALSE_STRINGS = new Set(['0', 'f', 'false', '']);

/** Go's strconv.ParseBool spellings (case-insensitive here), numbers as non-zero, "" as false. */
export function toBool(v: unknown): boolean | undefined {
  if (typeof v === 'boolean') return v;
  if (typeof v === 'number') return Number.isFinite(v) ? v !== 0 : undefined;
  if (typeof v === 'string') {
    const s = v.trim().toLowerCase();
    if (TRUE_STRINGS.has(s)) return true;
    if (FALSE_STRINGS.has(s)) return false;
  }
  return undefined;
}

function toDuration(v: unknown): number | undefined {
  if (typeof v !== 'number' && typeof v !== 'string') return undefined;
  try {
    return parseDurationSeconds(v);
  } catch {
    return undefined;
  }
}

/** Splits strings on commas; trims every element and drops empty ones, for arrays too. */
export function toCommaList(v: unknown): string[] | undefined {
  let items: readonly unknown[];
  if (typeof v === 'string') items = v.split(',');
  else if (Array.isArray(v)) items = v;
  else if (typeof v === 'number') items = [v];
  else return undefined;
  const out: string[] = [];
  for (const item of items) {
    const s = toStringValue(item);
    if (s === undefined) return undefined;
    const t = s.trim();
    if (t !== '') out.push(t);
  }
  return out;
}

function toMap(v: unknown): Record<string, unknown> | undefined {
  if (isRecord(v)) return v;
  // Form bodies cannot nest, so a JSON object in a string is accepted too.
  if (typeof v === 'string' && v.trim().startsWith('{')) {
    try {
      const parsed: unknown = JSON.parse(v);
      return isRecord(parsed) ? parsed : undefined;
    } catch {
      return undefined;
    }
  }
  return undefined;
}

function display(v: unknown): string {
  const s = typeof v === 'string' ? JSON.stringify(v) : (JSON.stringify(v) ?? String(v));
  return s.length > 100 ? `${s.slice(0, 97)}...` : s;
}

function cloneDefault(v: unknown): unknown {
  if (Array.isArray(v)) return [...(v as unknown[])];
  if (isRecord(v)) return { ...v };
  return v;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * The request's parameters in an object without a prototype, so that any key, `__proto__`
 * included, is just a key.
 */
function toParamMap(body: unknown): Record<string, unknown> {
  const out = Object.create(null) as Record<string, unknown>;
  if (body === undefined || body === null || body === '') return out;
  if (!isRecord(body)) throw invalid('request data must be a JSON object');
  for (const k of Object.keys(body)) out[k] = body[k];
  return out;
}

/**
 * Reads a request body the way Vault does: JSON by default; a form body only when the
 * content type says so and the text does not start with `{` or `[`. Repeated form keys
 * become lists.
 */
export function parseVaultBody(contentType: string | undefined, text: string): Record<string, unknown> {
  const trimmed = text.trimStart();
  if (trimmed === '') return {};
  const isForm = (contentType ?? '').toLowerCase().split(';')[0]?.trim() === 'application/x-www-form-urlencoded';
  if (isForm && !trimmed.startsWith('{') && !trimmed.startsWith('[')) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of new URLSearchParams(text)) {
      const prev = Object.hasOwn(out, k) ? out[k] : undefined;
      // defineProperty, so that a `__proto__` form key is just a key.
      Object.defineProperty(out, k, {
        value: prev === undefined ? v : Array.isArray(prev) ? [...(prev as string[]), v] : [prev, v],
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return out;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw invalid(`failed to parse JSON input: ${(err as Error).message}`);
  }
  if (!isRecord(parsed)) throw invalid('failed to parse JSON input: the body must be a JSON object');
  return parsed;
}

/**
 * The X.500 subject attributes that CA generation, roles and issuance all take, each a
 * comma list defaulting to empty (Vault's `ou`, `organization`, `country`, …).
 */
export const SUBJECT_NAME_FIELDS = {
  ou: { type: 'commaList', default: [] },
  organization: { type: 'commaList', default: [] },
  country: { type: 'commaList', default: [] },
  locality: { type: 'commaList', default: [] },
  province: { type: 'commaList', default: [] },
  street_address: { type: 'commaList', default: [] },
  postal_code: { type: 'commaList', default: [] },
} as const;
