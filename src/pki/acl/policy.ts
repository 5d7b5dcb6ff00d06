import { invalid } from '../../shared/errors.js';
import { parseDurationSeconds } from '../../shared/durations.js';
import { bodyToObject, hclError, isHclObject, parseHcl } from './hcl.js';
import type { HclObject, HclValue } from './hcl.js';
import { parametersAllowed } from './policy-parameters.js';
import type { ParameterConstraints } from './policy-parameters.js';

export type { ParameterConstraints } from './policy-parameters.js';

/**
 * Vault ACL policies: parsing (HCL or JSON) and compilation into a matcher that follows
 * Vault's precedence rules.
 * https://developer.hashicorp.com/vault/docs/concepts/policies
 */

export const CAPABILITIES = [
  'create',
  'read',
  'update',
  'patch',
  'delete',
  'list',
  'sudo',
  'deny',
  'subscribe',
  'recover',
] as const;
export type Capability = (typeof CAPABILITIES)[number];

/** The logical operations a request maps to; each needs the capability of the same name. */
export type AclOperation = 'create' | 'read' | 'update' | 'patch' | 'delete' | 'list';

export const ROOT_POLICY = 'root';
export const DEFAULT_POLICY = 'default';

/** Capabilities the root policy implies, in the order Vault lists them. */
const ALL_GRANTING: readonly Capability[] = ['create', 'read', 'update', 'patch', 'delete', 'list', 'sudo'];

export interface PathRule {
  /** The pattern without a leading slash; may end in `*` and contain `+` segments. */
  readonly pattern: string;
  readonly capabilities: readonly Capability[];
  readonly allowedParameters?: ParameterConstraints;
  readonly deniedParameters?: ParameterConstraints;
  readonly requiredParameters?: readonly string[];
  readonly minWrappingTtl?: number;
  readonly maxWrappingTtl?: number;
}

export interface Policy {
  readonly rules: readonly PathRule[];
}

/** The pre-capabilities policy shorthand that Vault still accepts (`policy = "write"`). */
const LEGACY_POLICY: Record<string, readonly Capability[]> = {
  deny: ['deny'],
  read: ['read', 'list'],
  write: ['create', 'read', 'update', 'delete', 'list'],
  sudo: ['create', 'read', 'update', 'delete', 'list', 'sudo'],
};

const PATH_KEYS = new Set([
  'capabilities',
  'policy',
  'allowed_parameters',
  'denied_parameters',
  'required_parameters',
  'min_wrapping_ttl',
  'max_wrapping_ttl',
  // Enterprise-only keys Vault accepts; they have no effect here.
  'mfa_methods',
  'control_group',
  'subscribe_event_types',
]);

/**
 * Parses policy text. JSON is recognised by a leading `{`; anything else is HCL.
 * Throws DomainError('invalid') with a message that names the problem (and the line for HCL).
 */
export function parsePolicy(text: string): Policy {
  const trimmed = text.trimStart();
  let root: HclObject;
  let pathBlocks: Array<{ pattern: string; fields: HclObject; line?: number }>;
  if (trimmed.startsWith('{')) {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (err) {
      throw invalid(`failed to parse policy: ${(err as Error).message}`);
    }
    if (!isPlainObject(json)) throw invalid('failed to parse policy: expected a JSON object');
    root = json as HclObject;
    pathBlocks = [];
  } else {
    const entries = parseHcl(text);
    pathBlocks = [];
    const rest: typeof entries = [];
    for (const e of entries) {
      if (e.kind === 'block' && e.type === 'path') {
        if (e.labels.length !== 1)
          throw hclError('a path block needs exactly one label: path "<pattern>" { ... }', e.line);
        pathBlocks.push({ pattern: e.labels[0] as string, fields: bodyToObject(e.body), line: e.line });
      } else {
        rest.push(e);
      }
    }
    root = bodyToObject(rest);
  }

  for (const key of Object.keys(root)) {
    if (key !== 'path' && key !== 'name') throw invalid(`failed to parse policy: invalid key "${key}"`);
  }
  // `path` given as an object (JSON form, or HCL `path = {...}`), or as a list of such objects.
  const pathValue = root['path'];
  if (pathValue !== undefined) {
    const groups = Array.isArray(pathValue) ? pathValue : [pathValue];
    for (const group of groups) {
      if (!isHclObject(group)) throw invalid('failed to parse policy: "path" must map patterns to objects');
      for (const [pattern, fields] of Object.entries(group)) {
        // JSON written for HCL1 sometimes wraps each block in a list.
        const bodies = Array.isArray(fields) && fields.length > 0 ? fields : [fields];
        for (const body of bodies) {
          if (!isHclObject(body)) throw invalid(`failed to parse policy: path "${pattern}" must be an object`);
          pathBlocks.push({ pattern, fields: body });
        }
      }
    }
  }
  return { rules: pathBlocks.map((b) => parsePathRule(b.pattern, b.fields, b.line)) };
}

