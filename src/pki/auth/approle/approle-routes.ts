import { invalid } from '../../../shared/errors.js';
import type { SystemResult } from '../../sys/system-route.js';
import { defineFields } from '../../vault-fields.js';
import type { AuthRequestContext, AuthRoute } from '../auth-route.js';
import { loginResult, roleName } from '../auth-route.js';
import { TOKEN_PARAM_FIELDS } from '../login-token.js';
import { appRoleView, secretIdView } from './approle.js';
import type { AppRoleService } from './approle-service.js';

/**
 * AppRole under auth/<path>/.
 * https://developer.hashicorp.com/vault/api-docs/auth/approle
 */

const LOGIN_FIELDS = defineFields({
  role_id: { type: 'string', default: '' },
  secret_id: { type: 'string', default: '' },
});

const ROLE_FIELDS = defineFields({
  role_name: { type: 'string' },
  role_id: { type: 'string' },
  bind_secret_id: { type: 'bool' },
  secret_id_bound_cidrs: { type: 'commaList' },
  bound_cidr_list: { type: 'commaList' },
  secret_id_num_uses: { type: 'int' },
  secret_id_ttl: { type: 'duration' },
  local_secret_ids: { type: 'bool' },
  ...TOKEN_PARAM_FIELDS,
});

const SECRET_ID_FIELDS = defineFields({
  role_name: { type: 'string' },
  secret_id: { type: 'string' },
  metadata: { type: 'any' },
  cidr_list: { type: 'commaList', default: [] },
  token_bound_cidrs: { type: 'commaList', default: [] },
  ttl: { type: 'duration', default: 0 },
  num_uses: { type: 'int', default: 0 },
});

const SECRET_ID = defineFields({ role_name: { type: 'string' }, secret_id: { type: 'string', default: '' } });
const ACCESSOR = defineFields({ role_name: { type: 'string' }, secret_id_accessor: { type: 'string', default: '' } });
const ROLE_ID = defineFields({ role_name: { type: 'string' }, role_id: { type: 'string', default: '' } });

