import { invalid } from '../../../shared/errors.js';
import { DEFAULT_TOKEN_PARAMS, tokenParamsView, updateTokenParams } from '../login-token.js';
import type { TokenParams } from '../login-token.js';
import { globMatch } from '../glob.js';

export { globMatch };

/**
 * The JWT/OIDC method's configuration, roles and the checks a login's JWT must pass.
 * https://developer.hashicorp.com/vault/api-docs/auth/jwt
 * https://developer.hashicorp.com/vault/docs/auth/jwt#bound-claims
 */

export interface JwtConfig {
  oidc_discovery_url: string;
  oidc_discovery_ca_pem: string;
  jwks_url: string;
  jwks_ca_pem: string;
  jwt_validation_pubkeys: string[];
  bound_issuer: string;
  jwt_supported_algs: string[];
  default_role: string;
  oidc_client_id: string;
}

export interface JwtRole extends TokenParams {
  role_type: 'jwt';
  bound_audiences: string[];
  bound_subject: string;
  bound_claims: Record<string, string[]>;
  bound_claims_type: 'string' | 'glob';
  claim_mappings: Record<string, string>;
  user_claim: string;
  groups_claim: string;
  clock_skew_leeway: number;
  expiration_leeway: number;
  not_before_leeway: number;
  allowed_redirect_uris: string[];
}

export const SUPPORTED_ALGS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'EdDSA'];

/** Vault's defaults: leeways in seconds. */
const DEFAULT_LEEWAY = { clock_skew_leeway: 60, expiration_leeway: 150, not_before_leeway: 150 };

export function checkJwtConfig(c: JwtConfig): JwtConfig {
  const sources = [c.oidc_discovery_url !== '', c.jwks_url !== '', c.jwt_validation_pubkeys.length > 0];
  if (sources.filter(Boolean).length !== 1)
    throw invalid("exactly one of 'jwt_validation_pubkeys', 'jwks_url' or 'oidc_discovery_url' must be set");
  for (const [field, url] of [
    ['oidc_discovery_url', c.oidc_discovery_url],
    ['jwks_url', c.jwks_url],
  ] as const) {
    if (url !== '' && !/^https?:\/\/[^/]/.test(url))
      throw invalid(`invalid ${field}: "${url}" is not an http(s) URL`, field);
  }
  for (const alg of c.jwt_supported_algs)
    if (!SUPPORTED_ALGS.includes(alg))
      throw invalid(`invalid jwt_supported_algs: unsupported signing algorithm "${alg}"`);
  return c;
}

export function jwtConfigView(c: JwtConfig): Record<string, unknown> {
  return { ...c, oidc_response_mode: '', oidc_response_types: [], provider_config: {}, namespace_in_state: true };
}

export interface JwtRoleFields {
  role_type?: string;
  bound_audiences?: string[];
  bound_subject?: string;
  bound_claims?: Record<string, unknown>;
  bound_claims_type?: string;
  claim_mappings?: Record<string, unknown>;
  user_claim?: string;
  groups_claim?: string;
  clock_skew_leeway?: number;
  expiration_leeway?: number;
  not_before_leeway?: number;
  allowed_redirect_uris?: string[];
}

export function updateJwtRole(current: JwtRole | undefined, body: Record<string, unknown>, f: JwtRoleFields): JwtRole {
  const base: JwtRole = current ?? {
    ...DEFAULT_TOKEN_PARAMS,
    token_policies: [],
    token_bound_cidrs: [],
    role_type: 'jwt',
    bound_audiences: [],
    bound_subject: '',
    bound_claims: {},
    bound_claims_type: 'string',
    claim_mappings: {},
    user_claim: '',
    groups_claim: '',
    ...DEFAULT_LEEWAY,
    allowed_redirect_uris: [],
  };
  const next: JwtRole = { ...base, ...updateTokenParams(base, body) };
  if (f.role_type !== undefined && f.role_type !== '' && f.role_type !== 'jwt') {
    if (f.role_type === 'oidc')
      throw invalid('role_type "oidc" is not supported by this server: use "jwt"', 'role_type');
    throw invalid(`invalid 'role_type': ${f.role_type}`, 'role_type');
  }
  if (f.bound_audiences !== undefined) next.bound_audiences = f.bound_audiences;
  if (f.bound_subject !== undefined) next.bound_subject = f.bound_subject;
  if (f.bound_claims_type !== undefined && f.bound_claims_type !== '') {
    if (f.bound_claims_type !== 'string' && f.bound_claims_type !== 'glob')
      throw invalid(`invalid 'bound_claims_type': ${f.bound_claims_type}`, 'bound_claims_type');
    next.bound_claims_type = f.bound_claims_type;
  }
  if (f.bound_claims !== undefined) next.bound_claims = boundClaims(f.bound_claims);
  if (f.claim_mappings !== undefined) next.claim_mappings = claimMappings(f.claim_mappings);
  if (f.user_claim !== undefined) next.user_claim = f.user_claim;
  if (f.groups_claim !== undefined) next.groups_claim = f.groups_claim;
  for (const k of ['clock_skew_leeway', 'expiration_leeway', 'not_before_leeway'] as const) {
    const v = f[k];
    if (v !== undefined) next[k] = v;
  }
  if (f.allowed_redirect_uris !== undefined) next.allowed_redirect_uris = f.allowed_redirect_uris;
  if (next.user_claim === '') throw invalid('a user claim must be defined on the role', 'user_claim');
  return next;
}