function parsePathRule(rawPattern: string, fields: HclObject, line: number | undefined): PathRule {
  const where = line === undefined ? `path "${rawPattern}"` : `line ${line}: path "${rawPattern}"`;
  const fail = (msg: string) => invalid(`failed to parse policy: ${where}: ${msg}`);
  const pattern = rawPattern.replace(/^\/+/, '');
  const star = pattern.indexOf('*');
  if (star !== -1 && star !== pattern.length - 1) throw fail('"*" is only allowed at the end of a path');

  for (const key of Object.keys(fields)) {
    if (!PATH_KEYS.has(key)) throw fail(`invalid key "${key}"`);
  }

  const caps = new Set<Capability>();
  const capValue = fields['capabilities'];
  if (capValue !== undefined) {
    for (const c of asStringList(capValue, 'capabilities', fail)) {
      const name = c.toLowerCase();
      if (!(CAPABILITIES as readonly string[]).includes(name)) throw fail(`invalid capability "${c}"`);
      caps.add(name as Capability);
    }
  }
  const legacy = fields['policy'];
  if (legacy !== undefined) {
    const implied = typeof legacy === 'string' ? LEGACY_POLICY[legacy.toLowerCase()] : undefined;
    if (!implied) throw fail(`invalid policy value ${JSON.stringify(legacy)}`);
    for (const c of implied) caps.add(c);
  }

  const rule: {
    -readonly [K in keyof PathRule]: PathRule[K];
  } = { pattern, capabilities: normalizeCapabilities(caps) };
  const allowed = fields['allowed_parameters'];
  if (allowed !== undefined) rule.allowedParameters = asConstraints(allowed, 'allowed_parameters', fail);
  const denied = fields['denied_parameters'];
  if (denied !== undefined) rule.deniedParameters = asConstraints(denied, 'denied_parameters', fail);
  const required = fields['required_parameters'];
  if (required !== undefined) rule.requiredParameters = asStringList(required, 'required_parameters', fail);
  for (const [key, prop] of [
    ['min_wrapping_ttl', 'minWrappingTtl'],
    ['max_wrapping_ttl', 'maxWrappingTtl'],
  ] as const) {
    const v = fields[key];
    if (v === undefined) continue;
    if (typeof v !== 'string' && typeof v !== 'number') throw fail(`${key} must be a duration`);
    try {
      rule[prop] = parseDurationSeconds(v, key);
    } catch {
      throw fail(`invalid ${key} ${JSON.stringify(v)}`);
    }
  }
  return rule;
}

/** `deny` overrides everything else, so a set containing it collapses to just `deny`. */
function normalizeCapabilities(caps: ReadonlySet<Capability>): Capability[] {
  if (caps.has('deny')) return ['deny'];
  return CAPABILITIES.filter((c) => caps.has(c));
}

function asStringList(v: HclValue, key: string, fail: (m: string) => Error): string[] {
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) throw fail(`${key} must be a list of strings`);
  return v as string[];
}

