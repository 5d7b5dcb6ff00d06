import { defineFields } from '../../vault-fields.js';
import type { AuthRoute } from '../auth-route.js';
import { loginResult, roleName } from '../auth-route.js';
import { TOKEN_PARAM_FIELDS } from '../login-token.js';
import { jwtConfigView, jwtRoleView } from './jwt.js';
import type { JwtService } from './jwt-service.js';

/**
 * JWT/OIDC under auth/<path>/ (JWT logins; the browser OIDC flow is not offered).
 * https://developer.hashicorp.com/vault/api-docs/auth/jwt
 */

const CONFIG_FIELDS = defineFields({
  oidc_discovery_url: { type: 'string', default: '' },
  oidc_discovery_ca_pem: { type: 'string', default: '' },
  oidc_client_id: { type: 'string', default: '' },
  oidc_client_secret: { type: 'string' },
  oidc_response_mode: { type: 'string' },
  oidc_response_types: { type: 'commaList' },
  jwks_url: { type: 'string', default: '' },
  jwks_ca_pem: { type: 'string', default: '' },
  jwt_validation_pubkeys: { type: 'commaList', default: [] },
  bound_issuer: { type: 'string', default: '' },
  jwt_supported_algs: { type: 'commaList', default: [] },
  default_role: { type: 'string', default: '' },
  provider_config: { type: 'map' },
  namespace_in_state: { type: 'bool' },
});

const ROLE_FIELDS = defineFields({
  name: { type: 'string' },
  role_type: { type: 'string' },
  bound_audiences: { type: 'commaList' },
  bound_subject: { type: 'string' },
  bound_claims: { type: 'map' },
  bound_claims_type: { type: 'string' },
  claim_mappings: { type: 'map' },
  user_claim: { type: 'string' },
  user_claim_json_pointer: { type: 'bool' },
  groups_claim: { type: 'string' },
  clock_skew_leeway: { type: 'duration' },
  expiration_leeway: { type: 'duration' },
  not_before_leeway: { type: 'duration' },
  allowed_redirect_uris: { type: 'commaList' },
  oidc_scopes: { type: 'commaList' },
  verbose_oidc_logging: { type: 'bool' },
  max_age: { type: 'duration' },
  ...TOKEN_PARAM_FIELDS,
});

const LOGIN_FIELDS = defineFields({ role: { type: 'string', default: '' }, jwt: { type: 'string', default: '' } });

export function jwtRoutes(jwt: JwtService): AuthRoute[] {
  return [
    {
      pattern: 'login',
      fields: LOGIN_FIELDS,
      operations: ['update', 'create'],
      unauthenticated: true,
      async handler(ctx) {
        const { role, jwt: token } = LOGIN_FIELDS.parse(ctx.body).values;
        return loginResult(await jwt.login(ctx.mount, role, token, ctx.clientIp));
      },
    },
    {
      pattern: 'config',
      fields: CONFIG_FIELDS,
      operations: ['read', 'create', 'update'],
      async handler(ctx) {
        if (ctx.operation === 'read') return { kind: 'json', data: jwtConfigView(await jwt.readConfig(ctx.mount)) };
        const { values: v, warnings } = CONFIG_FIELDS.parse(ctx.body);
        await jwt.writeConfig(ctx.mount, {
          oidc_discovery_url: v.oidc_discovery_url,
          oidc_discovery_ca_pem: v.oidc_discovery_ca_pem,
          jwks_url: v.jwks_url,
          jwks_ca_pem: v.jwks_ca_pem,
          jwt_validation_pubkeys: v.jwt_validation_pubkeys,
          bound_issuer: v.bound_issuer,
          jwt_supported_algs: v.jwt_supported_algs,
          default_role: v.default_role,
          oidc_client_id: v.oidc_client_id,
        });
        const extra = v.oidc_client_secret
          ? ['oidc_client_secret is not stored: the OIDC browser flow is not offered']
          : [];
        const all = [...warnings, ...extra];
        return all.length > 0 ? { kind: 'json', data: null, warnings: all } : { kind: 'empty' };
      },
    },
    {
      pattern: 'role',
      operations: ['list'],
      handler: async (ctx) => ({ kind: 'json', data: { keys: await jwt.listRoles(ctx.mount) } }),
    },
    {
      pattern: 'role/:name',
      fields: ROLE_FIELDS,
      operations: ['read', 'create', 'update', 'delete'],
      async handler(ctx) {
        const name = roleName(ctx.params, 'name');
        if (ctx.operation === 'read') return { kind: 'json', data: jwtRoleView(await jwt.readRole(ctx.mount, name)) };
        if (ctx.operation === 'delete') {
          await jwt.deleteRole(ctx.mount, name);
          return { kind: 'empty' };
        }
        const { values: v, warnings } = ROLE_FIELDS.parse(ctx.body, ctx.params);
        await jwt.writeRole(ctx.mount, name, ctx.body, {
          role_type: v.role_type,
          bound_audiences: v.bound_audiences,
          bound_subject: v.bound_subject,
          bound_claims: v.bound_claims,
          bound_claims_type: v.bound_claims_type,
          claim_mappings: v.claim_mappings,
          user_claim: v.user_claim,
          groups_claim: v.groups_claim,
          clock_skew_leeway: v.clock_skew_leeway,
          expiration_leeway: v.expiration_leeway,
          not_before_leeway: v.not_before_leeway,
          allowed_redirect_uris: v.allowed_redirect_uris,
        });
        return warnings.length > 0 ? { kind: 'json', data: null, warnings: [...warnings] } : { kind: 'empty' };
      },
    },
  ];
}
