/**
 * tidy, tidy-status, tidy-cancel and config/auto-tidy.
 * https://developer.hashicorp.com/vault/api-docs/secret/pki#tidy
 * https://developer.hashicorp.com/vault/api-docs/secret/pki#tidy-status
 * https://developer.hashicorp.com/vault/api-docs/secret/pki#cancel-tidy
 * https://developer.hashicorp.com/vault/api-docs/secret/pki#configure-automatic-tidy
 */
import { jsonResult, parseInput } from '../config/route-kit.js';
import type { PkiRoute } from '../pki-route.js';
import { rfc3339Nano } from '../revocation/revocation.js';
import { defineFields } from '../vault-fields.js';
import type { FieldValues } from '../vault-fields.js';
import { formatGoDuration, TIDY_COUNTERS, TIDY_FLAGS } from './tidy.js';
import type { AutoTidyConfig, TidyFlag, TidyParams } from './tidy.js';
import type { TidyService, TidyStatusView } from './tidy-service.js';

const FLAG_FIELDS = {
  tidy_cert_store: { type: 'bool' },
  tidy_revoked_certs: { type: 'bool' },
  tidy_revoked_cert_issuer_associations: { type: 'bool' },
  tidy_expired_issuers: { type: 'bool' },
  tidy_move_legacy_ca_bundle: { type: 'bool' },
  tidy_revocation_queue: { type: 'bool' },
  tidy_cross_cluster_revoked_certs: { type: 'bool' },
  tidy_acme: { type: 'bool' },
  tidy_cert_metadata: { type: 'bool' },
  tidy_cmpv2_nonce_store: { type: 'bool' },
} as const;

/** Durations are read by the domain (they may be negative, which must be a clear 400). */
const BUFFER_FIELDS = {
  safety_buffer: { type: 'any' },
  issuer_safety_buffer: { type: 'any' },
  acme_account_safety_buffer: { type: 'any' },
  revocation_queue_safety_buffer: { type: 'any' },
  pause_duration: { type: 'string' },
} as const;

const tidyFields = defineFields({ ...FLAG_FIELDS, tidy_revocation_list: { type: 'bool' }, ...BUFFER_FIELDS });

const autoTidyFields = defineFields({
  ...FLAG_FIELDS,
  ...BUFFER_FIELDS,
  enabled: { type: 'bool' },
  interval_duration: { type: 'any' },
  min_startup_backoff_duration: { type: 'any' },
  max_startup_backoff_duration: { type: 'any' },
  maintain_stored_certificate_counts: { type: 'bool' },
  publish_stored_certificate_count_metrics: { type: 'bool' },
});

const STARTED =
  "Tidy operation successfully started. Any information from the operation will be printed to Vault's server logs.";
const RUNNING = 'Tidy operation already in progress.';
const NO_TARGETS =
  `Manual tidy requested but no tidy operations were set. Enable at least one tidy operation to be ` +
  `run (${TIDY_FLAGS.join(' / ')}).`;
const NOT_RUNNING = 'Tidy operation cannot be cancelled as none is currently running.';

type DurationValue = string | number | undefined;
const duration = (v: unknown): DurationValue =>
  typeof v === 'number' || typeof v === 'string' ? v : v === undefined ? undefined : String(v);

function flagsOf(v: FieldValues<typeof FLAG_FIELDS>): Partial<Record<TidyFlag, boolean>> {
  const out: Partial<Record<TidyFlag, boolean>> = {};
  for (const f of TIDY_FLAGS) if (v[f] !== undefined) out[f] = v[f];
  return out;
}

function buffersOf(v: FieldValues<typeof BUFFER_FIELDS>) {
  return {
    safetyBuffer: duration(v.safety_buffer),
    issuerSafetyBuffer: duration(v.issuer_safety_buffer),
    acmeAccountSafetyBuffer: duration(v.acme_account_safety_buffer),
    revocationQueueSafetyBuffer: duration(v.revocation_queue_safety_buffer),
    pauseDuration: v.pause_duration,
  };
}

/** The tidy parameters as Vault shows them: every flag, buffers in seconds, pause as a Go duration. */
function paramsData(p: TidyParams) {
  return {
    ...Object.fromEntries(TIDY_FLAGS.map((f) => [f, p.flags[f]])),
    safety_buffer: p.safetyBuffer,
    issuer_safety_buffer: p.issuerSafetyBuffer,
    acme_account_safety_buffer: p.acmeAccountSafetyBuffer,
    revocation_queue_safety_buffer: p.revocationQueueSafetyBuffer,
    pause_duration: formatGoDuration(p.pauseDuration),
  };
}

