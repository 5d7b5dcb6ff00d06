/**
 * Tidy: removing expired certificates, expired revocation entries, expired issuers and
 * expired certificate metadata from a mount, once by request (`tidy`) or periodically
 * (`config/auto-tidy`), with its progress in `tidy-status`.
 * https://developer.hashicorp.com/vault/api-docs/secret/pki#tidy
 * https://developer.hashicorp.com/vault/api-docs/secret/pki#configure-automatic-tidy
 * https://developer.hashicorp.com/vault/api-docs/secret/pki#tidy-status
 */
import { parseDurationSeconds } from '../../shared/durations.js';
import { invalid } from '../../shared/errors.js';

/** Every tidy target Vault knows, under its API name. Targets this server has no data for do nothing. */
export const TIDY_FLAGS = [
  'tidy_cert_store',
  'tidy_revoked_certs',
  'tidy_revoked_cert_issuer_associations',
  'tidy_expired_issuers',
  'tidy_move_legacy_ca_bundle',
  'tidy_revocation_queue',
  'tidy_cross_cluster_revoked_certs',
  'tidy_acme',
  'tidy_cert_metadata',
  'tidy_cmpv2_nonce_store',
] as const;
export type TidyFlag = (typeof TIDY_FLAGS)[number];

/** The counters of a run, under their tidy-status names. */
export const TIDY_COUNTERS = [
  'cert_store_deleted_count',
  'revoked_cert_deleted_count',
  'missing_issuer_cert_count',
  'revocation_queue_deleted_count',
  'cross_revoked_cert_deleted_count',
  'cert_metadata_deleted_count',
  'cmpv2_nonce_deleted_count',
  'total_acme_account_count',
  'acme_account_deleted_count',
  'acme_account_revoked_count',
  'acme_orders_deleted_count',
] as const;
export type TidyCounter = (typeof TIDY_COUNTERS)[number];
export type TidyCounts = Record<TidyCounter, number>;

export type TidyState = 'Inactive' | 'Running' | 'Finished' | 'Error' | 'Cancelling' | 'Cancelled';

/** What one tidy run does. Durations are whole seconds. */
export interface TidyParams {
  flags: Record<TidyFlag, boolean>;
  safetyBuffer: number;
  issuerSafetyBuffer: number;
  acmeAccountSafetyBuffer: number;
  revocationQueueSafetyBuffer: number;
  /** Pause between certificates, to spread the load of a large tidy. */
  pauseDuration: number;
}

/** config/auto-tidy: the parameters of automatic runs and when they happen. */
export interface AutoTidyConfig extends TidyParams {
  enabled: boolean;
  /** Seconds from the end of one run to the start of the next. */
  intervalDuration: number;
  minStartupBackoff: number;
  maxStartupBackoff: number;
  maintainStoredCertificateCounts: boolean;
  publishStoredCertificateCountMetrics: boolean;
}

/** The status of the current or latest run of a mount, as every node sees it. */
export interface TidyStatus {
  state: TidyState;
  runId: string | null;
  jobId: string | null;
  params: TidyParams | null;
  startedAt: Date | null;
  finishedAt: Date | null;
  message: string | null;
  error: string | null;
  counts: TidyCounts;
  lastAutoTidyFinished: Date | null;
}

export const noFlags = (): Record<TidyFlag, boolean> =>
  Object.fromEntries(TIDY_FLAGS.map((f) => [f, false])) as Record<TidyFlag, boolean>;
export const zeroCounts = (): TidyCounts => Object.fromEntries(TIDY_COUNTERS.map((c) => [c, 0])) as TidyCounts;

/** Vault's defaults: 72h, 365 days, 30 days, 48h, no pause. */
export const DEFAULT_TIDY_PARAMS: Readonly<Omit<TidyParams, 'flags'>> = {
  safetyBuffer: 72 * 3600,
  issuerSafetyBuffer: 365 * 86400,
  acmeAccountSafetyBuffer: 30 * 86400,
  revocationQueueSafetyBuffer: 48 * 3600,
  pauseDuration: 0,
};

export function defaultAutoTidyConfig(): AutoTidyConfig {
  return {
    ...DEFAULT_TIDY_PARAMS,
    flags: noFlags(),
    enabled: false,
    intervalDuration: 12 * 3600,
    minStartupBackoff: 300,
    maxStartupBackoff: 900,
    maintainStoredCertificateCounts: false,
    publishStoredCertificateCountMetrics: false,
  };
}

export const isActive = (state: TidyState): boolean => state === 'Running' || state === 'Cancelling';
export const anyTarget = (flags: Record<TidyFlag, boolean>): boolean => TIDY_FLAGS.some((f) => flags[f]);

/** Raw duration input: integer seconds or a duration string, possibly negative (so the error can say so). */
export type DurationInput = string | number;

/**
 * Reads a duration that may be negative: Vault converts first and checks the sign after,
 * so "-5s" is a clear "must be greater than zero" rather than a conversion error.
 */
