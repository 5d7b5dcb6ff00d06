/**
 * Declarative rules of the reference policy service (`strongroom policy-service`): per
 * policy name, which names may be certified, the TTL cap, the issuer to sign with,
 * warnings to pass on, or a flat denial. Pure: parsing the rules file and deciding one
 * CIEPS request. See docs/external-policy.md for the file format.
 */
import { parseDurationSeconds } from '../../shared/durations.js';

export interface PolicyRule {
  /** Glob patterns for DNS names and the common name; `*` stands for any run of characters except a dot. */
  allowedNames: string[];
  allowIpSans: boolean;
  /** Requests above it are capped to it, with a warning. */
  maxTtlSeconds: number;
  /** Used when the request has no `ttl`; at most maxTtlSeconds. */
  ttlSeconds: number;
  /** issuer_ref answered; '' accepts the issuer the request asked for. */
  issuer: string;
  warnings: string[];
  /** When set, every request under this policy is denied with this message. */
  deny: string;
  /** Which of issue, sign and ica (sign-intermediate) the policy allows. */
  issuanceModes: string[];
  storeCertificate: boolean;
  extKeyUsage: string[];
}

export interface PolicyRules {
  policies: Map<string, PolicyRule>;
  /** Policy applied when the request names none; '' means such requests are denied. */
  defaultPolicy: string;
}

const RULE_KEYS = new Set([
  'allowed_names',
  'allow_ip_sans',
  'max_ttl',
  'ttl',
  'issuer',
  'warnings',
  'deny',
  'issuance_modes',
  'store_certificate',
  'ext_key_usage',
]);
const MODES = new Set(['issue', 'sign', 'ica']);

export class RulesError extends Error {}

/** Parses and checks a rules document; every problem is reported with its policy and key. */
export function parseRules(text: string): PolicyRules {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new RulesError(`the rules file is not JSON: ${(err as Error).message}`);
  }
  if (!isRecord(doc)) throw new RulesError('the rules file must hold a JSON object');
  for (const k of Object.keys(doc))
    if (k !== 'policies' && k !== 'default_policy') throw new RulesError(`unknown top-level key "${k}"`);
  if (!isRecord(doc.policies)) throw new RulesError('"policies" must be an object of policy name to rule');
  const policies = new Map<string, PolicyRule>();
  for (const [name, raw] of Object.entries(doc.policies)) policies.set(name, parseRule(name, raw));
  const defaultPolicy = doc.default_policy ?? '';
  if (typeof defaultPolicy !== 'string') throw new RulesError('"default_policy" must be a string');
  if (defaultPolicy !== '' && !policies.has(defaultPolicy))
    throw new RulesError(`default_policy "${defaultPolicy}" is not defined under "policies"`);
  return { policies, defaultPolicy };
}

function parseRule(name: string, raw: unknown): PolicyRule {
  const where = `policy "${name}"`;
  if (!isRecord(raw)) throw new RulesError(`${where} must be an object`);
  for (const k of Object.keys(raw)) if (!RULE_KEYS.has(k)) throw new RulesError(`${where}: unknown key "${k}"`);
  const strings = (k: string, def: string[]): string[] => {
    const v = raw[k];
    if (v === undefined) return def;
    if (!Array.isArray(v) || !v.every((x) => typeof x === 'string'))
      throw new RulesError(`${where}: "${k}" must be a list of strings`);
    return v as string[];
  };
  const str = (k: string): string => {
    const v = raw[k];
    if (v === undefined) return '';
    if (typeof v !== 'string') throw new RulesError(`${where}: "${k}" must be a string`);
    return v;
  };
  const bool = (k: string, def: boolean): boolean => {
    const v = raw[k];
    if (v === undefined) return def;
    if (typeof v !== 'boolean') throw new RulesError(`${where}: "${k}" must be true or false`);
    return v;
  };
  const duration = (k: string, def: number): number => {
    const v = raw[k];
    if (v === undefined) return def;
    if (typeof v !== 'string' && typeof v !== 'number')
      throw new RulesError(`${where}: "${k}" must be a duration such as "24h"`);
    try {
      return parseDurationSeconds(v, k);
    } catch (err) {
      throw new RulesError(`${where}: ${(err as Error).message}`);
    }
  };
  const maxTtlSeconds = duration('max_ttl', 30 * 24 * 3600);
  if (maxTtlSeconds <= 0) throw new RulesError(`${where}: "max_ttl" must be positive`);
  const rule: PolicyRule = {
    allowedNames: strings('allowed_names', []).map((n) => n.toLowerCase()),
    allowIpSans: bool('allow_ip_sans', false),
    maxTtlSeconds,
    ttlSeconds: Math.min(duration('ttl', maxTtlSeconds), maxTtlSeconds),
    issuer: str('issuer'),
    warnings: strings('warnings', []),
    deny: str('deny'),
    issuanceModes: strings('issuance_modes', ['issue', 'sign']),
    storeCertificate: bool('store_certificate', true),
    extKeyUsage: strings('ext_key_usage', ['ServerAuth', 'ClientAuth']),
  };
  for (const m of rule.issuanceModes)
    if (!MODES.has(m)) throw new RulesError(`${where}: unknown issuance mode "${m}" (issue, sign or ica)`);
  return rule;
}

