import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseByteSize, parseDurationSeconds } from './shared/durations.js';
import { usableCores } from './shared/usable-cores.js';

/**
 * Every setting of the server. Read once by loadConfig, validated, frozen and passed
 * down; nothing else reads process.env. docs/configuration.md lists the same settings.
 */
export interface Config {
  readonly listenHost: string;
  readonly listenPort: number;
  readonly dataDir: string;
  /** `sqlite:<path>` or `postgres://…` */
  readonly databaseUrl: string;
  readonly databaseKind: 'sqlite' | 'postgres';
  readonly tlsCertFile: string | undefined;
  readonly tlsKeyFile: string | undefined;
  /** Largest request body accepted on ordinary API requests, in bytes. */
  readonly bodyLimit: number;
  /** Largest state file accepted through an upload URL, in bytes. */
  readonly maxUploadSize: number;
  /** Uploads are refused (507) while the data directory's file system has fewer bytes free than this. */
  readonly minFreeSpace: number;
  /** State uploads streaming at once on this server (429 beyond); 0 means no limit. */
  readonly maxConcurrentUploads: number;
  readonly logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** Base64 of a 32-byte key; when unset the key lives in `<dataDir>/master.key`. */
  readonly masterKey: string | undefined;
  /** Sealed values re-sealed per batch of a master key rotation (each batch records its progress). */
  readonly masterKeyRotationBatch: number;
  /** Base64 keys that still open sealed values but never seal (during a master key rotation). */
  readonly otherMasterKeys: readonly string[];
  /** Public base URL used in upload and download URLs; when unset, taken from each request's Host. */
  readonly publicUrl: string | undefined;
  readonly dev: boolean;
  readonly devRootToken: string | undefined;
  readonly shutdownTimeoutSeconds: number;
  readonly jobConcurrency: number;
  readonly jobPollIntervalMs: number;
  readonly jobLeaseSeconds: number;
  readonly runJobWorker: boolean;
  readonly pgPoolSize: number;
  /** Accept a create whose `serial`/`lineage` differ from those inside the state, as HCP Terraform does. */
  readonly stateAllowSerialMismatch: boolean;
  /** Accept OpenTofu's encrypted state envelopes, which cannot be checked beyond their MD5. */
  readonly stateAllowEncrypted: boolean;
  /** Lifetime of a state version's one-time upload URLs, in seconds. */
  readonly stateUploadUrlTtlSeconds: number;
  /** States sent inline at creation up to this size (bytes) are stored in the database with their version. */
  readonly stateInlineMaxSize: number;
  /** Days after which soft-deleted backing data is removed for good (unless the action named another number). */
  readonly stateSoftDeletePurgeDays: number;
  /** Retention: versions kept regardless of age, counted across all workspaces. */
  readonly stateRetentionKeepLatest: number;
  /** Retention: older versions beyond those are deleted after this many days; 0 keeps everything. */
  readonly stateRetentionMaxAgeDays: number;
  /** How often the state maintenance job (purge, retention, blob collection) runs, in seconds. */
  readonly stateMaintenanceIntervalSeconds: number;
  /** Seal new state content and output values (reading accepts both forms whatever this says). */
  readonly stateEncryption: boolean;
  /** Use the native addon (built by npm ci) for ECDSA on the certificate hot paths, when it is there. */
  readonly nativeCrypto: boolean;
  /**
   * `strongroom server` runs its threads other than the event loop under SCHED_BATCH (Linux, with the native addon).
   */
  readonly batchBackgroundThreads: boolean;
  /** Accept every waiting connection with each one the event loop accepts (native addon; decision 0057). */
  readonly eagerAccept: boolean;
  /** When set, GET /metrics needs `Authorization: Bearer <this>`. */
  readonly metricsToken: string | undefined;
  /** When set, a file audit device at `file/` writes to this path (enabled at start if missing). */
  readonly auditFile: string | undefined;
  /** Requests one process works on at once; beyond it a request gets 503 at once (0: no bound). */
  readonly maxInFlightRequests: number;
  /** Server processes sharing the listen address (node:cluster); 1 is one process and no cluster. */
  readonly workers: number;
}

/** One setting: its flag, environment variable, config-file key and parser. */
interface SettingDef {
  key: string;
  flag: string;
  env: string;
  description: string;
  default?: string;
  boolean?: boolean;
}

