import { invalid } from '../../shared/errors.js';
import type { Clock } from '../../shared/clock.js';
import { defineFields } from '../vault-fields.js';
import type { SystemResult, SystemRoute } from './system-route.js';

/**
 * The status endpoints `vault status`, load balancers and monitoring read, answered as Vault
 * answers them on an initialized, unsealed, active single node. No token is needed, as in
 * Vault, and the bodies are bare objects rather than the usual envelope.
 * https://developer.hashicorp.com/vault/api-docs/system/health
 * https://developer.hashicorp.com/vault/api-docs/system/seal-status
 * https://developer.hashicorp.com/vault/api-docs/system/leader
 * https://developer.hashicorp.com/vault/api-docs/system/init
 */

/** The Vault API level this server follows; clients use it for feature checks. */
export const VAULT_COMPAT_VERSION = '1.15.0+strongroom';
const CLUSTER_NAME = 'strongroom';

/**
 * Every status code `sys/health` can be asked to use, with Vault's defaults. Only the
 * active node's code applies here; the others are still checked, as Vault checks them.
 */
const HEALTH_FIELDS = defineFields({
  standbyok: { type: 'bool', default: false },
  perfstandbyok: { type: 'bool', default: false },
  activecode: { type: 'int', default: 200 },
  standbycode: { type: 'int', default: 429 },
  drsecondarycode: { type: 'int', default: 472 },
  performancestandbycode: { type: 'int', default: 473 },
  haunhealthycode: { type: 'int', default: 474 },
  sealedcode: { type: 'int', default: 503 },
  uninitcode: { type: 'int', default: 501 },
  removedcode: { type: 'int', default: 530 },
});

/** 1xx codes are interim answers, not a final one; Go's and Node's servers accept up to 999. */
const MIN_CODE = 200;
const MAX_CODE = 999;

export interface StatusRouteDeps {
  clock: Clock;
  clusterId: string;
  storageType: string;
}

export function statusRoutes(deps: StatusRouteDeps): SystemRoute[] {
  const { clock, clusterId, storageType } = deps;
  // This node is the active one from the moment it serves.
  const activeSince = clock.now().toISOString();
  const route = (pattern: string, handler: SystemRoute['handler']): SystemRoute => ({
    pattern,
    operations: ['read'],
    handler,
    mountType: 'system',
    unauthenticated: true,
  });
  const json = (status: number, data: unknown): SystemResult => ({
    kind: 'raw',
    status,
    contentType: 'application/json',
    body: JSON.stringify(data),
  });

  return [
    route('sys/health', async (ctx) => {
      const status = healthStatus(ctx.query);
      if (ctx.request.method === 'HEAD') return { kind: 'status', status };
      return json(status, {
        initialized: true,
        sealed: false,
        standby: false,
        performance_standby: false,
        replication_performance_mode: 'disabled',
        replication_dr_mode: 'disabled',
        server_time_utc: Math.floor(clock.now().getTime() / 1000),
        version: VAULT_COMPAT_VERSION,
        enterprise: false,
        cluster_name: CLUSTER_NAME,
        cluster_id: clusterId,
        echo_duration_ms: 0,
        clock_skew_ms: 0,
        replication_primary_canary_age_ms: 0,
      });
    }),
    route('sys/init', async () => json(200, { initialized: true })),
    route('sys/seal-status', async () =>
      json(200, {
        type: 'shamir',
        initialized: true,
        sealed: false,
        t: 1,
        n: 1,
        progress: 0,
        nonce: '',
        version: VAULT_COMPAT_VERSION,
        build_date: '',
        migration: false,
        cluster_name: CLUSTER_NAME,
        cluster_id: clusterId,
        recovery_seal: false,
        storage_type: storageType,
      }),
    ),
    // Vault without HA says ha_enabled false; this single node is always the one that serves.
    route('sys/leader', async () =>
      json(200, {
        ha_enabled: false,
        is_self: true,
        active_time: activeSince,
        leader_address: '',
        leader_cluster_address: '',
        performance_standby: false,
        performance_standby_last_remote_wal: 0,
      }),
    ),
  ];
}

/** The status `sys/health` answers with: the active node's code, once every parameter is valid. */
function healthStatus(query: Record<string, string>): number {
  const values = HEALTH_FIELDS.parse(query).values;
  for (const name of Object.keys(HEALTH_FIELDS.schema) as (keyof typeof values)[]) {
    const v = values[name];
    if (typeof v === 'number' && (v < MIN_CODE || v > MAX_CODE)) {
      throw invalid(`${name} must be an HTTP status code from ${MIN_CODE} to ${MAX_CODE}, got ${v}`, name);
    }
  }
  return values.activecode;
}
