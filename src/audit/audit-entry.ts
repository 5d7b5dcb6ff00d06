import * as nodeCrypto from 'node:crypto';
import { nativeAddon } from '../shared/native-addon.js';

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
  /**
   * Stands for this caller while its token check is remembered (the cached answer): the
   * block's text is then made once per device and reused, as long as the token is the same.
   */
  key?: object;
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
export type EntryMemo = Map<EntryFormat, EntryParts>;

/** The texts both entries of a request repeat. */
interface EntryParts {
  auth: string;
  request: string;
  /** The mount's fields (mountText), which the response starts with. */
  mount: string;
}

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
  /** The auth blocks' texts by AuditAuth.key (authText). */
  authTexts?: WeakMap<object, { token: string; text: string }>;
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

/** The addon's HMAC (native/audit-hmac.c), when it is built. */
interface NativeHmac {
  hmacState(key: Buffer): Buffer;
  hmacHex(state: Buffer, value: string): string;
}
const NATIVE_HMAC = (nativeAddon()?.['auditHmac'] as NativeHmac | undefined) ?? null;

/**
 * Vault's HMAC of one value under `salt`, by the fastest means at hand: the addon, which
 * hashes the salt's pads once; else RFC 2104 written out over two one-shot digests (the salt
 * is ASCII and shorter than a block, so its padded forms are ASCII strings too); else a Hmac
 * object per value.
 */
export function saltedHmac(salt: string, native: NativeHmac | null = NATIVE_HMAC): (value: string) => string {
  const key = Buffer.from(salt, 'utf8');
  if (native && key.length <= 64) {
    const state = native.hmacState(key);
    return (v) => native.hmacHex(state, v);
  }
  const ascii = /^[\x20-\x7e]{0,64}$/.test(salt);
  if (!oneShot || !ascii) return (v) => auditHmac(salt, v);
  const padded = Buffer.alloc(64);
  padded.write(salt, 'latin1');
  const ipad = Buffer.from(padded.map((b) => b ^ 0x36)).toString('latin1');
  const outer = Buffer.alloc(96);
  padded.forEach((b, i) => (outer[i] = b ^ 0x5c));
  const digest = oneShot;
  return (v) => {
    (digest('sha256', ipad + v, 'buffer') as Buffer).copy(outer, 64);
    return `hmac-sha256:${digest('sha256', outer, 'hex') as string}`;
  };
}

/**
 * The hasher of a device: saltedHmac, with values seen again remembered, since entries repeat
 * the token and most answers repeat the CA chain. Values seen once (a CSR, a certificate) are
 * hashed without a lookup and not kept: holding thousands of them would only make the garbage
 * collector copy them. The empty string stays empty.
 */
export function auditHasher(salt: string, native: NativeHmac | null = NATIVE_HMAC): (value: string) => string {
  const hmac = saltedHmac(salt, native);
  let memo = new Map<string, string>();
  let seen = new Set<number>();
  return (v) => {
    if (v === '') return v;
    if (v.length > MEMO_MAX_LENGTH) return hmac(v);
    const fp = fingerprint(v);
    if (!seen.has(fp)) {
      if (seen.size >= SEEN_ENTRIES) seen = new Set();
      seen.add(fp);
      return hmac(v);
    }
    const hit = memo.get(v);
    if (hit !== undefined) return hit;
    const h = hmac(v);
    if (memo.size >= MEMO_ENTRIES) memo = new Map();
    memo.set(v, h);
    return h;
  };
}

/** Short strings that recur in entries (keys, mount and path names), with their JSON text. */
let quotedTexts = new Map<string, string>();
const QUOTED_ENTRIES = 1024;
const QUOTED_MAX_LENGTH = 256;

/** `JSON.stringify(s)` of a string, remembered when short: most recur in every entry. */
function quoted(s: string): string {
  if (s.length > QUOTED_MAX_LENGTH) return JSON.stringify(s);
  let text = quotedTexts.get(s);
  if (text === undefined) {
    text = JSON.stringify(s);
    if (quotedTexts.size >= QUOTED_ENTRIES) quotedTexts = new Map();
    quotedTexts.set(s, text);
  }
  return text;
}

/**
 * The JSON text of `value` with every string (at any depth, keys aside; Buffers as base64)
 * replaced by `hash(string)`, made in one pass without a hashed copy. `hash` must
 * give text that needs no escaping in a JSON string (a device's hasher: "hmac-sha256:<hex>",
 * or '' for ''). Values JSON leaves out (undefined, functions) are left out, or null in arrays,
 * as JSON.stringify does; objects with toJSON (dates, stored JSON text) give what it returns.
 */
export function hashedJson(value: unknown, hash: (s: string) => string): string {
  switch (typeof value) {
    case 'string':
      return `"${hash(value)}"`;
    case 'number':
      return Number.isFinite(value) ? String(value) : 'null';
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object':
      break;
    default:
      return JSON.stringify(value) ?? 'null';
  }
  if (value === null) return 'null';
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) {
      const v: unknown = value[i];
      out += (i === 0 ? '' : ',') + (omitted(v) ? 'null' : hashedJson(v, hash));
    }
    return `${out}]`;
  }
  if (Buffer.isBuffer(value)) return `"${hash(value.toString('base64'))}"`;
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === 'function') return hashedJson(toJSON.call(value), hash);
  let out = '{';
  for (const k of Object.keys(value)) {
    const v: unknown = (value as Record<string, unknown>)[k];
    if (omitted(v)) continue;
    out += `${out.length === 1 ? '' : ','}${quoted(k)}:${hashedJson(v, hash)}`;
  }
  return `${out}}`;
}