function asConstraints(v: HclValue, key: string, fail: (m: string) => Error): ParameterConstraints {
  if (!isHclObject(v)) throw fail(`${key} must be a map of parameter names to lists`);
  const out: Record<string, unknown[]> = {};
  for (const [name, values] of Object.entries(v)) {
    if (!Array.isArray(values)) throw fail(`${key}.${name} must be a list`);
    Object.defineProperty(out, name.toLowerCase(), {
      value: [...values],
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * The `policy` parameter of a policy write may also be base64 of the text; Vault decodes it
 * whenever it is valid standard base64, which policy text (with spaces and quotes) never is.
 */
export function decodePolicyText(input: string): string {
  const compact = input.replace(/[\r\n]/g, '');
  if (compact.length > 0 && compact.length % 4 === 0 && /^[A-Za-z0-9+/]+={0,2}$/.test(compact)) {
    return Buffer.from(compact, 'base64').toString('utf8');
  }
  return input;
}

/** Policy names are case-insensitive in Vault and stored lowercased. */
export function normalizePolicyName(name: string): string {
  const n = name.trim().toLowerCase();
  if (n === '') throw invalid('policy name must not be empty', 'name');
  return n;
}

/** The root policy is built in and cannot be replaced. */
export function assertPolicyWritable(name: string): void {
  if (normalizePolicyName(name) === ROOT_POLICY) throw invalid('cannot update the "root" policy', 'name');
}

/** Neither built-in policy can be removed. */
export function assertPolicyDeletable(name: string): void {
  const n = normalizePolicyName(name);
  if (n === ROOT_POLICY || n === DEFAULT_POLICY) throw invalid(`cannot delete the "${n}" policy`, 'name');
}

/**
 * Text of the built-in `default` policy, attached to every token unless it was created with
 * `no_default_policy`. It only lets a token inspect and manage itself and its own leases.
 */
export const DEFAULT_POLICY_TEXT = `# Built-in policy given to every token (unless created with no_default_policy).
# It lets a token see and manage itself, nothing more. It may be edited but not deleted.

# Show this token's own properties (policies, TTL, metadata).
path "auth/token/lookup-self" {
  capabilities = ["read"]
}

# Extend this token's own TTL.
path "auth/token/renew-self" {
  capabilities = ["update"]
}

# Revoke this token (and its children).
path "auth/token/revoke-self" {
  capabilities = ["update"]
}

# Ask what this token may do on given paths.
path "sys/capabilities-self" {
  capabilities = ["update"]
}

# Inspect and renew leases attached to secrets this token obtained.
path "sys/leases/lookup" {
  capabilities = ["update"]
}

path "sys/leases/renew" {
  capabilities = ["update"]
}

path "sys/renew" {
  capabilities = ["update"]
}

# Work with wrapped responses.
path "sys/wrapping/lookup" {
  capabilities = ["update"]
}

path "sys/wrapping/unwrap" {
  capabilities = ["update"]
}

path "sys/wrapping/wrap" {
  capabilities = ["update"]
}
`;

/** A policy assigned to a token; `root` needs no text. */
export interface NamedPolicy {
  readonly name: string;
  readonly policy?: Policy;
}

/** What the merged rules for one pattern allow. */
export interface Permissions {
  readonly capabilities: readonly Capability[];
  readonly allowedParameters?: ParameterConstraints;
  readonly deniedParameters?: ParameterConstraints;
  readonly requiredParameters?: readonly string[];
  readonly minWrappingTtl?: number;
  readonly maxWrappingTtl?: number;
}

export interface AclCheck {
  /** The operation's capability is granted and nothing denies it. */
  readonly allowed: boolean;
  /** `sudo` is granted on the matched path (needed on root-protected paths). */
  readonly sudo: boolean;
  readonly capabilities: readonly Capability[];
  readonly isRoot: boolean;
  /** The winning pattern, as written in the policy (with its trailing `*`). */
  readonly matchedPath?: string;
  readonly permissions?: Permissions;
}

interface WildcardRule {
  readonly pattern: string;
  readonly segments: readonly string[];
  readonly isPrefix: boolean;
  readonly firstWildcard: number;
  readonly wildcards: number;
  /** Pattern without its trailing `*`; used for the length and lexical tie-breaks. */
  readonly stem: string;
  readonly permissions: Permissions;
}

interface Candidate {
  readonly pattern: string;
  readonly isPrefix: boolean;
  readonly firstWildcard: number;
  readonly wildcards: number;
  readonly stem: string;
  readonly permissions: Permissions;
}

/**
 * The ACL of one token: the union of its policies. Several policies naming the same
 * pattern merge (capabilities unioned, a `deny` anywhere wins); different patterns matching
 * one path do not merge: only the most specific one applies.
 */
export class Acl {
  readonly isRoot: boolean;
  private readonly exact = new Map<string, Permissions>();
  private readonly prefixes: Array<{ prefix: string; pattern: string; permissions: Permissions }> = [];
  private readonly wildcards: WildcardRule[] = [];

  constructor(policies: readonly NamedPolicy[]) {
    this.isRoot = policies.some((p) => p.name === ROOT_POLICY);
    const merged = new Map<string, MutablePermissions>();
    for (const { policy } of policies) {
      for (const rule of policy?.rules ?? []) {
        const existing = merged.get(rule.pattern);
        if (existing) mergeInto(existing, rule);
        else merged.set(rule.pattern, fromRule(rule));
      }
    }
    for (const [pattern, perms] of merged) {
      const isPrefix = pattern.endsWith('*');
      const stem = isPrefix ? pattern.slice(0, -1) : pattern;
      const segments = stem.split('/');
      const wildcards = segments.filter((s) => s === '+').length;
      if (wildcards > 0) {
        const firstWildcard =
          segments.indexOf('+') === 0 ? 0 : segments.slice(0, segments.indexOf('+')).join('/').length + 1;
        this.wildcards.push({ pattern, segments, isPrefix, firstWildcard, wildcards, stem, permissions: perms });
      } else if (isPrefix) {
        this.prefixes.push({ prefix: stem, pattern, permissions: perms });
      } else {
        this.exact.set(pattern, perms);
      }
    }
    this.prefixes.sort((a, b) => b.prefix.length - a.prefix.length);
  }

  /**
   * Decides one operation on one path (relative to /v1, e.g. `pki/issue/web`). For `list`
   * the path is given a trailing slash as Vault does, and rules are also tried without it,
   * so `path "pki/certs"` granting `list` covers `LIST pki/certs`. When `data` (the request
   * parameters) is given, the matched rule's parameter constraints apply too.
   */
  check(path: string, operation: AclOperation, data?: Readonly<Record<string, unknown>>): AclCheck {
    if (this.isRoot) return { allowed: true, sudo: true, capabilities: ALL_GRANTING, isRoot: true };
    let p = path.replace(/^\/+/, '');
    if (operation === 'list' && !p.endsWith('/')) p += '/';
    const found = this.lookup(p, operation === 'list');
    if (!found) return { allowed: false, sudo: false, capabilities: [], isRoot: false };
    const caps = found.permissions.capabilities;
    const denied = caps.includes('deny');
    return {
      allowed:
        !denied &&
        caps.includes(operation) &&
        (data === undefined || parametersAllowed(found.permissions, operation, data)),
      sudo: !denied && caps.includes('sudo'),
      capabilities: caps,
      isRoot: false,
      matchedPath: found.pattern,
      permissions: found.permissions,
    };
  }

  /**
   * The capabilities on a path as `sys/capabilities-self` reports them: `["root"]` for
   * root tokens, `["deny"]` when nothing matches or the match denies.
   */
  capabilitiesOf(path: string): string[] {
    if (this.isRoot) return ['root'];
    const found = this.lookup(path.replace(/^\/+/, ''), false);
    const caps = found?.permissions.capabilities ?? [];
    return caps.length === 0 || caps.includes('deny') ? ['deny'] : [...caps];
  }

  /**
   * Whether any rule grants something on `stem` or on a path below it (the OpenAPI document
   * shows a path when its stem, up to the first parameter, is reachable).
   */
  reachesUnder(stem: string): boolean {
    if (this.isRoot) return true;
    const granting = (p: Permissions) => p.capabilities.length > 0 && !p.capabilities.includes('deny');
    const found = this.lookup(stem, false);
    if (found && granting(found.permissions)) return true;
    const below = (pattern: string) => pattern.replace(/\*$/, '').startsWith(stem);
    for (const [pattern, perms] of this.exact) if (below(pattern) && granting(perms)) return true;
    for (const r of this.prefixes) if (below(r.pattern) && granting(r.permissions)) return true;
    const parts = stem.split('/');
    for (const r of this.wildcards) {
      const fits = parts.every((seg, i) => {
        const rs = r.segments[i];
        if (rs === undefined) return r.isPrefix;
        return rs === '+' || rs === seg || (i === parts.length - 1 && rs.startsWith(seg));
      });
      if (fits && granting(r.permissions)) return true;
    }
    return false;
  }

  private lookup(path: string, isList: boolean): { pattern: string; permissions: Permissions } | undefined {
    const trimmed = isList && path.endsWith('/') ? path.slice(0, -1) : undefined;
    const exact = this.exact.get(path) ?? (trimmed === undefined ? undefined : this.exact.get(trimmed));
    if (exact) return { pattern: this.exact.has(path) ? path : (trimmed as string), permissions: exact };
    return this.bestNonExact(path) ?? (trimmed === undefined ? undefined : this.bestNonExact(trimmed));
  }

  private bestNonExact(path: string): Candidate | undefined {
    const candidates: Candidate[] = [];
    const prefix = this.prefixes.find((r) => path.startsWith(r.prefix));
    if (prefix) {
      candidates.push({
        pattern: prefix.pattern,
        isPrefix: true,
        firstWildcard: prefix.prefix.length,
        wildcards: 0,
        stem: prefix.prefix,
        permissions: prefix.permissions,
      });
    }
    if (this.wildcards.length > 0) {
      const parts = path.split('/');
      for (const rule of this.wildcards) if (segmentsMatch(rule, parts)) candidates.push(rule);
    }
    let best: Candidate | undefined;
    for (const c of candidates) if (!best || lowerPriority(best, c)) best = c;
    return best;
  }
}

/** Builds the ACL for a token from its policies (a `root` entry grants everything). */
export function buildAcl(policies: readonly NamedPolicy[]): Acl {
  return new Acl(policies);
}

function segmentsMatch(rule: WildcardRule, parts: readonly string[]): boolean {
  const segs = rule.segments;
  if (parts.length < segs.length) return false;
  if (!rule.isPrefix && parts.length !== segs.length) return false;
  for (let i = 0; i < segs.length; i++) {
    const seg = segs[i] as string;
    const part = parts[i] as string;
    if (seg === '+' || seg === part) continue;
    // With a trailing `*`, the last pattern segment only needs to start the path segment.
    if (rule.isPrefix && i === segs.length - 1 && part.startsWith(seg)) continue;
    return false;
  }
  return true;
}

/**
 * Vault's ordering of non-exact matches, lowest first: an earlier first wildcard loses,
 * then a trailing `*` loses to none, then more `+` segments lose, then a shorter pattern
 * loses, then the lexically smaller one.
 */
function lowerPriority(a: Candidate, b: Candidate): boolean {
  if (a.firstWildcard !== b.firstWildcard) return a.firstWildcard < b.firstWildcard;
  if (a.isPrefix !== b.isPrefix) return a.isPrefix;
  if (a.wildcards !== b.wildcards) return a.wildcards > b.wildcards;
  if (a.stem.length !== b.stem.length) return a.stem.length < b.stem.length;
  return a.stem < b.stem;
}

interface MutablePermissions {
  capabilities: Capability[];
  allowedParameters?: Record<string, unknown[]>;
  deniedParameters?: Record<string, unknown[]>;
  requiredParameters?: string[];
  minWrappingTtl?: number;
  maxWrappingTtl?: number;
}

function fromRule(rule: PathRule): MutablePermissions {
  const p: MutablePermissions = { capabilities: [...rule.capabilities] };
  if (rule.allowedParameters) p.allowedParameters = cloneConstraints(rule.allowedParameters);
  if (rule.deniedParameters) p.deniedParameters = cloneConstraints(rule.deniedParameters);
  if (rule.requiredParameters) p.requiredParameters = [...rule.requiredParameters];
  if (rule.minWrappingTtl !== undefined) p.minWrappingTtl = rule.minWrappingTtl;
  if (rule.maxWrappingTtl !== undefined) p.maxWrappingTtl = rule.maxWrappingTtl;
  return p;
}

function mergeInto(target: MutablePermissions, rule: PathRule): void {
  target.capabilities = normalizeCapabilities(new Set([...target.capabilities, ...rule.capabilities]));
  if (rule.allowedParameters)
    target.allowedParameters = mergeConstraints(target.allowedParameters, rule.allowedParameters);
  if (rule.deniedParameters) target.deniedParameters = mergeConstraints(target.deniedParameters, rule.deniedParameters);
  if (rule.requiredParameters) {
    target.requiredParameters = [...new Set([...(target.requiredParameters ?? []), ...rule.requiredParameters])];
  }
  // The looser wrapping bounds win, as capabilities do.
  if (rule.minWrappingTtl !== undefined) {
    target.minWrappingTtl =
      target.minWrappingTtl === undefined ? rule.minWrappingTtl : Math.min(target.minWrappingTtl, rule.minWrappingTtl);
  }
  if (rule.maxWrappingTtl !== undefined) {
    target.maxWrappingTtl =
      target.maxWrappingTtl === undefined ? rule.maxWrappingTtl : Math.max(target.maxWrappingTtl, rule.maxWrappingTtl);
  }
}

function cloneConstraints(c: ParameterConstraints): Record<string, unknown[]> {
  const out: Record<string, unknown[]> = {};
  for (const [k, v] of Object.entries(c))
    Object.defineProperty(out, k, { value: [...v], enumerable: true, writable: true, configurable: true });
  return out;
}

/** An empty value list means "any value", so it absorbs any list merged with it. */
function mergeConstraints(
  a: Record<string, unknown[]> | undefined,
  b: ParameterConstraints,
): Record<string, unknown[]> {
  const out = a ?? {};
  for (const [k, v] of Object.entries(b)) {
    const prev = Object.hasOwn(out, k) ? out[k] : undefined;
    const merged = prev === undefined ? [...v] : prev.length === 0 || v.length === 0 ? [] : [...prev, ...v];
    Object.defineProperty(out, k, { value: merged, enumerable: true, writable: true, configurable: true });
  }
  return out;
}