function boundClaims(raw: Record<string, unknown>): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(raw)) {
    const list = Array.isArray(v) ? v : typeof v === 'string' ? v.split(',').map((s) => s.trim()) : [v];
    if (!list.every((x) => typeof x === 'string' || typeof x === 'number' || typeof x === 'boolean'))
      throw invalid(`bound claim is not a string or list: ${JSON.stringify(v)}`, 'bound_claims');
    out[k] = list.map(String);
  }
  return out;
}

function claimMappings(raw: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  const targets = new Set<string>();
  for (const [k, v] of Object.entries(raw)) {
    if (typeof v !== 'string') throw invalid(`claim_mappings values must be strings: "${k}"`, 'claim_mappings');
    if (targets.has(v)) throw invalid(`multiple keys are mapped to metadata key "${v}"`, 'claim_mappings');
    targets.add(v);
    out[k] = v;
  }
  return out;
}

export function jwtRoleView(r: JwtRole): Record<string, unknown> {
  const { role_type, bound_audiences, bound_subject, bound_claims, bound_claims_type, claim_mappings } = r;
  return {
    role_type,
    bound_audiences,
    bound_subject,
    bound_claims: Object.keys(bound_claims).length > 0 ? bound_claims : null,
    bound_claims_type,
    claim_mappings: Object.keys(claim_mappings).length > 0 ? claim_mappings : null,
    user_claim: r.user_claim,
    user_claim_json_pointer: r.user_claim.startsWith('/'),
    groups_claim: r.groups_claim,
    clock_skew_leeway: r.clock_skew_leeway,
    expiration_leeway: r.expiration_leeway,
    not_before_leeway: r.not_before_leeway,
    allowed_redirect_uris: r.allowed_redirect_uris,
    ...tokenParamsView(r),
  };
}

/** A claim by name, or by JSON pointer when the name starts with `/` (`/nested/key`). */
export function claimValue(claims: Record<string, unknown>, name: string): unknown {
  if (!name.startsWith('/')) return claims[name];
  let cur: unknown = claims;
  for (const part of name.slice(1).split('/')) {
    const key = part.replace(/~1/g, '/').replace(/~0/g, '~');
    if (typeof cur !== 'object' || cur === null || Array.isArray(cur)) return undefined;
    cur = (cur as Record<string, unknown>)[key];
  }
  return cur;
}

/** What a verified token's claims yield for the token: display name and metadata. */
export interface JwtIdentity {
  alias: string;
  metadata: Record<string, string>;
}

/**
 * The claim checks of a login (signature already verified): issuer, times with the role's
 * leeways, audience, subject, bound claims, then the user claim and claim mappings.
 * Throws DomainError('invalid') with Vault's wording.
 */
export function checkClaims(
  claims: Record<string, unknown>,
  role: JwtRole,
  opts: { issuer: string; now: Date; roleName: string },
): JwtIdentity {
  const now = opts.now.getTime() / 1000;
  if (opts.issuer !== '' && claims['iss'] !== opts.issuer)
    throw invalid('error validating claims: invalid issuer (iss) claim');
  const exp = numericClaim(claims, 'exp');
  const nbf = numericClaim(claims, 'nbf');
  const iat = numericClaim(claims, 'iat');
  if (exp !== undefined && now > exp + role.expiration_leeway + role.clock_skew_leeway)
    throw invalid('error validating claims: token is expired (exp)');
  if (nbf !== undefined && now < nbf - role.not_before_leeway - role.clock_skew_leeway)
    throw invalid('error validating claims: token not valid yet (nbf)');
  if (iat !== undefined && now < iat - role.clock_skew_leeway)
    throw invalid('error validating claims: token issued in the future (iat)');

  const aud = claims['aud'];
  const audiences = Array.isArray(aud) ? aud.map(String) : typeof aud === 'string' ? [aud] : [];
  if (role.bound_audiences.length > 0) {
    if (!audiences.some((a) => role.bound_audiences.includes(a)))
      throw invalid(
        'error validating claims: invalid audience (aud) claim: audience provided does not match any expected audience',
      );
  } else if (audiences.length > 0) {
    throw invalid('audience claim found in JWT but no audiences bound to the role');
  }
  if (role.bound_subject !== '' && claims['sub'] !== role.bound_subject)
    throw invalid('sub claim does not match bound subject');

  for (const [name, allowed] of Object.entries(role.bound_claims)) {
    const value = claimValue(claims, name);
    if (value === undefined) throw invalid(`claim "${name}" is missing`);
    const given = (Array.isArray(value) ? value : [value]).filter((v) => typeof v !== 'object').map(String);
    const match = (v: string) => allowed.some((a) => (role.bound_claims_type === 'glob' ? globMatch(a, v) : a === v));
    if (!given.some(match)) throw invalid(`claim "${name}" does not match any associated bound claim values`);
  }

  const user = claimValue(claims, role.user_claim);
  if (typeof user !== 'string' && typeof user !== 'number')
    throw invalid(`claim "${role.user_claim}" not found in token`);
  const metadata: Record<string, string> = { role: opts.roleName };
  for (const [claim, key] of Object.entries(role.claim_mappings)) {
    const v = claimValue(claims, claim);
    if (v === undefined) continue;
    if (typeof v === 'object' && v !== null) throw invalid(`error converting claim '${claim}' to string`);
    metadata[key] = String(v);
  }
  return { alias: String(user), metadata };
}

function numericClaim(claims: Record<string, unknown>, name: string): number | undefined {
  const v = claims[name];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v)) throw invalid(`error validating claims: malformed ${name} claim`);
  return v;
}
