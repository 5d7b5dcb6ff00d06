import { invalid, isDomainError } from '../../shared/errors.js';
import type { SystemRequestContext, SystemResult, SystemRoute } from '../sys/system-route.js';
import { defineFields } from '../vault-fields.js';
import type { FieldTypeMap } from '../vault-fields.js';
import { effectiveTtls, mountAccessor } from './mount.js';
import type { Mount, MountConfigExtras } from './mount.js';
import type { MountService } from './mount-service.js';

/**
 * sys/mounts: enable, read, tune and disable secrets engines.
 * https://developer.hashicorp.com/vault/api-docs/system/mounts
 */

const ENABLE_FIELDS = defineFields({
  type: { type: 'string', required: true },
  description: { type: 'string' },
  config: { type: 'map' },
  options: { type: 'map' },
  local: { type: 'bool' },
  seal_wrap: { type: 'bool' },
  external_entropy_access: { type: 'bool' },
  plugin_name: { type: 'string' },
  plugin_version: { type: 'string' },
});

/** Tunables, both inside `config` on enable and at the top level on tune. */
const TUNE_FIELDS = defineFields({
  default_lease_ttl: { type: 'any' },
  max_lease_ttl: { type: 'any' },
  description: { type: 'string' },
  options: { type: 'map' },
  force_no_cache: { type: 'bool' },
  listing_visibility: { type: 'string' },
  passthrough_request_headers: { type: 'commaList' },
  allowed_response_headers: { type: 'commaList' },
  audit_non_hmac_request_keys: { type: 'commaList' },
  audit_non_hmac_response_keys: { type: 'commaList' },
  delegated_auth_accessors: { type: 'commaList' },
  plugin_version: { type: 'string' },
  token_type: { type: 'string' },
  user_lockout_config: { type: 'map' },
});

const RUNNING_VERSION = 'v1.15.0+builtin.strongroom';

export function sysMountRoutes(mounts: MountService): SystemRoute[] {
  return [
    {
      pattern: 'sys/mounts',
      operations: ['read'],
      mountType: 'system',
      async handler() {
        const data: Record<string, unknown> = {};
        for (const m of await mounts.list()) data[`${m.path}/`] = mountEntry(m);
        return { kind: 'json', data, copyToTopLevel: true };
      },
    },
    {
      pattern: 'sys/mounts/*path',
      operations: ['read', 'create', 'update', 'delete'],
      mountType: 'system',
      async handler(ctx) {
        const path = ctx.params['path'] as string;
        if (path.endsWith('/tune') && path !== '/tune') return tuneHandler(mounts, ctx, path.slice(0, -'/tune'.length));
        switch (ctx.operation) {
          case 'read':
            return { kind: 'json', data: mountEntry(await getOrInvalid(mounts, path)), copyToTopLevel: true };
          case 'delete':
            await mounts.disable(path);
            ctx.request.log.info({ mountPath: path }, 'secrets engine disabled');
            return { kind: 'empty' };
          default:
            return enableHandler(mounts, ctx, path);
        }
      },
    },
  ];
}

async function enableHandler(mounts: MountService, ctx: SystemRequestContext, path: string): Promise<SystemResult> {
  const { values, warnings } = ENABLE_FIELDS.parse(ctx.body);
  const tunables = values.config ? parseTunables(values.config) : undefined;
  const options = values.options ? stringMap(values.options) : undefined;
  await mounts.enable(path, {
    type: values.type === '' && values.plugin_name ? values.plugin_name : values.type,
    description: values.description,
    defaultLeaseTtl: tunables?.defaultLeaseTtl,
    maxLeaseTtl: tunables?.maxLeaseTtl,
    config: tunables?.extras,
    options,
    local: values.local,
    sealWrap: values.seal_wrap,
  });
  ctx.request.log.info({ mountPath: path, mountType: values.type }, 'secrets engine enabled');
  return warnings.length > 0 ? { kind: 'json', data: null, warnings: [...warnings] } : { kind: 'empty' };
}

