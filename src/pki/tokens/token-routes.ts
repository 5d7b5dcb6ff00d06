import type { Clock } from '../../shared/clock.js';
import { forbidden, invalid } from '../../shared/errors.js';
import type { CallerToken, SystemRequestContext, SystemResult, SystemRoute } from '../sys/system-route.js';
import { defineFields } from '../vault-fields.js';
import { remainingTtl } from './token.js';
import type { TokenEntry } from './token.js';
import type { TokenService } from './token-service.js';

/**
 * The token store under auth/token.
 * https://developer.hashicorp.com/vault/api-docs/auth/token
 */

const CREATE_FIELDS = defineFields({
  id: { type: 'string' },
  policies: { type: 'commaList' },
  meta: { type: 'map' },
  no_parent: { type: 'bool', default: false },
  no_default_policy: { type: 'bool', default: false },
  renewable: { type: 'bool', default: true },
  ttl: { type: 'duration', default: 0 },
  lease: { type: 'duration', default: 0 },
  explicit_max_ttl: { type: 'duration', default: 0 },
  period: { type: 'duration', default: 0 },
  display_name: { type: 'string', default: '' },
  num_uses: { type: 'int', default: 0 },
  type: { type: 'string', default: '' },
  entity_alias: { type: 'string' },
  role_name: { type: 'string' },
});
const TOKEN_FIELD = defineFields({
  token: { type: 'string', default: '' },
  increment: { type: 'duration', default: 0 },
});
const ACCESSOR_FIELD = defineFields({
  accessor: { type: 'string', default: '' },
  increment: { type: 'duration', default: 0 },
});
const INCREMENT_FIELD = defineFields({ increment: { type: 'duration', default: 0 } });

export function tokenRoutes(tokens: TokenService, clock: Clock): SystemRoute[] {
  const route = (
    pattern: string,
    operations: SystemRoute['operations'],
    handler: SystemRoute['handler'],
    extra: Partial<SystemRoute> = {},
  ): SystemRoute => ({
    pattern,
    operations,
    handler,
    mountType: 'token',
    ...extra,
  });
  const callerOf = (ctx: SystemRequestContext): CallerToken => {
    if (!ctx.caller) throw forbidden('permission denied');
    return ctx.caller;
  };
  const validToken = async (token: string): Promise<TokenEntry> => {
    const e = token ? await tokens.findValid(token) : undefined;
    if (!e) throw forbidden('bad token');
    return e;
  };
  const selfEntry = async (ctx: SystemRequestContext): Promise<TokenEntry | undefined> => callerOf(ctx).entry;

  const create =
    (orphanPath: boolean) =>
    async (ctx: SystemRequestContext): Promise<SystemResult> => {
      const caller = callerOf(ctx);
      const parsed = CREATE_FIELDS.parse(ctx.body, ctx.params);
      const v = parsed.values;
      if (ctx.params['role_name'] !== undefined) throw invalid(`unknown role ${ctx.params['role_name']}`, 'role_name');
      const meta: Record<string, string> = {};
      for (const [k, val] of Object.entries(v.meta ?? {})) if (val !== null && val !== undefined) meta[k] = String(val);
      const { token, entry, warnings } = await tokens.create(caller, ctx.sudo, {
        id: v.id,
        policies: parsed.supplied.has('policies') ? v.policies : undefined,
        meta,
        noParent: v.no_parent,
        noDefaultPolicy: v.no_default_policy,
        renewable: v.renewable,
        ttl: v.ttl > 0 ? v.ttl : v.lease,
        explicitMaxTtl: v.explicit_max_ttl,
        period: v.period,
        displayName: v.display_name,
        numUses: v.num_uses,
        type: v.type,
        orphanPath,
        path: ctx.path,
      });
      ctx.request.log.info(
        { accessor: entry.accessor, policies: entry.policies, actor: caller.info.accessor || 'admin' },
        'token created',
      );
      return {
        kind: 'json',
        data: null,
        auth: authBlock(token, entry, entry.ttl),
        warnings: [...parsed.warnings, ...warnings],
      };
    };

  const lookupResult = (entry: TokenEntry, id: string): SystemResult => ({
    kind: 'json',
    data: lookupData(entry, id, clock.now()),
  });

  return [
    route('auth/token/create', ['update'], create(false)),
    route('auth/token/create-orphan', ['update'], create(true)),
    route('auth/token/create/:role_name', ['update'], create(false)),
    route('auth/token/lookup-self', ['read', 'update'], async (ctx) => {
      const caller = callerOf(ctx);
      const e = await selfEntry(ctx);
      return e ? lookupResult(e, caller.token) : { kind: 'json', data: adminLookupData(caller.token) };
    }),
    route('auth/token/lookup', ['read', 'update'], async (ctx) => {
      const token = TOKEN_FIELD.parse(ctx.body).values.token;
      return lookupResult(await validToken(token), token);
    }),
    route('auth/token/lookup-accessor', ['update'], async (ctx) => {
      const accessor = ACCESSOR_FIELD.parse(ctx.body).values.accessor;
      return lookupResult(await tokens.findValidByAccessor(accessor), '');
    }),
    route('auth/token/renew-self', ['update'], async (ctx) => {
      const caller = callerOf(ctx);
      const e = await selfEntry(ctx);
      if (!e) return { kind: 'json', data: null, auth: adminAuthBlock(caller.token) };
      const r = await tokens.renew(e, INCREMENT_FIELD.parse(ctx.body).values.increment);
      return { kind: 'json', data: null, auth: authBlock(caller.token, r.entry, r.ttl), warnings: r.warnings };
    }),
    route('auth/token/renew', ['update'], async (ctx) => {
      const { token, increment } = TOKEN_FIELD.parse(ctx.body).values;
      const e = token ? await tokens.findValid(token) : undefined;
      if (!e) throw invalid('token not found', 'token');
      const r = await tokens.renew(e, increment);
      return { kind: 'json', data: null, auth: authBlock(token, r.entry, r.ttl), warnings: r.warnings };
    }),
    route('auth/token/renew-accessor', ['update'], async (ctx) => {
      const { accessor, increment } = ACCESSOR_FIELD.parse(ctx.body).values;
      const r = await tokens.renew(await tokens.findValidByAccessor(accessor), increment);
      return { kind: 'json', data: null, auth: authBlock('', r.entry, r.ttl), warnings: r.warnings };
    }),
    route('auth/token/revoke-self', ['update'], async (ctx) => {
      const e = await selfEntry(ctx);
      if (!e) throw invalid('the server admin token cannot be revoked through the API');
      await tokens.revokeTree(e.accessor);
      return { kind: 'empty' };
    }),
    route('auth/token/revoke', ['update'], async (ctx) => {
      const token = TOKEN_FIELD.parse(ctx.body).values.token;
      if (!token) throw invalid('missing token', 'token');
      const e = await tokens.findValid(token);
      if (e) await tokens.revokeTree(e.accessor);
      return { kind: 'empty' };
    }),
    route('auth/token/revoke-accessor', ['update'], async (ctx) => {
      const accessor = ACCESSOR_FIELD.parse(ctx.body).values.accessor;
      const e = await tokens.findValidByAccessor(accessor);
      await tokens.revokeTree(e.accessor);
      return { kind: 'empty' };
    }),
    route('auth/token/revoke-orphan', ['update'], async (ctx) => {
      if (!ctx.sudo) throw invalid('root or sudo privileges required to revoke and orphan');
      const token = TOKEN_FIELD.parse(ctx.body).values.token;
      if (!token) throw invalid('missing token', 'token');
      const e = await tokens.findValid(token);
      if (e) await tokens.revokeOrphan(e.accessor);
      return { kind: 'empty' };
    }),
    route(
      'auth/token/accessors',
      ['list'],
      async () => ({ kind: 'json', data: { keys: await tokens.listAccessors() } }),
      { sudo: true },
    ),
  ];
}

