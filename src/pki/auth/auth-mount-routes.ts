import { invalid, isDomainError } from '../../shared/errors.js';
import { defineFields } from '../vault-fields.js';
import type { SystemRequestContext, SystemResult, SystemRoute } from '../sys/system-route.js';
import { isRecord, stringMap, ttlValue } from '../mounts/mount-routes.js';
import { authMountAccessor, effectiveTtls } from './auth-mount.js';
import type { AuthMount } from './auth-mount.js';
import type { AuthMountService } from './auth-mount-service.js';

/**
 * sys/auth: enable, list, read, tune and disable auth methods. `token/` is built in.
 * https://developer.hashicorp.com/vault/api-docs/system/auth
 */

const ENABLE_FIELDS = defineFields({
  type: { type: 'string', default: '' },
  description: { type: 'string' },
  config: { type: 'map' },
  options: { type: 'map' },
  local: { type: 'bool' },
  seal_wrap: { type: 'bool' },
  plugin_name: { type: 'string' },
});

const TUNE_FIELDS = defineFields({
  default_lease_ttl: { type: 'any' },
  max_lease_ttl: { type: 'any' },
  description: { type: 'string' },
  options: { type: 'map' },
  listing_visibility: { type: 'string' },
  token_type: { type: 'string' },
  audit_non_hmac_request_keys: { type: 'commaList' },
  audit_non_hmac_response_keys: { type: 'commaList' },
  passthrough_request_headers: { type: 'commaList' },
  allowed_response_headers: { type: 'commaList' },
});

const RUNNING_VERSION = 'v1.15.0+builtin.strongroom';

/** `tokenEntry`: how the built-in token/ method is listed. */
export function sysAuthRoutes(auth: AuthMountService, tokenEntry: Record<string, unknown>): SystemRoute[] {
  const TOKEN_ENTRY = tokenEntry;
  return [
    {
      pattern: 'sys/auth',
      operations: ['read'],
      mountType: 'system',
      async handler() {
        const data: Record<string, unknown> = { 'token/': TOKEN_ENTRY };
        for (const m of await auth.list()) data[`${m.path}/`] = authEntry(m);
        return { kind: 'json', data, copyToTopLevel: true };
      },
    },
    {
      pattern: 'sys/auth/*path',
      operations: ['read', 'create', 'update', 'delete'],
      mountType: 'system',
      async handler(ctx) {
        const path = (ctx.params['path'] as string).replace(/\/+$/, '');
        if (path.endsWith('/tune') && path !== '/tune') return tune(auth, ctx, path.slice(0, -'/tune'.length));
        if (path === 'token' && ctx.operation !== 'read') throw invalid('token credential backend cannot be disabled');
        switch (ctx.operation) {
          case 'read':
            return {
              kind: 'json',
              data: path === 'token' ? TOKEN_ENTRY : authEntry(await getOrInvalid(auth, path)),
              copyToTopLevel: true,
            };
          case 'delete':
            await auth.disable(path);
            ctx.request.log.info({ authPath: path }, 'auth method disabled');
            return { kind: 'empty' };
          default:
            return enable(auth, ctx, path);
        }
      },
    },
  ];
}

async function enable(auth: AuthMountService, ctx: SystemRequestContext, path: string): Promise<SystemResult> {
  const { values, warnings } = ENABLE_FIELDS.parse(ctx.body);
  const type = values.type || values.plugin_name || '';
  if (type === '') throw invalid('plugin not found in the catalog: ', 'type');
  const tunables = values.config ? parseTunables(values.config) : undefined;
  await auth.enable(path, {
    type,
    description: values.description,
    defaultLeaseTtl: tunables?.defaultLeaseTtl,
    maxLeaseTtl: tunables?.maxLeaseTtl,
    config: tunables?.extras,
    options: values.options ? stringMap(values.options) : undefined,
    local: values.local,
    sealWrap: values.seal_wrap,
  });
  ctx.request.log.info({ authPath: path, authType: type }, 'auth method enabled');
  return warnings.length > 0 ? { kind: 'json', data: null, warnings: [...warnings] } : { kind: 'empty' };
}

