import { parseCidrList } from '../../shared/cidr.js';
import { invalid } from '../../shared/errors.js';
import { ROOT_POLICY } from '../acl/policy.js';
import { sanitizePolicies } from '../tokens/token.js';
import type { LoginTokenRequest } from '../tokens/token-service.js';
import { defineFields } from '../vault-fields.js';
import type { FieldSchema } from '../vault-fields.js';
import { effectiveTtls } from './auth-mount.js';
import type { AuthMount } from './auth-mount.js';

/**
 * The token fields every auth method's roles share (Vault's tokenutil): what a login's token
 * gets. `policies` and `period` are the older names of token_policies and token_period.
 * https://developer.hashicorp.com/vault/docs/auth/approle#token_policies (same on every method)
 */
export interface TokenParams {
  token_policies: string[];
  token_ttl: number;
  token_max_ttl: number;
  token_explicit_max_ttl: number;
  token_period: number;
  token_num_uses: number;
  token_bound_cidrs: string[];
  token_no_default_policy: boolean;
  token_type: string;
}

export const TOKEN_PARAM_FIELDS = {
  token_policies: { type: 'commaList' },
  policies: { type: 'commaList' },
  token_ttl: { type: 'duration' },
  token_max_ttl: { type: 'duration' },
  token_explicit_max_ttl: { type: 'duration' },
  token_period: { type: 'duration' },
  period: { type: 'duration' },
  token_num_uses: { type: 'int' },
  token_bound_cidrs: { type: 'commaList' },
  token_no_default_policy: { type: 'bool' },
  token_type: { type: 'string' },
} as const satisfies FieldSchema;

const TOKEN_SET = defineFields(TOKEN_PARAM_FIELDS);

export const DEFAULT_TOKEN_PARAMS: TokenParams = Object.freeze({
  token_policies: [],
  token_ttl: 0,
  token_max_ttl: 0,
  token_explicit_max_ttl: 0,
  token_period: 0,
  token_num_uses: 0,
  token_bound_cidrs: [],
  token_no_default_policy: false,
  token_type: 'default',
}) as TokenParams;

/** Applies the token fields of a role write over `current`, with Vault's checks and messages. */
export function updateTokenParams(current: TokenParams, body: Record<string, unknown>): TokenParams {
  const { values: v, supplied } = TOKEN_SET.parse(body);
  const next: TokenParams = { ...current, token_policies: [...current.token_policies] };
  const policies = supplied.has('token_policies')
    ? v.token_policies
    : supplied.has('policies')
      ? v.policies
      : undefined;
  if (policies) next.token_policies = sanitizePolicies(policies, false);
  if (supplied.has('token_ttl')) next.token_ttl = v.token_ttl as number;
  if (supplied.has('token_max_ttl')) next.token_max_ttl = v.token_max_ttl as number;
  if (supplied.has('token_explicit_max_ttl')) next.token_explicit_max_ttl = v.token_explicit_max_ttl as number;
  if (supplied.has('token_period')) next.token_period = v.token_period as number;
  else if (supplied.has('period')) next.token_period = v.period as number;
  if (supplied.has('token_num_uses')) next.token_num_uses = v.token_num_uses as number;
  if (supplied.has('token_no_default_policy')) next.token_no_default_policy = v.token_no_default_policy as boolean;
  if (supplied.has('token_type')) next.token_type = (v.token_type as string) || 'default';
  if (supplied.has('token_bound_cidrs')) next.token_bound_cidrs = checkCidrs('token_bound_cidrs', v.token_bound_cidrs);
  if (next.token_num_uses < 0) throw invalid("'token_num_uses' cannot be negative", 'token_num_uses');
  if (next.token_max_ttl > 0 && next.token_ttl > next.token_max_ttl)
    throw invalid("'token_ttl' cannot be greater than 'token_max_ttl'", 'token_ttl');
  if (!['default', 'service', 'default-service'].includes(next.token_type))
    throw invalid(`invalid 'token_type' value "${next.token_type}": only service tokens are issued`, 'token_type');
  if (next.token_policies.includes(ROOT_POLICY))
    throw invalid('"root" cannot be one of the token policies of an auth method role', 'token_policies');
  return next;
}

/** Validates a CIDR list field and returns it trimmed. */
export function checkCidrs(field: string, list: readonly string[] | undefined): string[] {
  const entries = (list ?? []).map((e) => e.trim()).filter((e) => e !== '');
  const parsed = parseCidrList(entries);
  if ('error' in parsed) throw invalid(`failed to parse ${field}: invalid CIDR address: ${parsed.error}`, field);
  return entries;
}

/** The token fields as role reads show them (with the older names Vault still returns). */
export function tokenParamsView(p: TokenParams): Record<string, unknown> {
  return {
    token_policies: p.token_policies,
    policies: p.token_policies,
    token_ttl: p.token_ttl,
    token_max_ttl: p.token_max_ttl,
    token_explicit_max_ttl: p.token_explicit_max_ttl,
    token_period: p.token_period,
    period: p.token_period,
    token_num_uses: p.token_num_uses,
    token_bound_cidrs: p.token_bound_cidrs,
    token_no_default_policy: p.token_no_default_policy,
    token_type: p.token_type,
  };
}

/**
 * The token a login makes: the role's TTL, else the mount's default, else the system's,
 * never above the role's max TTL (else the mount's, else the system's); periodic roles get
 * their period. Policies gain `default` unless the role says otherwise.
 */
export function planLoginToken(
  mount: Pick<AuthMount, 'path' | 'defaultLeaseTtl' | 'maxLeaseTtl'>,
  p: TokenParams,
  identity: { displayName: string; meta: Record<string, string> | null; boundCidrs?: readonly string[] },
): LoginTokenRequest {
  const mountTtls = effectiveTtls(mount);
  const maxTtl = p.token_max_ttl > 0 ? Math.min(p.token_max_ttl, mountTtls.maxLeaseTtl) : mountTtls.maxLeaseTtl;
  let ttl = p.token_period > 0 ? p.token_period : p.token_ttl > 0 ? p.token_ttl : mountTtls.defaultLeaseTtl;
  if (p.token_period === 0) ttl = Math.min(ttl, maxTtl);
  if (p.token_explicit_max_ttl > 0) ttl = Math.min(ttl, p.token_explicit_max_ttl);
  return {
    policies: sanitizePolicies(p.token_policies, !p.token_no_default_policy),
    meta: identity.meta,
    displayName: identity.displayName,
    numUses: p.token_num_uses,
    ttl,
    maxTtl: p.token_period > 0 ? 0 : maxTtl,
    explicitMaxTtl: p.token_explicit_max_ttl,
    period: p.token_period,
    boundCidrs: identity.boundCidrs && identity.boundCidrs.length > 0 ? identity.boundCidrs : p.token_bound_cidrs,
    path: `auth/${mount.path}/login`,
  };
}