function omitted(v: unknown): boolean {
  return v === undefined || typeof v === 'function' || typeof v === 'symbol';
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

/** The last time stamp written, and its text: the entries of one millisecond share it. */
let lastTime = Number.NaN;
let lastTimeText = '';

/** `time.toISOString()`, made once per millisecond. */
function isoTime(time: Date): string {
  const ms = time.getTime();
  if (ms !== lastTime) {
    lastTimeText = time.toISOString();
    lastTime = ms;
  }
  return lastTimeText;
}

/** One line (without newline) of a device's log. */
export function formatEntry(record: AuditRecord, f: EntryFormat): string {
  if (record.type === 'state') {
    return f.prefix + JSON.stringify({ time: record.time.toISOString(), type: 'state', event: record.event });
  }
  let parts = record.memo?.get(f);
  if (!parts) {
    const mount = mountText(record.request);
    parts = { auth: authText(record.auth, f), request: requestText(record.request, mount, f), mount };
    record.memo?.set(f, parts);
  }
  // Vault's key order: time, type, auth, request, response, error.
  let line =
    `${f.prefix}{"time":"${isoTime(record.time)}","type":"${record.type}",` +
    `"auth":${parts.auth},"request":${parts.request}`;
  const res = record.response;
  if (res) line += `,"response":${responseText(record, res, parts.mount, f)}`;
  return `${line},"error":${quoted(record.error)}}`;
}

/** Data as a device writes it: its strings hashed, or as it is under log_raw. */
function dataText(data: unknown, f: EntryFormat): string {
  return f.logRaw ? (JSON.stringify(data) ?? 'null') : hashedJson(data, f.hash);
}

/** Whether a device writes this secret field (token, accessor) as it is rather than hashed. */
function writtenRaw(f: EntryFormat, isAccessor: boolean): boolean {
  return f.logRaw || (isAccessor && !f.hmacAccessor);
}

/** A secret field (token, accessor) as a device writes it, as JSON text. */
function secretText(value: string, f: EntryFormat, isAccessor = false): string {
  return writtenRaw(f, isAccessor) ? JSON.stringify(value) : `"${f.hash(value)}"`;
}

/** `"mount_point":…,"mount_type":…,"mount_accessor":…`, which both entries of a request carry. */
function mountText(r: AuditRequestInfo): string {
  return (
    `"mount_point":${quoted(r.mountPoint)},"mount_type":${quoted(r.mountType)},` +
    `"mount_accessor":${quoted(r.mountAccessor)}`
  );
}

function requestText(r: AuditRequestInfo, mount: string, f: EntryFormat): string {
  return (
    `{"id":${JSON.stringify(r.id)},"client_id":"","operation":${quoted(r.operation)},${mount},` +
    `"client_token":${secretText(r.clientToken, f)},` +
    `"client_token_accessor":${secretText(r.clientTokenAccessor, f, true)},"namespace":{"id":"root"},` +
    `"path":${quoted(r.path)},"data":${dataText(r.data, f)},"remote_address":${quoted(r.remoteAddress)},` +
    `"remote_port":${r.remotePort}}`
  );
}

function responseText(record: VaultAuditRecord, res: AuditResponseInfo, mount: string, f: EntryFormat): string {
  const q = JSON.stringify;
  const data = record.isList && f.elideListResponses ? elideList(res.data) : res.data;
  let out = `{${mount},"status_code":${res.status},"data":${dataText(data, f)}`;
  if (res.warnings && res.warnings.length > 0) out += `,"warnings":${q(res.warnings)}`;
  if (res.auth) {
    const a = { ...res.auth };
    if (typeof a['client_token'] === 'string' && !writtenRaw(f, false)) a['client_token'] = f.hash(a['client_token']);
    if (typeof a['accessor'] === 'string' && !writtenRaw(f, true)) a['accessor'] = f.hash(a['accessor']);
    out += `,"auth":${q(a)}`;
  }
  return `${out}}`;
}

/**
 * The auth block's text. The same caller (`auth.key`, the token check's cached answer) gives
 * the same text, so it is made once per device and caller while that answer is cached.
 */
function authText(a: AuditAuth | null, f: EntryFormat): string {
  if (!a) return 'null';
  const cached = a.key ? f.authTexts?.get(a.key) : undefined;
  if (cached && cached.token === a.clientToken) return cached.text;
  const q = JSON.stringify;
  let text =
    `{"client_token":${secretText(a.clientToken, f)},"accessor":${secretText(a.accessor, f, true)},` +
    `"display_name":${q(a.displayName)},"policies":${q(a.policies)},"token_policies":${q(a.tokenPolicies)},` +
    `"metadata":${q(a.metadata)},"entity_id":"","token_type":${q(a.tokenType)},"token_ttl":${a.tokenTtl}`;
  if (a.tokenIssueTime) text += `,"token_issue_time":${q(a.tokenIssueTime)}`;
  text += '}';
  if (a.key) (f.authTexts ??= new WeakMap()).set(a.key, { token: a.clientToken, text });
  return text;
}