function autoTidyData(c: AutoTidyConfig) {
  return {
    enabled: c.enabled,
    interval_duration: c.intervalDuration,
    min_startup_backoff_duration: c.minStartupBackoff,
    max_startup_backoff_duration: c.maxStartupBackoff,
    ...paramsData(c),
    maintain_stored_certificate_counts: c.maintainStoredCertificateCounts,
    publish_stored_certificate_count_metrics: c.publishStoredCertificateCountMetrics,
  };
}

/** Go's RFC 3339 with nanoseconds, as Vault's status times print. */
const rfc3339 = (d: Date | null): string | null => (d === null ? null : rfc3339Nano(d));

/** tidy-status: every field null and state Inactive before the first run (reference 10.3). */
export function statusData(view: TidyStatusView, backendUuid: string) {
  const { status: s, storedCounts } = view;
  const nulls = {
    ...Object.fromEntries(TIDY_FLAGS.map((f) => [f, null])),
    safety_buffer: null,
    issuer_safety_buffer: null,
    acme_account_safety_buffer: null,
    revocation_queue_safety_buffer: null,
    pause_duration: null,
    ...Object.fromEntries(TIDY_COUNTERS.map((c) => [c, null])),
  };
  const base = {
    ...nulls,
    state: s.state,
    error: null as string | null,
    time_started: null as string | null,
    time_finished: null as string | null,
    message: null as string | null,
    last_auto_tidy_finished: rfc3339(s.lastAutoTidyFinished),
    current_cert_store_count: storedCounts?.total ?? null,
    current_revoked_cert_count: storedCounts?.revoked ?? null,
    internal_backend_uuid: backendUuid,
  };
  if (s.state === 'Inactive' || s.params === null) return base;
  const finished = s.state === 'Finished' || s.state === 'Error' || s.state === 'Cancelled';
  return {
    ...base,
    ...paramsData(s.params),
    ...s.counts,
    time_started: rfc3339(s.startedAt),
    time_finished: finished ? rfc3339(s.finishedAt) : null,
    message: s.state === 'Finished' ? null : s.message,
    error: s.state === 'Error' ? s.error : null,
  };
}

export function tidyRoutes(tidy: TidyService): PkiRoute[] {
  return [
    {
      pattern: 'tidy',
      operations: ['update', 'create'],
      handler: async (ctx) => {
        const { values: v, warnings } = parseInput(ctx, tidyFields);
        const r = await tidy.start(ctx.mount.id, {
          flags: flagsOf(v),
          tidyRevocationList: v.tidy_revocation_list,
          ...buffersOf(v),
        });
        const anyFlag = TIDY_FLAGS.some((f) => r.params.flags[f]);
        const message = !r.started ? RUNNING : anyFlag ? STARTED : NO_TARGETS;
        return { kind: 'json', data: null, warnings: [...warnings, message], status: 202 };
      },
    },
    {
      pattern: 'tidy-status',
      operations: ['read'],
      handler: async (ctx) => jsonResult(statusData(await tidy.status(ctx.mount.id), ctx.mount.id)),
    },
    {
      pattern: 'tidy-cancel',
      operations: ['update', 'create'],
      handler: async (ctx) => {
        const cancelled = await tidy.cancel(ctx.mount.id);
        return jsonResult(statusData(await tidy.status(ctx.mount.id), ctx.mount.id), cancelled ? [] : [NOT_RUNNING]);
      },
    },
    {
      pattern: 'config/auto-tidy',
      operations: ['read'],
      handler: async (ctx) => jsonResult(autoTidyData(await tidy.autoTidyConfig(ctx.mount.id))),
    },
    {
      pattern: 'config/auto-tidy',
      operations: ['update', 'create'],
      handler: async (ctx) => {
        const { values: v, warnings } = parseInput(ctx, autoTidyFields);
        const config = await tidy.updateAutoTidyConfig(ctx.mount.id, {
          flags: flagsOf(v),
          ...buffersOf(v),
          enabled: v.enabled,
          intervalDuration: duration(v.interval_duration),
          minStartupBackoff: duration(v.min_startup_backoff_duration),
          maxStartupBackoff: duration(v.max_startup_backoff_duration),
          maintainStoredCertificateCounts: v.maintain_stored_certificate_counts,
          publishStoredCertificateCountMetrics: v.publish_stored_certificate_count_metrics,
        });
        return jsonResult(autoTidyData(config), warnings);
      },
    },
  ];
}
