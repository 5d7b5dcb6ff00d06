import * as nodeCrypto from 'node:crypto';

/**
 * Vault's JSON audit entries, built from what the /v1 pipeline knows of a request and
 * turned into one line per device: strings HMAC-SHA256'd under the device's salt unless
 * `log_raw`, list answers elided on request. Numbers and booleans stay as they are; keys
 * are never hashed.
 * https://developer.hashicorp.com/vault/docs/audit#format
 */
export interface AuditAuth {
  clientToken: string;
  accessor: string;
  displayName: string;
  policies: readonly string[];
  tokenPolicies: readonly string[];
  metadata: Record<string, string> | null;
  tokenType: string;
  tokenTtl: number;
  tokenIssueTime?: string;
}

export interface AuditRequestInfo {
  id: string;
  operation: string;
  mountPoint: string;
  mountType: string;
  mountAccessor: string;
  path: string;
  data: unknown;
  remoteAddress: string;
  remotePort: number;
  clientToken: string;
  clientTokenAccessor: string;
}

export interface AuditResponseInfo {
  /** The HTTP status answered. */
  status: number;
  data: unknown;
  warnings: readonly string[] | null;
  /** An `auth` block handed out (token create): its token and accessor are hashed like the caller's. */
  auth: Record<string, unknown> | null;
}

export interface VaultAuditRecord {
  type: 'request' | 'response';
  time: Date;
  auth: AuditAuth | null;
  request: AuditRequestInfo;
  response?: AuditResponseInfo;
  error: string;
  /** A list operation (elide_list_responses applies). */
  isList: boolean;
  /**
   * Given for the entries of one request whose `auth` and `request` stay the same: their
   * text is made once per device and reused by the next entry (the response repeats both).
   */
  memo?: EntryMemo;
}

/** The `auth` and `request` text of a request's entries, per device format. */
export type EntryMemo = Map<EntryFormat, { auth: string; request: string }>;

/** An event of the state service (create, download, lock...), written to every device as is. */
export interface StateAuditRecord {
  type: 'state';
  time: Date;
  event: Record<string, unknown>;
}

export type AuditRecord = VaultAuditRecord | StateAuditRecord;

export interface EntryFormat {
  /** HMAC of a value under the device's salt (`auditHasher`). */
  hash: (value: string) => string;
  logRaw: boolean;
  hmacAccessor: boolean;
  elideListResponses: boolean;
  prefix: string;
}

/** Node's one-shot digest (Node 20.12+), which costs a fraction of a Hmac object per call. */
const oneShot = (nodeCrypto as { hash?: (alg: string, data: string | Buffer, enc: string) => string | Buffer }).hash;

/**
 * Vault's identified HMAC under `salt`: "hmac-sha256:" and the hex digest of HMAC-SHA256
 * keyed by the salt's bytes.
 * https://developer.hashicorp.com/vault/api-docs/system/audit-hash
 */
export function auditHmac(salt: string, value: string): string {
  return `hmac-sha256:${nodeCrypto.createHmac('sha256', salt).update(value).digest('hex')}`;
}

/** Strings up to this length are remembered with their HMAC (tokens, accessors, CA chains recur). */
const MEMO_MAX_LENGTH = 8192;
const MEMO_ENTRIES = 2048;
/** How many values seen once are tracked (by a fingerprint) to tell repeated values from unique ones. */
const SEEN_ENTRIES = 8192;

/**
 * A cheap fingerprint of a value: equal for equal strings, rarely for different ones (a
 * collision only makes a value remembered that did not need to be).
 */
function fingerprint(v: string): number {
  const n = v.length;
  let h = n;
  for (let i = 1; i <= 8; i++) h = (Math.imul(h, 31) + v.charCodeAt(Math.floor((n * i) / 9))) | 0;
  return (Math.imul(h, 31) + v.charCodeAt(n - 1)) | 0;
}

/**
 * The HMAC of a device, fast: RFC 2104 written out over two one-shot digests (the salt is
 * ASCII and shorter than a block, so its padded forms are ASCII strings too), and values seen
 * again remembered, since entries repeat the token and most answers repeat the CA chain.
 * Values seen once (a CSR, a certificate) are not kept: holding thousands of them would only
 * make the garbage collector copy them.
 */
export function auditHasher(salt: string): (value: string) => string {
  const ascii = /^[\x20-\x7e]{0,64}$/.test(salt);
  if (!oneShot || !ascii) return (v) => (v === '' ? v : auditHmac(salt, v));
  const key = Buffer.alloc(64);
  key.write(salt, 'latin1');
  const ipad = Buffer.from(key.map((b) => b ^ 0x36)).toString('latin1');
  const outer = Buffer.alloc(96);
  key.forEach((b, i) => (outer[i] = b ^ 0x5c));
  const digest = oneShot;
  let memo = new Map<string, string>();
  let seen = new Set<number>();
  return (v) => {
    if (v === '') return v;
    const hit = memo.get(v);
    if (hit !== undefined) return hit;
    (digest('sha256', ipad + v, 'buffer') as Buffer).copy(outer, 64);
    const h = `hmac-sha256:${digest('sha256', outer, 'hex') as string}`;
    if (v.length <= MEMO_MAX_LENGTH) {
      const fp = fingerprint(v);
      if (seen.has(fp)) {
        if (memo.size >= MEMO_ENTRIES) memo = new Map();
        memo.set(v, h);
      } else {
        if (seen.size >= SEEN_ENTRIES) seen = new Set();
        seen.add(fp);
      }
    }
    return h;
  };
}