export function appRoleRoutes(approle: AppRoleService): AuthRoute[] {
  const secretId =
    (custom: boolean) =>
    async (ctx: AuthRequestContext): Promise<SystemResult> => {
      const { values: v, warnings } = SECRET_ID_FIELDS.parse(ctx.body, ctx.params);
      if (custom && !v.secret_id) throw invalid('missing secret_id', 'secret_id');
      const { secretId: id, entry } = await approle.createSecretId(ctx.mount, roleName(ctx.params), {
        secretId: custom ? v.secret_id : undefined,
        metadata: parseMetadata(v.metadata),
        cidrList: v.cidr_list,
        tokenBoundCidrs: v.token_bound_cidrs,
        ttl: v.ttl,
        numUses: v.num_uses,
      });
      return {
        kind: 'json',
        data: {
          secret_id: id,
          secret_id_accessor: entry.accessor,
          secret_id_ttl: entry.ttl,
          secret_id_num_uses: entry.numUses,
        },
        warnings: [...warnings],
      };
    };

  return [
    {
      pattern: 'login',
      fields: LOGIN_FIELDS,
      operations: ['update', 'create'],
      unauthenticated: true,
      async handler(ctx) {
        const { role_id, secret_id } = LOGIN_FIELDS.parse(ctx.body).values;
        return loginResult(await approle.login(ctx.mount, role_id, secret_id, ctx.clientIp));
      },
    },
    {
      pattern: 'role',
      operations: ['list'],
      handler: async (ctx) => ({ kind: 'json', data: { keys: await approle.listRoles(ctx.mount) } }),
    },
    {
      pattern: 'role/:role_name',
      fields: ROLE_FIELDS,
      operations: ['read', 'create', 'update', 'delete'],
      async handler(ctx) {
        const name = roleName(ctx.params);
        if (ctx.operation === 'read')
          return { kind: 'json', data: appRoleView(await approle.readRole(ctx.mount, name)) };
        if (ctx.operation === 'delete') {
          await approle.deleteRole(ctx.mount, name);
          return { kind: 'empty' };
        }
        const { values: v, supplied, warnings } = ROLE_FIELDS.parse(ctx.body, ctx.params);
        await approle.writeRole(ctx.mount, name, ctx.body, {
          bind_secret_id: supplied.has('bind_secret_id') ? v.bind_secret_id : undefined,
          secret_id_bound_cidrs: v.secret_id_bound_cidrs,
          bound_cidr_list: v.bound_cidr_list,
          secret_id_num_uses: v.secret_id_num_uses,
          secret_id_ttl: v.secret_id_ttl,
          local_secret_ids: v.local_secret_ids,
          role_id: v.role_id,
        });
        return warnings.length > 0 ? { kind: 'json', data: null, warnings: [...warnings] } : { kind: 'empty' };
      },
    },
    {
      pattern: 'role/:role_name/role-id',
      fields: ROLE_ID,
      operations: ['read', 'create', 'update'],
      async handler(ctx) {
        const name = roleName(ctx.params);
        if (ctx.operation === 'read') return { kind: 'json', data: { role_id: await approle.roleId(ctx.mount, name) } };
        await approle.setRoleId(ctx.mount, name, ROLE_ID.parse(ctx.body, ctx.params).values.role_id);
        return { kind: 'empty' };
      },
    },
    {
      pattern: 'role/:role_name/secret-id',
      fields: SECRET_ID_FIELDS,
      operations: ['create', 'update', 'list'],
      async handler(ctx) {
        if (ctx.operation !== 'list') return secretId(false)(ctx);
        const keys = await approle.listSecretIdAccessors(ctx.mount, roleName(ctx.params));
        return { kind: 'json', data: { keys } };
      },
    },
    {
      pattern: 'role/:role_name/custom-secret-id',
      operations: ['create', 'update'],
      fields: SECRET_ID_FIELDS,
      handler: secretId(true),
    },
    {
      pattern: 'role/:role_name/secret-id/lookup',
      fields: SECRET_ID,
      operations: ['create', 'update'],
      async handler(ctx) {
        const id = SECRET_ID.parse(ctx.body, ctx.params).values.secret_id;
        const e = await approle.lookupSecretId(ctx.mount, roleName(ctx.params), id);
        return e ? { kind: 'json', data: secretIdView(e) } : { kind: 'empty' };
      },
    },
    {
      pattern: 'role/:role_name/secret-id/destroy',
      fields: SECRET_ID,
      operations: ['create', 'update', 'delete'],
      async handler(ctx) {
        const id = SECRET_ID.parse(ctx.body, ctx.params).values.secret_id;
        await approle.destroySecretId(ctx.mount, roleName(ctx.params), id);
        return { kind: 'empty' };
      },
    },
    {
      pattern: 'role/:role_name/secret-id-accessor/lookup',
      fields: ACCESSOR,
      operations: ['create', 'update'],
      async handler(ctx) {
        const accessor = ACCESSOR.parse(ctx.body, ctx.params).values.secret_id_accessor;
        const e = await approle.lookupSecretIdAccessor(ctx.mount, roleName(ctx.params), accessor);
        return { kind: 'json', data: secretIdView(e) };
      },
    },
    {
      pattern: 'role/:role_name/secret-id-accessor/destroy',
      fields: ACCESSOR,
      operations: ['create', 'update', 'delete'],
      async handler(ctx) {
        const accessor = ACCESSOR.parse(ctx.body, ctx.params).values.secret_id_accessor;
        await approle.destroySecretIdAccessor(ctx.mount, roleName(ctx.params), accessor);
        return { kind: 'empty' };
      },
    },
    {
      pattern: 'tidy/secret-id',
      operations: ['create', 'update'],
      async handler() {
        await approle.tidy();
        return { kind: 'json', data: null, status: 202, warnings: ['Tidy operation successfully started.'] };
      },
    },
  ];
}

/** `metadata` is a JSON object of strings, sent as a JSON string (or as an object). */
function parseMetadata(raw: unknown): Record<string, string> {
  if (raw === undefined || raw === null || raw === '') return {};
  let value: unknown = raw;
  if (typeof raw === 'string') {
    try {
      value = JSON.parse(raw);
    } catch {
      throw invalid('failed to parse metadata: invalid JSON', 'metadata');
    }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw invalid('failed to parse metadata: must be a JSON object of strings', 'metadata');
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(value)) {
    if (typeof v !== 'string') throw invalid(`failed to parse metadata: value of "${k}" is not a string`, 'metadata');
    out[k] = v;
  }
  return out;
}
