import { invalid } from '../shared/errors.js';

/**
 * Audit devices as Vault defines them: a `file` or `socket` device enabled at a path,
 * with options given as strings. Vault's wording for bad options is kept.
 * https://developer.hashicorp.com/vault/docs/audit/file
 * https://developer.hashicorp.com/vault/docs/audit/socket
 */
export type AuditDeviceType = 'file' | 'socket';

export interface AuditDevice {
  /** Without trailing slash: "file", "audit/primary". */
  path: string;
  type: AuditDeviceType;
  description: string;
  /** The options as given (Vault lists them back as strings). */
  options: Record<string, string>;
  local: boolean;
  createdAt: Date;
}

/** The options a device runs with, parsed once. */
export interface AuditDeviceSettings {
  format: 'json';
  prefix: string;
  hmacAccessor: boolean;
  logRaw: boolean;
  elideListResponses: boolean;
  target:
    | { kind: 'file'; path: string; mode: number | null }
    | { kind: 'stdout' }
    | { kind: 'discard' }
    | { kind: 'socket'; socketType: 'tcp' | 'udp' | 'unix'; address: string; writeTimeoutMs: number };
}

const COMMON_OPTIONS = ['format', 'prefix', 'hmac_accessor', 'log_raw', 'elide_list_responses', 'fallback', 'filter'];
const TYPE_OPTIONS: Record<AuditDeviceType, readonly string[]> = {
  file: ['file_path', 'path', 'mode'],
  socket: ['address', 'socket_type', 'write_timeout'],
};

export function assertDeviceType(type: string): AuditDeviceType {
  if (type === 'file' || type === 'socket') return type;
  if (type === '') throw invalid('type is required');
  throw invalid(`unknown backend type: "${type}"`);
}

/** "file/" or "/file" → "file"; rejects empty paths and `..` segments. */
export function normalizeDevicePath(raw: string): string {
  const path = raw.replace(/^\/+/, '').replace(/\/+$/, '');
  if (path === '') throw invalid('path is required');
  if (path.split('/').some((s) => s === '..' || s === '.' || s === ''))
    throw invalid(`invalid audit device path "${raw}"`);
  return path;
}

/** Two devices may not nest (Vault: "path already in use"). */
export function assertNoPathConflict(existing: readonly AuditDevice[], path: string): void {
  for (const d of existing) {
    if (d.path === path || d.path.startsWith(`${path}/`) || path.startsWith(`${d.path}/`))
      throw invalid(`path already in use at ${d.path}/`);
  }
}

/** Options from the request: every value as a string, as Vault stores them. */
export function optionStrings(raw: Record<string, unknown> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(raw ?? {})) {
    if (v === null || v === undefined) continue;
    if (typeof v === 'string') out[k] = v;
    else if (typeof v === 'number' || typeof v === 'boolean') out[k] = String(v);
    else throw invalid(`option "${k}" must be a string`);
  }
  return out;
}

function bool(options: Record<string, string>, key: string, fallback: boolean): boolean {
  const v = options[key];
  if (v === undefined || v === '') return fallback;
  const lower = v.toLowerCase();
  if (['true', '1', 't'].includes(lower)) return true;
  if (['false', '0', 'f'].includes(lower)) return false;
  throw invalid(`unable to parse '${key}': strconv.ParseBool: parsing "${v}": invalid syntax`);
}

/** Validates a device's options and works out how it runs. */
export function deviceSettings(type: AuditDeviceType, options: Record<string, string>): AuditDeviceSettings {
  const known = new Set([...COMMON_OPTIONS, ...TYPE_OPTIONS[type]]);
  const unknown = Object.keys(options).filter((k) => !known.has(k));
  if (unknown.length > 0) throw invalid(`unknown option(s) for a ${type} audit device: ${unknown.sort().join(', ')}`);
  const format = options['format'] ?? 'json';
  if (format === 'jsonx') throw invalid('format "jsonx" is not supported by this server; use "json"');
  if (format !== 'json' && format !== '') throw invalid(`unknown format type "${format}"`);
  if (options['fallback'] !== undefined && bool(options, 'fallback', false))
    throw invalid('fallback audit devices are not supported by this server');
  if (options['filter']) throw invalid('audit device filters are not supported by this server');
  const common = {
    format: 'json' as const,
    prefix: options['prefix'] ?? '',
    hmacAccessor: bool(options, 'hmac_accessor', true),
    logRaw: bool(options, 'log_raw', false),
    elideListResponses: bool(options, 'elide_list_responses', false),
  };
  if (type === 'file') {
    const filePath = options['file_path'] ?? options['path'] ?? '';
    if (filePath === '') throw invalid('file_path is required');
    if (filePath === 'stdout' || filePath === '-') return { ...common, target: { kind: 'stdout' } };
    if (filePath === 'discard') return { ...common, target: { kind: 'discard' } };
    if (!filePath.startsWith('/')) throw invalid('file_path must be an absolute path');
    return { ...common, target: { kind: 'file', path: filePath, mode: fileMode(options['mode']) } };
  }
  const address = options['address'] ?? '';
  if (address === '') throw invalid('address is required');
  const socketType = options['socket_type'] ?? 'tcp';
  if (socketType !== 'tcp' && socketType !== 'udp' && socketType !== 'unix')
    throw invalid(`unsupported socket_type "${socketType}": use tcp, udp or unix`);
  if (socketType !== 'unix' && !/^(?:\[[^\]]+\]|[^:]+):\d{1,5}$/.test(address))
    throw invalid(`address "${address}" must be host:port`);
  return {
    ...common,
    target: { kind: 'socket', socketType, address, writeTimeoutMs: writeTimeout(options['write_timeout']) },
  };
}

/** Vault's `mode`: octal permissions (default 0600); "0000" leaves the file's mode alone. */
function fileMode(raw: string | undefined): number | null {
  if (raw === undefined || raw === '') return 0o600;
  if (!/^0?[0-7]{3,4}$/.test(raw)) throw invalid(`invalid mode "${raw}": an octal file mode such as 0600`);
  const mode = parseInt(raw, 8);
  return mode === 0 ? null : mode;
}

/** `write_timeout` of a socket device: "2s" by default; plain seconds or s/ms suffixes. */
function writeTimeout(raw: string | undefined): number {
  if (raw === undefined || raw === '') return 2000;
  const m = /^(\d+)(ms|s)?$/.exec(raw);
  if (!m) throw invalid(`invalid write_timeout "${raw}"`);
  const n = Number(m[1]);
  return m[2] === 'ms' ? n : n * 1000;
}