export function signedDurationSeconds(field: string, raw: DurationInput): number {
  const fail = () =>
    invalid(
      `Field validation failed: error converting input ${JSON.stringify(raw)} for field "${field}": ` +
        `not a valid duration`,
      field,
    );
  if (typeof raw === 'number') {
    if (!Number.isFinite(raw)) throw fail();
    return Math.trunc(raw);
  }
  const s = String(raw).trim();
  const negative = s.startsWith('-');
  try {
    const v = parseDurationSeconds(negative ? s.slice(1) : s, field);
    return negative ? -v : v;
  } catch {
    throw fail();
  }
}

/** Input of POST tidy after type coercion; omitted values take the defaults. */
export interface TidyRequest {
  flags: Partial<Record<TidyFlag, boolean>>;
  /** Deprecated synonym of tidy_revoked_certs. */
  tidyRevocationList?: boolean;
  safetyBuffer?: DurationInput;
  issuerSafetyBuffer?: DurationInput;
  acmeAccountSafetyBuffer?: DurationInput;
  revocationQueueSafetyBuffer?: DurationInput;
  pauseDuration?: string;
}

function positiveBuffer(
  field: string,
  raw: DurationInput | undefined,
  fallback: number,
  message: (v: DurationInput) => string,
): number {
  if (raw === undefined) return fallback;
  const v = signedDurationSeconds(field, raw);
  if (v < 1) throw invalid(message(raw), field);
  return v;
}

function pauseSeconds(raw: string | undefined, parseError: (e: string) => string): number | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  let v: number;
  try {
    v = signedDurationSeconds('pause_duration', raw);
  } catch {
    throw invalid(parseError(`time: invalid duration ${JSON.stringify(raw)}`), 'pause_duration');
  }
  if (v < 0) throw invalid('received invalid, negative pause_duration', 'pause_duration');
  return v;
}

/** Validates a tidy request and fills in the defaults (POST tidy). */
export function tidyParamsFromRequest(req: TidyRequest): TidyParams {
  const flags = noFlags();
  for (const f of TIDY_FLAGS) flags[f] = req.flags[f] === true;
  if (req.tidyRevocationList === true) flags.tidy_revoked_certs = true;
  const gtZero = (name: string) => () => `${name} must be greater than zero`;
  return {
    flags,
    safetyBuffer: positiveBuffer(
      'safety_buffer',
      req.safetyBuffer,
      DEFAULT_TIDY_PARAMS.safetyBuffer,
      gtZero('safety_buffer'),
    ),
    issuerSafetyBuffer: positiveBuffer(
      'issuer_safety_buffer',
      req.issuerSafetyBuffer,
      DEFAULT_TIDY_PARAMS.issuerSafetyBuffer,
      gtZero('issuer_safety_buffer'),
    ),
    revocationQueueSafetyBuffer: positiveBuffer(
      'revocation_queue_safety_buffer',
      req.revocationQueueSafetyBuffer,
      DEFAULT_TIDY_PARAMS.revocationQueueSafetyBuffer,
      gtZero('revocation_queue_safety_buffer'),
    ),
    acmeAccountSafetyBuffer: positiveBuffer(
      'acme_account_safety_buffer',
      req.acmeAccountSafetyBuffer,
      DEFAULT_TIDY_PARAMS.acmeAccountSafetyBuffer,
      gtZero('acme_account_safety_buffer'),
    ),
    pauseDuration: pauseSeconds(req.pauseDuration, (e) => `Error parsing pause_duration: ${e}`) ?? 0,
  };
}

/** Input of POST config/auto-tidy: only what the caller sent changes. */
export interface AutoTidyPatch extends Omit<TidyRequest, 'tidyRevocationList'> {
  enabled?: boolean;
  intervalDuration?: DurationInput;
  minStartupBackoff?: DurationInput;
  maxStartupBackoff?: DurationInput;
  maintainStoredCertificateCounts?: boolean;
  publishStoredCertificateCountMetrics?: boolean;
}

/**
 * Applies a config/auto-tidy write to the stored configuration, with Vault's checks and
 * messages. `becameEnabled` tells whether this write turned auto-tidy on (its interval then
 * counts from now, not from a run long ago).
 */
