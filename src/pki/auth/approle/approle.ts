import { invalid } from '../../../shared/errors.js';
import { DEFAULT_TOKEN_PARAMS, checkCidrs, tokenParamsView, updateTokenParams } from '../login-token.js';
import type { TokenParams } from '../login-token.js';

/**
 * AppRole roles and secret ids.
 * https://developer.hashicorp.com/vault/api-docs/auth/approle
 */

export interface AppRole extends TokenParams {
  bind_secret_id: boolean;
  secret_id_bound_cidrs: string[];
  secret_id_num_uses: number;
  secret_id_ttl: number;
  local_secret_ids: boolean;
}

export interface SecretIdEntry {
  accessor: string;
  roleName: string;
  /** Logins left; null when unlimited. */
  usesLeft: number | null;
  numUses: number;
  ttl: number;
  expiresAt: Date | null;
  cidrList: string[];
  tokenBoundCidrs: string[];
  metadata: Record<string, string>;
  createdAt: Date;
  updatedAt: Date;
}

const ROLE_NAME = /^[\w.-]+$/;

/** Every failed login says this, whichever of role_id and secret_id was wrong. */
export const LOGIN_FAILED = 'invalid role or secret ID';

export function assertRoleName(name: string): string {
  if (name === '') throw invalid('missing role_name', 'role_name');
  if (!ROLE_NAME.test(name) || name.length > 4096) throw invalid(`invalid role name "${name}"`, 'role_name');
  return name;
}

/** A role write over the current role (or the defaults), with Vault's checks and messages. */
export function updateAppRole(
  current: AppRole | undefined,
  body: Record<string, unknown>,
  fields: AppRoleFields,
): AppRole {
  const base: AppRole = current ?? {
    ...DEFAULT_TOKEN_PARAMS,
    token_policies: [],
    token_bound_cidrs: [],
    bind_secret_id: true,
    secret_id_bound_cidrs: [],
    secret_id_num_uses: 0,
    secret_id_ttl: 0,
    local_secret_ids: false,
  };
  const next: AppRole = { ...base, ...updateTokenParams(base, body) };
  if (fields.bind_secret_id !== undefined) next.bind_secret_id = fields.bind_secret_id;
  const cidrs = fields.secret_id_bound_cidrs ?? fields.bound_cidr_list;
  if (cidrs !== undefined) next.secret_id_bound_cidrs = checkCidrs('secret_id_bound_cidrs', cidrs);
  if (fields.secret_id_num_uses !== undefined) next.secret_id_num_uses = fields.secret_id_num_uses;
  if (fields.secret_id_ttl !== undefined) next.secret_id_ttl = fields.secret_id_ttl;
  if (fields.local_secret_ids !== undefined) {
    if (current && current.local_secret_ids !== fields.local_secret_ids)
      throw invalid('local_secret_ids can only be modified during role creation', 'local_secret_ids');
    next.local_secret_ids = fields.local_secret_ids;
  }
  if (next.secret_id_num_uses < 0) throw invalid('secret_id_num_uses cannot be negative', 'secret_id_num_uses');
  if (!next.bind_secret_id && next.secret_id_bound_cidrs.length === 0 && next.token_bound_cidrs.length === 0)
    throw invalid('at least one constraint should be enabled on the role', 'bind_secret_id');
  return next;
}

export interface AppRoleFields {
  bind_secret_id?: boolean;
  secret_id_bound_cidrs?: string[];
  bound_cidr_list?: string[];
  secret_id_num_uses?: number;
  secret_id_ttl?: number;
  local_secret_ids?: boolean;
}

export function appRoleView(r: AppRole): Record<string, unknown> {
  return {
    bind_secret_id: r.bind_secret_id,
    local_secret_ids: r.local_secret_ids,
    secret_id_bound_cidrs: r.secret_id_bound_cidrs,
    secret_id_num_uses: r.secret_id_num_uses,
    secret_id_ttl: r.secret_id_ttl,
    ...tokenParamsView(r),
  };
}

/**
 * A new secret id's limits: its own CIDRs must lie within the role's (Vault checks that each
 * is a subset), and its TTL and uses default to the role's and may not exceed them.
 */
export function planSecretId(
  role: AppRole,
  req: { ttl: number; numUses: number; cidrList: string[]; tokenBoundCidrs: string[] },
): { ttl: number; numUses: number } {
  if (req.numUses < 0) throw invalid('num_uses cannot be negative', 'num_uses');
  if (role.secret_id_num_uses > 0 && req.numUses > role.secret_id_num_uses)
    throw invalid("num_uses cannot be higher than the role's secret_id_num_uses", 'num_uses');
  if (role.secret_id_ttl > 0 && req.ttl > role.secret_id_ttl)
    throw invalid("ttl cannot be longer than the role's secret_id_ttl", 'ttl');
  if (role.secret_id_bound_cidrs.length > 0 && req.cidrList.some((c) => !role.secret_id_bound_cidrs.includes(c)))
    throw invalid(
      "failed to verify the CIDR restrictions set on the secret ID: CIDRs are not a subset of the role's",
      'cidr_list',
    );
  if (role.token_bound_cidrs.length > 0 && req.tokenBoundCidrs.some((c) => !role.token_bound_cidrs.includes(c)))
    throw invalid(
      "failed to verify the token bound CIDR restrictions set on the secret ID: CIDRs are not a subset of the role's",
      'token_bound_cidrs',
    );
  return {
    ttl: req.ttl > 0 ? req.ttl : role.secret_id_ttl,
    numUses: req.numUses > 0 ? req.numUses : role.secret_id_num_uses,
  };
}

export function secretIdView(s: SecretIdEntry): Record<string, unknown> {
  const rfc = (d: Date) => d.toISOString();
  return {
    cidr_list: s.cidrList,
    creation_time: rfc(s.createdAt),
    expiration_time: s.expiresAt ? rfc(s.expiresAt) : '0001-01-01T00:00:00Z',
    last_updated_time: rfc(s.updatedAt),
    metadata: s.metadata,
    secret_id_accessor: s.accessor,
    secret_id_num_uses: s.usesLeft ?? 0,
    secret_id_ttl: s.ttl,
    token_bound_cidrs: s.tokenBoundCidrs,
  };
}