/** `*` matches one or more characters other than a dot; everything else literally, case-insensitively. */
export function globMatches(pattern: string, name: string): boolean {
  const re = new RegExp(
    `^${pattern
      .split('*')
      .map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('[^.]+')}$`,
    'i',
  );
  return re.test(name);
}

/** What the request asks to be certified. */
export interface RequestedNames {
  commonName: string;
  dnsNames: string[];
  ipSans: string[];
  /** Requested ttl in seconds; 0 when none. */
  ttlSeconds: number;
}

export type Decision =
  | { allow: false; message: string }
  | {
      allow: true;
      policy: string;
      rule: PolicyRule;
      commonName: string;
      dnsNames: string[];
      ipSans: string[];
      ttlSeconds: number;
      issuerRef: string;
      warnings: string[];
    };

/** Decides one request: which policy applies, whether the names and mode are allowed, and the TTL. */
export function decide(
  rules: PolicyRules,
  policyName: string,
  mode: string,
  names: RequestedNames,
  requestedIssuerId: string,
): Decision {
  const name = policyName === '' ? rules.defaultPolicy : policyName;
  if (name === '') return { allow: false, message: 'a policy name is required (external-policy/<op>/<policy>)' };
  const rule = rules.policies.get(name);
  if (!rule) return { allow: false, message: `unknown policy "${name}"` };
  if (rule.deny !== '') return { allow: false, message: rule.deny };
  if (!rule.issuanceModes.includes(mode))
    return { allow: false, message: `policy "${name}" does not allow ${mode === 'ica' ? 'sign-intermediate' : mode}` };
  const all = [...(names.commonName !== '' ? [names.commonName] : []), ...names.dnsNames];
  if (all.length === 0 && names.ipSans.length === 0)
    return { allow: false, message: 'the request names nothing to certify (common_name or alt_names)' };
  for (const n of all) {
    if (!rule.allowedNames.some((p) => globMatches(p, n)))
      return { allow: false, message: `name "${n}" is not allowed by policy "${name}"` };
  }
  if (names.ipSans.length > 0 && !rule.allowIpSans)
    return { allow: false, message: `policy "${name}" does not allow IP SANs` };
  const warnings = [...rule.warnings];
  let ttlSeconds = names.ttlSeconds > 0 ? names.ttlSeconds : rule.ttlSeconds;
  if (ttlSeconds > rule.maxTtlSeconds) {
    warnings.push(`ttl capped to the policy's max_ttl of ${rule.maxTtlSeconds}s`);
    ttlSeconds = rule.maxTtlSeconds;
  }
  const dnsNames = [...new Set(all.map((n) => n.toLowerCase()))];
  return {
    allow: true,
    policy: name,
    rule,
    commonName: names.commonName,
    dnsNames,
    ipSans: names.ipSans,
    ttlSeconds,
    issuerRef: rule.issuer !== '' ? rule.issuer : requestedIssuerId,
    warnings,
  };
}

/** A comma list or a JSON list of strings, as Vault clients send them. */
export function listValue(v: unknown): string[] {
  const items =
    typeof v === 'string' ? v.split(',') : Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
  return items.map((s) => s.trim()).filter((s) => s !== '');
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