/** A copy of `value` with every string (at any depth) replaced by `hash(string)`. */
export function hashStrings(value: unknown, hash: (s: string) => string): unknown {
  if (typeof value === 'string') return hash(value);
  if (Array.isArray(value)) return value.map((v) => hashStrings(v, hash));
  if (value !== null && typeof value === 'object') {
    if (Buffer.isBuffer(value)) return hash(value.toString('base64'));
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = hashStrings(v, hash);
    return out;
  }
  return value;
}

/** elide_list_responses: `keys` becomes its length, `key_info` its number of entries. */
export function elideList(data: unknown): unknown {
  if (data === null || typeof data !== 'object' || Array.isArray(data)) return data;
  const d = data as Record<string, unknown>;
  if (!('keys' in d) && !('key_info' in d)) return data;
  const out = { ...d };
  if (Array.isArray(d['keys'])) out['keys'] = d['keys'].length;
  if (d['key_info'] && typeof d['key_info'] === 'object') out['key_info'] = Object.keys(d['key_info']).length;
  return out;
}

/** One line (without newline) of a device's log. */
export function formatEntry(record: AuditRecord, f: EntryFormat): string {
  if (record.type === 'state') {
    return f.prefix + JSON.stringify({ time: record.time.toISOString(), type: 'state', event: record.event });
  }
  const h = f.logRaw ? (s: string) => s : f.hash;
  const ha = f.hmacAccessor ? h : (s: string) => s;
  let parts = record.memo?.get(f);
  if (!parts) {
    parts = {
      auth: record.auth ? JSON.stringify(authBlock(record.auth, h, ha)) : 'null',
      request: JSON.stringify(requestBlock(record.request, f, h, ha)),
    };
    record.memo?.set(f, parts);
  }
  // Vault's key order: time, type, auth, request, response, error.
  let line =
    `${f.prefix}{"time":"${record.time.toISOString()}","type":"${record.type}",` +
    `"auth":${parts.auth},"request":${parts.request}`;
  const res = record.response;
  if (res) line += `,"response":${JSON.stringify(responseBlock(record, res, f, h, ha))}`;
  return `${line},"error":${JSON.stringify(record.error)}}`;
}

function requestBlock(
  r: AuditRequestInfo,
  f: EntryFormat,
  h: (s: string) => string,
  ha: (s: string) => string,
): Record<string, unknown> {
  return {
    id: r.id,
    client_id: '',
    operation: r.operation,
    mount_point: r.mountPoint,
    mount_type: r.mountType,
    mount_accessor: r.mountAccessor,
    client_token: h(r.clientToken),
    client_token_accessor: ha(r.clientTokenAccessor),
    namespace: { id: 'root' },
    path: r.path,
    data: f.logRaw ? r.data : hashStrings(r.data, h),
    remote_address: r.remoteAddress,
    remote_port: r.remotePort,
  };
}

function responseBlock(
  record: VaultAuditRecord,
  res: AuditResponseInfo,
  f: EntryFormat,
  h: (s: string) => string,
  ha: (s: string) => string,
): Record<string, unknown> {
  const r = record.request;
  const data = record.isList && f.elideListResponses ? elideList(res.data) : res.data;
  const out: Record<string, unknown> = {
    mount_point: r.mountPoint,
    mount_type: r.mountType,
    mount_accessor: r.mountAccessor,
    status_code: res.status,
    data: f.logRaw ? data : hashStrings(data, h),
  };
  if (res.warnings && res.warnings.length > 0) out['warnings'] = res.warnings;
  if (res.auth) {
    const a = { ...res.auth };
    if (typeof a['client_token'] === 'string') a['client_token'] = h(a['client_token']);
    if (typeof a['accessor'] === 'string') a['accessor'] = ha(a['accessor']);
    out['auth'] = a;
  }
  return out;
}

function authBlock(a: AuditAuth, h: (s: string) => string, ha: (s: string) => string): Record<string, unknown> {
  const out: Record<string, unknown> = {
    client_token: h(a.clientToken),
    accessor: ha(a.accessor),
    display_name: a.displayName,
    policies: a.policies,
    token_policies: a.tokenPolicies,
    metadata: a.metadata,
    entity_id: '',
    token_type: a.tokenType,
    token_ttl: a.tokenTtl,
  };
  if (a.tokenIssueTime) out['token_issue_time'] = a.tokenIssueTime;
  return out;
}