async function tune(auth: AuthMountService, ctx: SystemRequestContext, path: string): Promise<SystemResult> {
  if (ctx.operation === 'read') {
    if (path === 'token') return { kind: 'json', data: tuneView(TOKEN_TTLS, {}, 'token based credentials', {}) };
    const m = await getOrInvalid(auth, path);
    return { kind: 'json', data: tuneView(effectiveTtls(m), m.config, m.description, m.options), copyToTopLevel: true };
  }
  if (ctx.operation === 'delete') throw Object.assign(new Error('unsupported operation'), { statusCode: 405 });
  const t = parseTunables(ctx.body);
  await getOrInvalid(auth, path);
  await auth.tune(path, {
    description: typeof ctx.body['description'] === 'string' ? ctx.body['description'] : undefined,
    defaultLeaseTtl: t.defaultLeaseTtl,
    maxLeaseTtl: t.maxLeaseTtl,
    config: t.extras,
    options: isRecord(ctx.body['options']) ? stringMap(ctx.body['options']) : undefined,
  });
  ctx.request.log.info({ authPath: path }, 'auth method tuned');
  return { kind: 'empty' };
}

function tuneView(
  ttls: { defaultLeaseTtl: number; maxLeaseTtl: number },
  config: Record<string, unknown>,
  description: string,
  options: Record<string, string>,
): Record<string, unknown> {
  return {
    default_lease_ttl: ttls.defaultLeaseTtl,
    max_lease_ttl: ttls.maxLeaseTtl,
    force_no_cache: false,
    description,
    options: Object.keys(options).length > 0 ? options : null,
    token_type: 'default-service',
    ...config,
  };
}

/** Vault answers tune/read of a missing auth mount with 400 and this wording. */
async function getOrInvalid(auth: AuthMountService, path: string): Promise<AuthMount> {
  try {
    return await auth.get(path);
  } catch (err) {
    if (isDomainError(err) && err.kind === 'not_found') throw invalid(`No auth engine at auth/${path}/`, 'path');
    throw err;
  }
}

function parseTunables(input: Record<string, unknown>): {
  defaultLeaseTtl?: number;
  maxLeaseTtl?: number;
  extras: Record<string, unknown>;
} {
  const { values, supplied } = TUNE_FIELDS.parse(input);
  const extras: Record<string, unknown> = {};
  for (const k of [
    'listing_visibility',
    'token_type',
    'audit_non_hmac_request_keys',
    'audit_non_hmac_response_keys',
    'passthrough_request_headers',
    'allowed_response_headers',
  ] as const) {
    if (supplied.has(k)) extras[k] = values[k];
  }
  return {
    defaultLeaseTtl: ttlValue('default_lease_ttl', values.default_lease_ttl),
    maxLeaseTtl: ttlValue('max_lease_ttl', values.max_lease_ttl),
    extras,
  };
}

const TOKEN_TTLS = { defaultLeaseTtl: 768 * 3600, maxLeaseTtl: 768 * 3600 };

/** One auth mount as `GET sys/auth` shows it. */
export function authEntry(m: AuthMount): Record<string, unknown> {
  return {
    accessor: authMountAccessor(m),
    config: {
      default_lease_ttl: m.defaultLeaseTtl,
      max_lease_ttl: m.maxLeaseTtl,
      force_no_cache: false,
      token_type: 'default-service',
      ...m.config,
    },
    description: m.description,
    external_entropy_access: false,
    local: m.local,
    options: Object.keys(m.options).length > 0 ? m.options : null,
    plugin_version: '',
    running_plugin_version: RUNNING_VERSION,
    running_sha256: '',
    seal_wrap: m.sealWrap,
    type: m.type,
    uuid: m.id,
  };
}
