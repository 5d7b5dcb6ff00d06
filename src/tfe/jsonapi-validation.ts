import { TypeCompiler } from '@sinclair/typebox/compiler';
import type { TSchema } from '@sinclair/typebox';
import type { FastifySchemaCompiler } from 'fastify';
import { invalid } from '../shared/errors.js';

/**
 * Validation of /api/v2 requests against the route schemas (jsonapi-schemas.ts). A
 * compiled TypeBox check decides; only a refused request is walked again, in the schema's
 * member order, to name the first problem the way this API always has: a 422 whose
 * `detail` and `source.pointer` say which member is wrong and why (see the `x-error-*`
 * keywords). Unknown members are allowed everywhere, as HCP Terraform ignores them.
 */
export const jsonApiValidatorCompiler: FastifySchemaCompiler<TSchema> = ({ schema, httpPart }) => {
  const check = TypeCompiler.Compile(schema);
  const optionalBody = (schema as Node)['x-optional-body'] === true;
  const part = httpPart === 'querystring' ? 'query' : (httpPart ?? 'body');
  return (value: unknown) => {
    if (check.Check(value) || (optionalBody && (value === undefined || value === ''))) return true;
    const failure = explain(schema as Node, value, [], part) ?? {
      // The walker knows every keyword the schemas use; this stays as a safety net.
      message: `${part} does not match the schema: ${check.Errors(value).First()?.message ?? 'invalid'}`,
      pointer: pointerOf([], part),
    };
    return { error: invalid(failure.message, failure.pointer) };
  };
};

interface Node {
  type?: string;
  anyOf?: Node[];
  const?: unknown;
  properties?: Record<string, Node>;
  required?: string[];
  items?: Node;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  pattern?: string;
  'x-error-type'?: string;
  'x-error-value'?: string;
  'x-error-empty'?: string;
  'x-error-required'?: string;
  'x-pointer'?: string;
  'x-pointer-suffix'?: string;
  'x-pointer-required'?: string;
  'x-optional-body'?: boolean;
}

interface Failure {
  message: string;
  pointer: string;
}

const ARTICLES: Record<string, string> = {
  string: 'a string',
  boolean: 'a boolean',
  integer: 'an integer',
  number: 'a number',
  object: 'an object',
  null: 'null',
};

function pointerOf(path: readonly string[], part: string): string {
  if (part === 'query') return `/query/${path.join('/')}`;
  return path.length === 0 ? '' : `/${path.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`;
}

function typeName(node: Node): string {
  if (node.type === 'array') return node.items?.type === 'string' ? 'an array of strings' : 'an array';
  return ARTICLES[node.type ?? ''] ?? 'valid';
}

function hasType(node: Node, v: unknown): boolean {
  switch (node.type) {
    case 'string':
      return typeof v === 'string';
    case 'boolean':
      return typeof v === 'boolean';
    case 'integer':
      return typeof v === 'number' && Number.isSafeInteger(v);
    case 'number':
      return typeof v === 'number';
    case 'null':
      return v === null;
    case 'array':
      return Array.isArray(v);
    case 'object':
      return typeof v === 'object' && v !== null && !Array.isArray(v);
    default:
      return true;
  }
}

function valueFits(node: Node, v: unknown): boolean {
  if (node.const !== undefined && v !== node.const) return false;
  if (typeof v === 'number') {
    if (node.minimum !== undefined && v < node.minimum) return false;
    if (node.maximum !== undefined && v > node.maximum) return false;
  }
  if (typeof v === 'string') {
    if (node.minLength !== undefined && v.length < node.minLength) return false;
    if (node.pattern !== undefined && !new RegExp(node.pattern, 'u').test(v)) return false;
  }
  return true;
}

/** The first problem of `value` against `node`, in member order; undefined when it fits. */
function explain(node: Node, value: unknown, path: string[], part: string, outer: Node = {}): Failure | undefined {
  const label = path.at(-1) ?? part;
  const fail = (key: 'x-error-type' | 'x-error-value' | 'x-error-empty' | 'x-error-required', fallback: string) => ({
    message: node[key] ?? outer[key] ?? fallback,
    pointer:
      (key === 'x-error-required' ? (node['x-pointer-required'] ?? outer['x-pointer-required']) : undefined) ??
      node['x-pointer'] ??
      outer['x-pointer'] ??
      pointerOf(path, part) + (node['x-pointer-suffix'] ?? outer['x-pointer-suffix'] ?? ''),
  });
  if (node.anyOf) {
    const branches = node.anyOf;
    if (value === null && branches.some((b) => b.type === 'null')) return undefined;
    if (value === undefined || value === null) return fail('x-error-required', `${label} is required`);
    const others = branches.filter((b) => b.type !== 'null');
    const merged = { ...outer, ...stripShape(node) };
    if (others.every((b) => b.const !== undefined)) {
      if (!others.some((b) => typeof b.const === typeof value)) return fail('x-error-type', `${label} is invalid`);
      if (value === '' && (node['x-error-empty'] ?? outer['x-error-empty']))
        return fail('x-error-empty', `${label} is invalid`);
      return others.some((b) => b.const === value) ? undefined : fail('x-error-value', `${label} is invalid`);
    }
    if (others.length === 1) return explain(others[0] as Node, value, path, part, merged);
    const fitting = others.find((b) => hasType(b, value));
    return fitting ? explain(fitting, value, path, part, merged) : fail('x-error-type', `${label} is invalid`);
  }
  if (value === undefined || (value === null && node.type !== 'null'))
    return fail('x-error-required', `${label} is required`);
  if (!hasType(node, value)) return fail('x-error-type', `${label} must be ${typeName(node)}`);
  if (!valueFits(node, value)) {
    if (value === '' && (node['x-error-empty'] ?? outer['x-error-empty']))
      return fail('x-error-empty', `${label} is invalid`);
    return fail('x-error-value', `${label} must be ${typeName(node)}`);
  }
  if (node.type === 'object' && node.properties) {
    const obj = value as Record<string, unknown>;
    for (const [k, child] of Object.entries(node.properties)) {
      const v = obj[k];
      if (v === undefined && !node.required?.includes(k)) continue;
      const f = explain(child, v, [...path, k], part);
      if (f) return f;
    }
  }
  if (node.type === 'array' && node.items) {
    const items = node.items;
    const list = value as unknown[];
    for (let i = 0; i < list.length; i++) {
      const f = explain(items, list[i], [...path, String(i)], part);
      // A list of scalars is wrong as a whole ("tag-names must be an array of strings").
      if (f) return items.type === 'object' ? f : fail('x-error-type', `${label} must be ${typeName(node)}`);
    }
  }
  return undefined;
}

/** The messages of a union node, without its branches. */
function stripShape(node: Node): Node {
  const { anyOf: _anyOf, ...rest } = node;
  return rest;
}