export const SETTINGS: readonly SettingDef[] = [
  {
    key: 'listen',
    flag: 'listen',
    env: 'STRONGROOM_LISTEN',
    description: 'Address to listen on, host:port.',
    default: '127.0.0.1:8200',
  },
  {
    key: 'workers',
    flag: 'workers',
    env: 'STRONGROOM_WORKERS',
    description:
      'Server processes on this machine, all serving the listen address: a primary process prepares the storage ' +
      '(migrations, the initial admin token), then starts this many workers, restarts one that dies and drains them ' +
      'all on SIGTERM. `auto` (the default) is the number of cores the process may use (its CPU affinity, lowered ' +
      "to a cgroup CPU quota such as a container's --cpus); more than that is refused. 1 serves from one process, " +
      'without a primary. max_inflight_requests, ' +
      'max_concurrent_uploads and pg_pool_size are for the whole server and shared out among the workers. A ' +
      'change made through one worker is in force on every worker before it is answered. See docs/operations.md.',
    default: 'auto',
  },
  {
    key: 'data_dir',
    flag: 'data-dir',
    env: 'STRONGROOM_DATA_DIR',
    description: 'Directory for the SQLite database, blobs and the master key.',
    default: './data',
  },
  {
    key: 'database_url',
    flag: 'database-url',
    env: 'STRONGROOM_DATABASE_URL',
    description:
      'postgres://… switches to PostgreSQL (blobs then live in the database too); sqlite:PATH picks a SQLite file.',
    default: 'sqlite:<data_dir>/strongroom.db',
  },
  {
    key: 'tls_cert_file',
    flag: 'tls-cert',
    env: 'STRONGROOM_TLS_CERT',
    description: 'PEM certificate chain; with tls_key_file the server speaks HTTPS.',
  },
  {
    key: 'tls_key_file',
    flag: 'tls-key',
    env: 'STRONGROOM_TLS_KEY',
    description: 'PEM private key for tls_cert_file.',
  },
  {
    key: 'body_limit',
    flag: 'body-limit',
    env: 'STRONGROOM_BODY_LIMIT',
    description: 'Largest request body on API calls (bytes, or with a unit: 32MB). Larger bodies get 413.',
    default: '32MB',
  },
  {
    key: 'max_upload_size',
    flag: 'max-upload-size',
    env: 'STRONGROOM_MAX_UPLOAD_SIZE',
    description: 'Largest state file accepted through an upload URL. Larger uploads get 413.',
    default: '2GB',
  },
  {
    key: 'min_free_space',
    flag: 'min-free-space',
    env: 'STRONGROOM_MIN_FREE_SPACE',
    description:
      "Free-space floor of the data directory's file system: while less is free, state uploads are refused with 507 " +
      '(also in the middle of a body that declared no Content-Length), the version stays pending and its upload URL ' +
      'usable. /readyz and /metrics show it. 0 turns the check off.',
    default: '1GB',
  },
  {
    key: 'max_concurrent_uploads',
    flag: 'max-concurrent-uploads',
    env: 'STRONGROOM_MAX_CONCURRENT_UPLOADS',
    description:
      'State uploads this server receives at once (shared out among its workers); one more gets 429 with ' +
      'Retry-After (Terraform retries it). 0 means no limit.',
    default: '32',
  },
  {
    key: 'log_level',
    flag: 'log-level',
    env: 'STRONGROOM_LOG_LEVEL',
    description: 'fatal, error, warn, info, debug, trace or silent.',
    default: 'info',
  },
  {
    key: 'public_url',
    flag: 'public-url',
    env: 'STRONGROOM_PUBLIC_URL',
    description:
      'Base URL clients reach this server at (used in upload and download URLs). When unset, each ' +
      "request's Host header is used.",
  },
  {
    key: 'shutdown_timeout',
    flag: 'shutdown-timeout',
    env: 'STRONGROOM_SHUTDOWN_TIMEOUT',
    description: 'How long a SIGTERM waits for in-flight requests and jobs.',
    default: '30s',
  },
  {
    key: 'job_concurrency',
    flag: 'job-concurrency',
    env: 'STRONGROOM_JOB_CONCURRENCY',
    description: 'Jobs run at once by this node.',
    default: '2',
  },
  {
    key: 'job_poll_interval',
    flag: 'job-poll-interval',
    env: 'STRONGROOM_JOB_POLL_INTERVAL',
    description: 'How often an idle worker looks for jobs (ms).',
    default: '250',
  },
  {
    key: 'job_lease',
    flag: 'job-lease',
    env: 'STRONGROOM_JOB_LEASE',
    description: 'How long a claimed job is held before another node may retry it.',
    default: '60s',
  },
  {
    key: 'job_worker',
    flag: 'job-worker',
    env: 'STRONGROOM_JOB_WORKER',
    description: 'Run the job worker in this process (true/false).',
    default: 'true',
  },
  {
    key: 'pg_pool_size',
    flag: 'pg-pool-size',
    env: 'STRONGROOM_PG_POOL_SIZE',
    description:
      'PostgreSQL connections per node, shared out among its workers (at least 2 each), plus one per worker that ' +
      'listens for changes made by other nodes.',
    default: '10',
  },
  {
    key: 'state_allow_serial_mismatch',
    flag: 'state-allow-serial-mismatch',
    env: 'STRONGROOM_STATE_ALLOW_SERIAL_MISMATCH',
    description:
      'Accept state versions whose serial/lineage attributes differ from those inside the state file (HCP Terraform ' +
      'accepts them; older go-tfe test suites need it).',
    default: 'false',
    boolean: true,
  },
  {
    key: 'state_allow_encrypted',
    flag: 'state-allow-encrypted',
    env: 'STRONGROOM_STATE_ALLOW_ENCRYPTED',
    description:
      'Accept OpenTofu client-side encrypted states (a JSON object with encrypted_data and encryption_version ' +
      'instead of a state). Only their MD5 is checked: the format, serial and lineage inside cannot be. ' +
      'When false they get 422.',
    default: 'true',
    boolean: true,
  },
  {
    key: 'state_upload_url_ttl',
    flag: 'state-upload-url-ttl',
    env: 'STRONGROOM_STATE_UPLOAD_URL_TTL',
    description: 'How long the one-time upload URLs of a pending state version stay valid.',
    default: '1h',
  },
  {
    key: 'state_inline_max_size',
    flag: 'state-inline-max-size',
    env: 'STRONGROOM_STATE_INLINE_MAX_SIZE',
    description:
      'State (and JSON state) sent inline when a state version is created is stored in the database, in the same ' +
      'commit as the version, up to this size; larger content goes to the blob store. 0 sends ' +
      'everything to the blob store.',
    default: '64KB',
  },
  {
    key: 'state_soft_delete_purge_days',
    flag: 'state-soft-delete-purge-days',
    env: 'STRONGROOM_STATE_SOFT_DELETE_PURGE_DAYS',
    description: 'Days after which soft-deleted state backing data is permanently deleted.',
    default: '30',
  },
  {
    key: 'state_retention_keep_latest',
    flag: 'state-retention-keep-latest',
    env: 'STRONGROOM_STATE_RETENTION_KEEP_LATEST',
    description: 'Retention: the most recent state versions (across all workspaces) that are never deleted by age.',
    default: '100',
  },
  {
    key: 'state_retention_max_age_days',
    flag: 'state-retention-max-age-days',
    env: 'STRONGROOM_STATE_RETENTION_MAX_AGE_DAYS',
    description:
      'Retention: other state versions are deleted after this many days (the newest and current version of each ' +
      'workspace are always kept); 0 disables retention.',
    default: '180',
  },
  {
    key: 'state_maintenance_interval',
    flag: 'state-maintenance-interval',
    env: 'STRONGROOM_STATE_MAINTENANCE_INTERVAL',
    description: 'How often the state maintenance job (purge of soft-deleted data, retention, blob collection) runs.',
    default: '1h',
  },
  {
    key: 'state_encryption',
    flag: 'state-encryption',
    env: 'STRONGROOM_STATE_ENCRYPTION',
    description:
      'Encrypt state files and output values at rest (AES-256-GCM under data keys sealed by the master key). Only ' +
      'for measuring its cost: false writes new content in plain text, which then stays readable to anyone with the ' +
      'files; existing content is read either way.',
    default: 'true',
    boolean: true,
  },
  {
    key: 'native_crypto',
    flag: 'native-crypto',
    env: 'STRONGROOM_NATIVE_CRYPTO',
    description:
      'Use the native addon that `npm ci` builds (native/) for ECDSA on the certificate hot paths (CSR checks, ' +
      'P-256/P-384/P-521 signatures), for the AES-256-GCM of stored state content, done in place, and for the ' +
      'MD5, SHA-256, sealing and writes of state uploads to the file blob store, done on the threadpool. Without ' +
      'the addon, or when false, node:crypto does the same work on the event loop, more slowly.',
    default: 'true',
    boolean: true,
  },
  {
    key: 'batch_background_threads',
    flag: 'batch-background-threads',
    env: 'STRONGROOM_BATCH_BACKGROUND_THREADS',
    description:
      'On Linux, with the native addon: run every thread of the server process but the event loop (the threadpool ' +
      'that checks and signs, the SQLite writer, the garbage collector) under the SCHED_BATCH policy, so that ' +
      'handing them work does not preempt the event loop. They keep their full share of the CPU. False leaves every ' +
      'thread under the normal policy.',
    default: 'true',
    boolean: true,
  },
  {
    key: 'eager_accept',
    flag: 'eager-accept',
    env: 'STRONGROOM_EAGER_ACCEPT',
    description:
      'With the native addon: each time the event loop accepts a connection, also accept the ones waiting behind ' +
      'it (up to 64), so that clients connecting to a busy server are read from its next pass on instead of one ' +
      'per pass (Node.js 20 accepts one connection per pass of its event loop, which under load let new clients ' +
      'wait seconds). False leaves accepting to the event loop alone.',
    default: 'true',
    boolean: true,
  },
  {
    key: 'metrics_token',
    flag: 'metrics-token',
    env: 'STRONGROOM_METRICS_TOKEN',
    description:
      'When set, GET /metrics answers only requests with Authorization: Bearer <this value> (401 otherwise); ' +
      'Prometheus sends it with authorization.credentials (or credentials_file) in its scrape config. When unset ' +
      '/metrics is open, like /healthz and /readyz.',
  },
  {
    key: 'audit_file',
    flag: 'audit-file',
    env: 'STRONGROOM_AUDIT_FILE',
    description:
      'At start, makes sure a file audit device is enabled at file/ writing to this absolute path (or stdout), as ' +
      '`vault audit enable file file_path=PATH` would; a device already at file/ is left as it is. Devices are ' +
      'otherwise managed through sys/audit.',
  },
  {
    key: 'max_inflight_requests',
    flag: 'max-inflight-requests',
    env: 'STRONGROOM_MAX_INFLIGHT_REQUESTS',
    description:
      'Requests this server works on at once (received and not yet answered; shared out among its workers). Beyond ' +
      'it a request is refused at once with 503 and Retry-After: 1, in the envelope of its API, instead of waiting ' +
      'behind the others without bound; /healthz, /readyz and /metrics are never refused. /metrics shows ' +
      'strongroom_http_requests_in_flight and strongroom_http_requests_refused_total. 0 removes the bound.',
    default: '2048',
  },
  {
    key: 'dev',
    flag: 'dev',
    env: 'STRONGROOM_DEV',
    description: 'Development mode: throwaway storage in a temporary directory and a fixed root token.',
    boolean: true,
    default: 'false',
  },
  {
    key: 'dev_root_token',
    flag: 'dev-root-token',
    env: 'STRONGROOM_DEV_ROOT_TOKEN',
    description: 'The admin/root token in --dev mode.',
    default: 'root',
  },
  {
    key: 'master_key',
    flag: '',
    env: 'STRONGROOM_MASTER_KEY',
    description:
      'Base64 of 32 bytes: the master key for secrets at rest. Environment only; otherwise kept in ' +
      '<data_dir>/master.key (mode 0600).',
  },
  {
    key: 'other_master_keys',
    flag: '',
    env: 'STRONGROOM_OTHER_MASTER_KEYS',
    description:
      'Comma-separated base64 master keys that still open sealed values but never seal new ones: the other key of a ' +
      'master key rotation (see docs/operations.md). Environment only.',
  },
  {
    key: 'master_key_rotation_batch',
    flag: 'master-key-rotation-batch',
    env: 'STRONGROOM_MASTER_KEY_ROTATION_BATCH',
    description:
      'Sealed values re-sealed per batch during a master key rotation; the progress is recorded after each batch, ' +
      'which is where a rotation interrupted by a crash goes on from.',
    default: '100',
  },
  {
    key: 'config',
    flag: 'config',
    env: 'STRONGROOM_CONFIG',
    description: 'Path of an optional JSON config file whose keys are the names in this table.',
  },
];

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