function unix(d: Date): number {
  return Math.floor(d.getTime() / 1000);
}

/** RFC 3339 with seconds precision, as Vault prints times. */
function rfc3339(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** `leaseDuration` is the TTL just granted (creation or renewal). */
export function authBlock(token: string, e: TokenEntry, leaseDuration: number): Record<string, unknown> {
  return {
    client_token: token,
    accessor: e.accessor,
    policies: e.policies,
    token_policies: e.policies,
    identity_policies: null,
    metadata: e.meta,
    lease_duration: leaseDuration,
    renewable: e.renewable && e.expiresAt !== null,
    entity_id: '',
    token_type: 'service',
    orphan: e.orphan,
    mfa_requirement: null,
    num_uses: Math.max(0, e.numUses),
  };
}

function adminAuthBlock(token: string): Record<string, unknown> {
  return {
    client_token: token,
    accessor: '',
    policies: ['root'],
    token_policies: ['root'],
    identity_policies: null,
    metadata: null,
    lease_duration: 0,
    renewable: false,
    entity_id: '',
    token_type: 'service',
    orphan: true,
    mfa_requirement: null,
    num_uses: 0,
  };
}

export function lookupData(e: TokenEntry, id: string, now: Date): Record<string, unknown> {
  const data: Record<string, unknown> = {
    accessor: e.accessor,
    creation_time: unix(e.createdAt),
    creation_ttl: e.ttl,
    display_name: e.displayName,
    entity_id: '',
    expire_time: e.expiresAt ? rfc3339(e.expiresAt) : null,
    explicit_max_ttl: e.explicitMaxTtl,
    id,
    issue_time: rfc3339(e.createdAt),
    meta: e.meta,
    num_uses: Math.max(0, e.numUses),
    orphan: e.orphan,
    path: e.path,
    policies: e.policies,
    renewable: e.renewable,
    ttl: remainingTtl(e, now),
    type: 'service',
  };
  if (e.period > 0) data['period'] = e.period;
  if (e.lastRenewalAt) {
    data['last_renewal'] = rfc3339(e.lastRenewalAt);
    data['last_renewal_time'] = unix(e.lastRenewalAt);
  }
  return data;
}

function adminLookupData(token: string): Record<string, unknown> {
  return {
    accessor: '',
    creation_time: 0,
    creation_ttl: 0,
    display_name: 'root',
    entity_id: '',
    expire_time: null,
    explicit_max_ttl: 0,
    id: token,
    meta: null,
    num_uses: 0,
    orphan: true,
    path: 'auth/token/root',
    policies: ['root'],
    renewable: false,
    ttl: 0,
    type: 'service',
  };
}
