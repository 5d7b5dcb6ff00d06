/**
 * Request-parameter constraints of a policy path rule (`required_parameters`,
 * `allowed_parameters`, `denied_parameters`).
 * https://developer.hashicorp.com/vault/docs/concepts/policies#parameter-constraints
 */

export type ParameterConstraints = Readonly<Record<string, readonly unknown[]>>;

export interface ParameterRules {
  readonly allowedParameters?: ParameterConstraints;
  readonly deniedParameters?: ParameterConstraints;
  readonly requiredParameters?: readonly string[];
}

/** Operations whose request data Vault checks against the constraints. */
const CHECKED_OPERATIONS = new Set(['read', 'create', 'update', 'patch']);

/**
 * True when the request data satisfies the rule's constraints. Parameter names compare
 * case-insensitively against the policy; a denial wins over an allowance; an empty value
 * list means "any value"; `*` as a key means "every parameter". A list-valued parameter is
 * checked element by element (denied if any element is denied, allowed only if all are).
 */
export function parametersAllowed(
  rules: ParameterRules,
  operation: string,
  data: Readonly<Record<string, unknown>>,
): boolean {
  if (!CHECKED_OPERATIONS.has(operation)) return true;
  const keys = Object.keys(data);
  for (const required of rules.requiredParameters ?? []) {
    if (!Object.hasOwn(data, required.toLowerCase())) return false;
  }
  if (keys.length === 0) return true;

  const denied = rules.deniedParameters ?? {};
  if (Object.keys(denied).length > 0) {
    if (Object.hasOwn(denied, '*')) return false;
    for (const key of keys) {
      const list = lookup(denied, key);
      if (list !== undefined && elements(data[key]).some((v) => valueListed(v, list))) return false;
    }
  }

  const allowed = rules.allowedParameters ?? {};
  const allowedKeys = Object.keys(allowed);
  if (allowedKeys.length === 0) return true;
  const allowAll = Object.hasOwn(allowed, '*');
  if (allowAll && allowedKeys.length === 1) return true;
  for (const key of keys) {
    const list = lookup(allowed, key);
    if (list === undefined) {
      if (!allowAll) return false;
      continue;
    }
    if (!elements(data[key]).every((v) => valueListed(v, list))) return false;
  }
  return true;
}

function lookup(c: ParameterConstraints, key: string): readonly unknown[] | undefined {
  const k = key.toLowerCase();
  return Object.hasOwn(c, k) ? c[k] : undefined;
}

function elements(v: unknown): readonly unknown[] {
  return Array.isArray(v) && v.length > 0 ? v : [v];
}

function valueListed(value: unknown, list: readonly unknown[]): boolean {
  if (list.length === 0) return true;
  return list.some((item) => {
    if (typeof item === 'string' && typeof value === 'string') return globMatch(item, value);
    return sameValue(item, value);
  });
}

/** A leading and/or trailing `*` in a listed value matches any suffix/prefix. */
function globMatch(pattern: string, value: string): boolean {
  if (pattern === '*') return true;
  const lead = pattern.startsWith('*');
  const trail = pattern.length > 1 && pattern.endsWith('*');
  const core = pattern.slice(lead ? 1 : 0, trail ? -1 : undefined);
  if (lead && trail) return value.includes(core);
  if (lead) return value.endsWith(core);
  if (trail) return value.startsWith(core);
  return value === pattern;
}

function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  return JSON.stringify(a) === JSON.stringify(b);
}