type Raw = Record<string, string | boolean | undefined>;

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/**
 * Builds the configuration from flags (highest), then STRONGROOM_* variables, then the
 * optional config file, then defaults. Reports every problem at once.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, flags: Raw = {}, overrides: Raw = {}): Config {
  const problems: string[] = [];
  const fromEnv: Raw = {};
  for (const s of SETTINGS) {
    const v = env[s.env];
    if (v !== undefined && v !== '') fromEnv[s.key] = v;
  }
  const configPath = (flags.config ?? fromEnv.config) as string | undefined;
  let fromFile: Raw = {};
  if (configPath) {
    try {
      const parsed = JSON.parse(readFileSync(configPath, 'utf8')) as unknown;
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not a JSON object');
      fromFile = {};
      for (const [k, v] of Object.entries(parsed as Record<string, unknown>)) {
        if (!SETTINGS.some((s) => s.key === k)) problems.push(`config file ${configPath}: unknown setting "${k}"`);
        else if (k === 'master_key' || k === 'other_master_keys')
          problems.push(`config file ${configPath}: ${k} may only come from the environment`);
        else fromFile[k] = typeof v === 'boolean' ? v : String(v);
      }
    } catch (err) {
      problems.push(`cannot read config file ${configPath}: ${(err as Error).message}`);
    }
  }
  const get = (key: string): string | boolean | undefined => {
    const def = SETTINGS.find((s) => s.key === key);
    const v = overrides[key] ?? flags[key] ?? fromEnv[key] ?? fromFile[key];
    if (v !== undefined) return v;
    return def?.default;
  };
  const str = (key: string): string => String(get(key) ?? '');
  const bool = (key: string): boolean => {
    const v = get(key);
    if (typeof v === 'boolean') return v;
    if (v === undefined) return false;
    const s = v.toLowerCase();
    if (['1', 'true', 'yes', 'on'].includes(s)) return true;
    if (['0', 'false', 'no', 'off', ''].includes(s)) return false;
    problems.push(`${key}: expected true or false, got "${v}"`);
    return false;
  };
  const int = (key: string, min: number, max: number): number => {
    const n = Number(str(key));
    if (!Number.isInteger(n) || n < min || n > max) {
      problems.push(`${key}: expected an integer from ${min} to ${max}, got "${str(key)}"`);
      return min;
    }
    return n;
  };
  const seconds = (key: string): number => {
    try {
      return parseDurationSeconds(str(key), key);
    } catch (err) {
      problems.push((err as Error).message);
      return 0;
    }
  };
  const bytes = (key: string, min = 1024): number => {
    try {
      const n = parseByteSize(str(key), key);
      if (n < min) problems.push(`${key}: must be at least ${min === 1024 ? '1KB' : `${min} bytes`}`);
      return n;
    } catch (err) {
      problems.push((err as Error).message);
      return 0;
    }
  };

  const dev = bool('dev');
  const listen = str('listen');
  const m = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(listen);
  let listenHost = '127.0.0.1';
  let listenPort = 8200;
  if (!m) problems.push(`listen: expected host:port, got "${listen}"`);
  else {
    listenHost = (m[1] as string).replace(/^\[|\]$/g, '');
    listenPort = Number(m[2]);
    if (listenPort > 65535) problems.push(`listen: port out of range in "${listen}"`);
  }
  const dataDir = resolve(str('data_dir'));
  let databaseUrl =
    get('database_url') === SETTINGS.find((s) => s.key === 'database_url')?.default
      ? `sqlite:${resolve(dataDir, 'strongroom.db')}`
      : str('database_url');
  let databaseKind: 'sqlite' | 'postgres' = 'sqlite';
  if (/^postgres(ql)?:\/\//.test(databaseUrl)) databaseKind = 'postgres';
  else if (databaseUrl.startsWith('sqlite:')) databaseUrl = `sqlite:${resolve(databaseUrl.slice('sqlite:'.length))}`;
  else problems.push(`database_url: expected postgres://… or sqlite:PATH, got "${databaseUrl}"`);

  const tlsCertFile = get('tls_cert_file') as string | undefined;
  const tlsKeyFile = get('tls_key_file') as string | undefined;
  if (Boolean(tlsCertFile) !== Boolean(tlsKeyFile))
    problems.push('tls_cert_file and tls_key_file must be given together');

  const logLevel = str('log_level') as Config['logLevel'];
  if (!LOG_LEVELS.includes(logLevel))
    problems.push(`log_level: expected one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);

  const masterKey = get('master_key') as string | undefined;
  if (masterKey !== undefined && Buffer.from(masterKey, 'base64').length !== 32) {
    problems.push('STRONGROOM_MASTER_KEY: expected base64 of exactly 32 bytes');
  }
  const otherMasterKeys = ((get('other_master_keys') as string | undefined) ?? '')
    .split(',')
    .map((k) => k.trim())
    .filter((k) => k !== '');
  if (otherMasterKeys.some((k) => Buffer.from(k, 'base64').length !== 32)) {
    problems.push('STRONGROOM_OTHER_MASTER_KEYS: expected base64 keys of exactly 32 bytes, separated by commas');
  }
  if (otherMasterKeys.length > 0 && masterKey === undefined) {
    problems.push('STRONGROOM_OTHER_MASTER_KEYS needs STRONGROOM_MASTER_KEY (a key file holds its own other keys)');
  }

  const publicUrlRaw = get('public_url') as string | undefined;
  const publicUrl = publicUrlRaw ? publicUrlRaw.replace(/\/+$/, '') : undefined;
  if (publicUrl !== undefined && !/^https?:\/\/[^/]+$/.test(publicUrl))
    problems.push(`public_url: expected an http(s) URL, got "${publicUrl}"`);

  const config: Config = {
    listenHost,
    listenPort,
    dataDir,
    databaseUrl,
    databaseKind,
    tlsCertFile,
    tlsKeyFile,
    bodyLimit: bytes('body_limit'),
    maxUploadSize: bytes('max_upload_size'),
    minFreeSpace: bytes('min_free_space', 0),
    maxConcurrentUploads: int('max_concurrent_uploads', 0, 100_000),
    logLevel,
    masterKey,
    otherMasterKeys: Object.freeze(otherMasterKeys),
    masterKeyRotationBatch: int('master_key_rotation_batch', 1, 100_000),
    publicUrl,
    dev,
    devRootToken: dev ? str('dev_root_token') : undefined,
    shutdownTimeoutSeconds: seconds('shutdown_timeout'),
    jobConcurrency: int('job_concurrency', 1, 64),
    jobPollIntervalMs: int('job_poll_interval', 10, 60_000),
    jobLeaseSeconds: seconds('job_lease'),
    runJobWorker: bool('job_worker'),
    pgPoolSize: int('pg_pool_size', 1, 200),
    stateAllowSerialMismatch: bool('state_allow_serial_mismatch'),
    stateAllowEncrypted: bool('state_allow_encrypted'),
    stateEncryption: bool('state_encryption'),
    nativeCrypto: bool('native_crypto'),
    batchBackgroundThreads: bool('batch_background_threads'),
    eagerAccept: bool('eager_accept'),
    stateUploadUrlTtlSeconds: seconds('state_upload_url_ttl'),
    stateInlineMaxSize: bytes('state_inline_max_size', 0),
    stateSoftDeletePurgeDays: int('state_soft_delete_purge_days', 0, 36_500),
    stateRetentionKeepLatest: int('state_retention_keep_latest', 0, 100_000_000),
    stateRetentionMaxAgeDays: int('state_retention_max_age_days', 0, 36_500),
    stateMaintenanceIntervalSeconds: seconds('state_maintenance_interval'),
    metricsToken: (get('metrics_token') as string | undefined) || undefined,
    auditFile: (get('audit_file') as string | undefined) || undefined,
    maxInFlightRequests: int('max_inflight_requests', 0, 10_000_000),
    workers: workerCount(str('workers'), problems),
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(config);
}

/**
 * The workers setting: `auto` is every core this process may use (usableCores: the CPU
 * affinity mask, lowered to a cgroup CPU quota); a count above that is refused, since
 * workers beyond the cores only add processes that compete for the same cores.
 */
function workerCount(raw: string, problems: string[]): number {
  const cores = usableCores();
  if (raw.trim().toLowerCase() === 'auto') return cores;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > cores) {
    problems.push(
      `workers: expected auto or an integer from 1 to ${cores} (the cores this process may use), got "${raw}"`,
    );
    return 1;
  }
  return n;
}

/** A config for tests and embedded use: defaults plus the given overrides, no environment. */
export function testConfig(overrides: Partial<Config> & { dataDir: string }): Config {
  // One process: a test or embedding server is never a cluster worker.
  const base = loadConfig({}, {}, { data_dir: overrides.dataDir, log_level: 'silent', workers: '1' });
  return Object.freeze({ ...base, ...overrides });
}
