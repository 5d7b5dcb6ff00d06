import { createHash } from 'node:crypto';
import type { Clock } from '../../shared/clock.js';
import { forbidden, invalid } from '../../shared/errors.js';
import type { PolicyService } from '../acl/policy-service.js';
import type { TokenService } from '../tokens/token-service.js';
import { defineFields } from '../vault-fields.js';
import { leaseListKeys, leaseTtl } from './lease.js';
import type { LeaseService } from './lease-service.js';
import { statusRoutes } from './status-routes.js';
import type { SystemRequestContext, SystemResult, SystemRoute } from './system-route.js';

/**
 * System endpoints a PKI user needs besides mounts and policies: the status endpoints
 * (status-routes.ts), leases and capabilities.
 * https://developer.hashicorp.com/vault/api-docs/system/leases
 * https://developer.hashicorp.com/vault/api-docs/system/capabilities-self
 */

const LEASE_FIELDS = defineFields({
  lease_id: { type: 'string', default: '' },
  increment: { type: 'duration', default: 0 },
  sync: { type: 'bool', default: true },
});
const CAPS_FIELDS = defineFields({
  paths: { type: 'commaList' },
  path: { type: 'commaList' },
  token: { type: 'string', default: '' },
  accessor: { type: 'string', default: '' },
});

export interface SysRouteDeps {
  clock: Clock;
  leases: LeaseService;
  tokens: TokenService;
  policies: PolicyService;
  /** Identifies the storage this cluster shares (for cluster_id). */
  clusterSeed: string;
  storageType: string;
}

export function sysRoutes(deps: SysRouteDeps): SystemRoute[] {
  const clusterId = uuidFrom(deps.clusterSeed);
  const sys = (
    pattern: string,
    operations: SystemRoute['operations'],
    handler: SystemRoute['handler'],
  ): SystemRoute => ({ pattern, operations, handler, mountType: 'system' });

  const leaseLookup = async (ctx: SystemRequestContext): Promise<SystemResult> => {
    const l = await deps.leases.lookup(LEASE_FIELDS.parse(ctx.body).values.lease_id);
    return {
      kind: 'json',
      data: {
        id: l.id,
        issue_time: l.issuedAt.toISOString(),
        expire_time: l.expiresAt.toISOString(),
        last_renewal: null,
        renewable: false,
        ttl: leaseTtl(l, deps.clock.now()),
      },
    };
  };
  const leaseList = async (ctx: SystemRequestContext): Promise<SystemResult> => {
    const prefix = ctx.params['prefix'] ? `${(ctx.params['prefix'] as string).replace(/\/+$/, '')}/` : '';
    return { kind: 'json', data: { keys: leaseListKeys(await deps.leases.listIds(prefix), prefix) } };
  };
  const leaseId = (ctx: SystemRequestContext): string =>
    ctx.params['id'] ?? LEASE_FIELDS.parse(ctx.body).values.lease_id;
  const revoke = async (ctx: SystemRequestContext): Promise<SystemResult> => {
    await deps.leases.revoke(leaseId(ctx));
    return { kind: 'empty' };
  };
  const renew = async (ctx: SystemRequestContext): Promise<SystemResult> => deps.leases.renew(leaseId(ctx));
  const revokePrefix =
    (force: boolean) =>
    async (ctx: SystemRequestContext): Promise<SystemResult> => {
      await deps.leases.revokePrefix(ctx.params['prefix'] as string, force);
      return { kind: 'empty' };
    };

  const capabilities =
    (mode: 'self' | 'token' | 'accessor') =>
    async (ctx: SystemRequestContext): Promise<SystemResult> => {
      const v = CAPS_FIELDS.parse(ctx.body).values;
      const paths = [...(v.paths ?? []), ...(v.path ?? [])];
      if (paths.length === 0) throw invalid('"paths" must be provided', 'paths');
      let policies: readonly string[];
      if (mode === 'self') {
        if (!ctx.caller) throw forbidden('permission denied');
        policies = ctx.caller.info.policies;
      } else if (mode === 'token') {
        const auth = v.token ? await deps.tokens.authenticate(v.token, { spendUse: false }) : undefined;
        if (!auth) throw invalid('invalid token', 'token');
        policies = auth.info.policies;
      } else {
        policies = (await deps.tokens.findValidByAccessor(v.accessor)).policies;
      }
      const acl = await deps.policies.aclFor(policies);
      const data: Record<string, unknown> = {};
      let all: string[] = [];
      for (const p of paths) {
        const caps = acl.capabilitiesOf(p);
        data[p] = [...caps].sort();
        all = [...new Set([...all, ...caps])];
      }
      data['capabilities'] = all.sort();
      return { kind: 'json', data, copyToTopLevel: true };
    };

  return [
    ...statusRoutes({ clock: deps.clock, clusterId, storageType: deps.storageType }),
    sys('sys/leases/lookup', ['update'], leaseLookup),
    sys('sys/leases/lookup', ['list'], leaseList),
    sys('sys/leases/lookup/*prefix', ['list'], leaseList),
    sys('sys/leases/renew', ['update'], renew),
    sys('sys/leases/renew/*id', ['update'], renew),
    sys('sys/renew', ['update'], renew),
    sys('sys/renew/*id', ['update'], renew),
    sys('sys/leases/revoke', ['update'], revoke),
    sys('sys/leases/revoke/*id', ['update'], revoke),
    sys('sys/revoke', ['update'], revoke),
    sys('sys/revoke/*id', ['update'], revoke),
    sys('sys/leases/revoke-prefix/*prefix', ['update'], revokePrefix(false)),
    sys('sys/revoke-prefix/*prefix', ['update'], revokePrefix(false)),
    sys('sys/leases/revoke-force/*prefix', ['update'], revokePrefix(true)),
    sys('sys/revoke-force/*prefix', ['update'], revokePrefix(true)),
    sys('sys/capabilities-self', ['update'], capabilities('self')),
    sys('sys/capabilities', ['update'], capabilities('token')),
    sys('sys/capabilities-accessor', ['update'], capabilities('accessor')),
  ];
}

/** The built-in auth method, the token store, as Vault lists it under sys/auth. */
export function tokenAuthEntry(clusterId: string): Record<string, unknown> {
  return {
    accessor: `auth_token_${clusterId.slice(0, 8)}`,
    config: { default_lease_ttl: 0, max_lease_ttl: 0, force_no_cache: false, token_type: 'default-service' },
    description: 'token based credentials',
    external_entropy_access: false,
    local: false,
    options: null,
    plugin_version: '',
    running_plugin_version: 'v1.15.0+builtin.strongroom',
    running_sha256: '',
    seal_wrap: false,
    type: 'token',
    uuid: clusterId,
  };
}

/** The cluster id every node of one database shows (sys/health, sys/auth's token/). */
export function uuidFrom(seed: string): string {
  const h = createHash('sha256').update(`strongroom-cluster:${seed}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}