async function tuneHandler(mounts: MountService, ctx: SystemRequestContext, path: string): Promise<SystemResult> {
  if (ctx.operation === 'read') {
    const m = await getOrInvalid(mounts, path);
    const ttl = effectiveTtls(m);
    const data: Record<string, unknown> = {
      default_lease_ttl: ttl.defaultLeaseTtl,
      max_lease_ttl: ttl.maxLeaseTtl,
      force_no_cache: m.config.force_no_cache ?? false,
      description: m.description,
      options: Object.keys(m.options).length > 0 ? m.options : null,
    };
    for (const [k, v] of Object.entries(m.config)) if (k !== 'force_no_cache' && v !== undefined) data[k] = v;
    return { kind: 'json', data, copyToTopLevel: true };
  }
  if (ctx.operation === 'delete') throw Object.assign(new Error('unsupported operation'), { statusCode: 405 });
  const t = parseTunables(ctx.body);
  const description = typeof ctx.body['description'] === 'string' ? ctx.body['description'] : undefined;
  const options = isRecord(ctx.body['options']) ? stringMap(ctx.body['options']) : undefined;
  await getOrInvalid(mounts, path);
  await mounts.tune(path, {
    description,
    defaultLeaseTtl: t.defaultLeaseTtl,
    maxLeaseTtl: t.maxLeaseTtl,
    config: t.extras,
    options,
  });
  ctx.request.log.info({ mountPath: path }, 'secrets engine tuned');
  return { kind: 'empty' };
}

/** Vault answers reads of a missing mount with 400, and clients look for this message. */
async function getOrInvalid(mounts: MountService, path: string): Promise<Mount> {
  try {
    return await mounts.get(path);
  } catch (err) {
    if (isDomainError(err) && err.kind === 'not_found')
      throw invalid(`No secret engine mount at ${path.replace(/\/+$/, '')}/`, 'path');
    throw err;
  }
}

function parseTunables(input: Record<string, unknown>): {
  defaultLeaseTtl?: number;
  maxLeaseTtl?: number;
  extras: MountConfigExtras;
} {
  const { values, supplied } = TUNE_FIELDS.parse(input);
  const extras: MountConfigExtras = {};
  if (supplied.has('force_no_cache')) extras.force_no_cache = values.force_no_cache;
  if (supplied.has('listing_visibility')) extras.listing_visibility = values.listing_visibility;
  for (const k of [
    'passthrough_request_headers',
    'allowed_response_headers',
    'audit_non_hmac_request_keys',
    'audit_non_hmac_response_keys',
    'delegated_auth_accessors',
  ] as const) {
    if (supplied.has(k)) extras[k] = values[k];
  }
  if (supplied.has('plugin_version')) extras.plugin_version = values.plugin_version;
  return {
    defaultLeaseTtl: ttlValue('default_lease_ttl', values.default_lease_ttl),
    maxLeaseTtl: ttlValue('max_lease_ttl', values.max_lease_ttl),
    extras,
  };
}

/** A TTL as Vault takes it on mounts: seconds, a duration string, or "system" (0) for the server value. */
export function ttlValue(name: string, v: FieldTypeMap['any']): number | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v === 'string' && v.trim().toLowerCase() === 'system') return 0;
  return defineFields({ [name]: { type: 'duration' } }).parse({ [name]: v }).values[name] as number;
}

export function stringMap(m: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(m)) if (v !== null && v !== undefined) out[k] = String(v);
  return out;
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** One mount as `GET sys/mounts` shows it; TTLs are the configured values (0 = system). */
export function mountEntry(m: Mount): Record<string, unknown> {
  return {
    accessor: mountAccessor(m),
    config: {
      default_lease_ttl: m.defaultLeaseTtl,
      max_lease_ttl: m.maxLeaseTtl,
      force_no_cache: m.config.force_no_cache ?? false,
      ...withoutForceNoCache(m.config),
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

function withoutForceNoCache(c: MountConfigExtras): Record<string, unknown> {
  const { force_no_cache: _ignored, ...rest } = c;
  return rest;
}