export function applyAutoTidyPatch(
  current: AutoTidyConfig,
  patch: AutoTidyPatch,
): { config: AutoTidyConfig; becameEnabled: boolean } {
  const next: AutoTidyConfig = { ...current, flags: { ...current.flags } };
  if (patch.enabled !== undefined) next.enabled = patch.enabled;
  const atLeastOne = (name: string) => (v: DurationInput) => `given ${name} must be at least one second; got: ${v}`;
  const startup = (name: string) => (v: DurationInput) => `${name} must be at least 1 second: parsed: ${v}`;
  next.minStartupBackoff = positiveBuffer(
    'min_startup_backoff_duration',
    patch.minStartupBackoff,
    next.minStartupBackoff,
    startup('min_startup_backoff_duration'),
  );
  next.maxStartupBackoff = positiveBuffer(
    'max_startup_backoff_duration',
    patch.maxStartupBackoff,
    next.maxStartupBackoff,
    startup('max_startup_backoff_duration'),
  );
  if (next.minStartupBackoff > next.maxStartupBackoff) {
    throw invalid(
      `max_startup_backoff_duration ${formatGoDuration(next.maxStartupBackoff)} must be greater or equal to ` +
        `min_startup_backoff_duration ${formatGoDuration(next.minStartupBackoff)}`,
      'max_startup_backoff_duration',
    );
  }
  if (patch.intervalDuration !== undefined) {
    const v = signedDurationSeconds('interval_duration', patch.intervalDuration);
    if (v < 0)
      throw invalid(
        `given interval_duration must be greater than or equal to zero seconds; got: ${patch.intervalDuration}`,
        'interval_duration',
      );
    next.intervalDuration = v;
  }
  for (const f of TIDY_FLAGS) if (patch.flags[f] !== undefined) next.flags[f] = patch.flags[f] === true;
  next.safetyBuffer = positiveBuffer(
    'safety_buffer',
    patch.safetyBuffer,
    next.safetyBuffer,
    atLeastOne('safety_buffer'),
  );
  next.issuerSafetyBuffer = positiveBuffer(
    'issuer_safety_buffer',
    patch.issuerSafetyBuffer,
    next.issuerSafetyBuffer,
    atLeastOne('safety_buffer'),
  );
  next.revocationQueueSafetyBuffer = positiveBuffer(
    'revocation_queue_safety_buffer',
    patch.revocationQueueSafetyBuffer,
    next.revocationQueueSafetyBuffer,
    atLeastOne('revocation_queue_safety_buffer'),
  );
  next.acmeAccountSafetyBuffer = positiveBuffer(
    'acme_account_safety_buffer',
    patch.acmeAccountSafetyBuffer,
    next.acmeAccountSafetyBuffer,
    atLeastOne('acme_account_safety_buffer'),
  );
  next.pauseDuration =
    pauseSeconds(patch.pauseDuration, (e) => `unable to parse given pause_duration: ${e}`) ?? next.pauseDuration;
  if (next.enabled && !anyTarget(next.flags)) {
    throw invalid(
      `Auto-tidy enabled but no tidy operations were requested. Enable at least one tidy operation to be run ` +
        `(${TIDY_FLAGS.join(' / ')}).`,
    );
  }
  if (patch.maintainStoredCertificateCounts !== undefined)
    next.maintainStoredCertificateCounts = patch.maintainStoredCertificateCounts;
  if (patch.publishStoredCertificateCountMetrics !== undefined)
    next.publishStoredCertificateCountMetrics = patch.publishStoredCertificateCountMetrics;
  if (next.publishStoredCertificateCountMetrics && !next.maintainStoredCertificateCounts) {
    throw invalid(
      'Can not publish a running storage metrics count to metrics without first maintaining that count.  Enable ' +
        '`maintain_stored_certificate_counts` to enable `publish_stored_certificate_count_metrics`.',
      'publish_stored_certificate_count_metrics',
    );
  }
  return { config: next, becameEnabled: next.enabled && !current.enabled };
}

/** Whether auto-tidy should start a run now: enabled, idle, and the interval since the last run has passed. */
export function autoTidyDue(
  config: Pick<AutoTidyConfig, 'enabled' | 'intervalDuration'>,
  state: TidyState,
  lastFinished: Date | null,
  now: Date,
): boolean {
  if (!config.enabled || isActive(state)) return false;
  if (lastFinished === null) return true;
  return now.getTime() - lastFinished.getTime() >= config.intervalDuration * 1000;
}

/**
 * The instant before which something must have expired to be tidied: Vault removes an
 * entry when more than the safety buffer has passed since its NotAfter, so an entry
 * expiring exactly at the cut-off stays.
 */
export const tidyCutoff = (now: Date, bufferSeconds: number): Date => new Date(now.getTime() - bufferSeconds * 1000);

/** Go's time.Duration text for whole seconds, as Vault shows pause_duration: "0s", "1m30s", "2h0m0s". */
export function formatGoDuration(seconds: number): string {
  if (seconds === 0) return '0s';
  const sign = seconds < 0 ? '-' : '';
  let s = Math.abs(seconds);
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  if (h > 0) return `${sign}${h}h${m}m${s}s`;
  if (m > 0) return `${sign}${m}m${s}s`;
  return `${sign}${s}s`;
}

/** The tidy-status message while a step runs, as Vault words it. */
export function progressMessage(
  step: 'cert_store' | 'revoked' | 'metadata' | 'issuers' | 'associations',
  done: number,
  total: number,
): string {
  switch (step) {
    case 'cert_store':
      return `Tidying certificate store: checking entry ${done} of ${total}`;
    case 'revoked':
      return `Tidying revoked certificates: checking certificate ${done} of ${total}`;
    case 'associations':
      return `Tidying revoked certificate issuer associations: checking certificate ${done} of ${total}`;
    case 'metadata':
      return `Tidying certificate metadata: checking entry ${done} of ${total}`;
    case 'issuers':
      return 'Tidying expired issuers';
  }
}

/** Rebuilds a mount's CRLs after tidy removed revoked certificates or issuers. */
export type CrlRebuild = (mountId: string) => Promise<void>;
