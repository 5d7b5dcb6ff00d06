import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { SecretBox } from '../secrets/secret-box.js';
import type { Clock } from '../shared/clock.js';
import { PeerChanges } from '../shared/peer-changes.js';
import { invalid, notFound } from '../shared/errors.js';
import {
  assertDeviceType,
  assertNoPathConflict,
  deviceSettings,
  normalizeDevicePath,
  optionStrings,
} from './audit-device.js';
import type { AuditDevice, AuditDeviceSettings } from './audit-device.js';
import { auditHasher, auditHmac, formatEntry } from './audit-entry.js';
import type { AuditRecord, EntryFormat } from './audit-entry.js';
import type { AuditRepo, StoredAuditDevice } from './audit-repo.js';
import { openSink } from './audit-sinks.js';
import type { AuditSink } from './audit-sinks.js';

/**
 * How long a node trusts its copy of the device table. A device enabled or disabled on this
 * node takes effect at once; one enabled on another node within this window.
 */
const CACHE_MS = 1000;

interface RunningDevice {
  device: AuditDevice;
  /** Undefined when the stored options are refused (the device then only fails). */
  settings: AuditDeviceSettings | undefined;
  salt: string;
  /** How entries are written for this device (one object per device: entry texts are remembered by it). */
  format: EntryFormat | undefined;
  /** Undefined while the sink could not be opened (every write then fails). */
  sink: AuditSink | undefined;
  openError: string | undefined;
  failing: boolean;
}

export interface EnableAuditInput {
  type: string;
  description?: string;
  options?: Record<string, unknown>;
  local?: boolean;
}

/** Thrown when devices are enabled and none could write an entry: the request must not go on. */
export class AuditUnavailableError extends Error {
  readonly statusCode = 500;
  constructor(readonly causes: string[]) {
    super('no audit device could record the request');
    this.name = 'AuditUnavailableError';
  }
}

/**
 * The audit broker: the devices enabled through sys/audit (stored in the database, so every
 * node runs the same set), each writing its own lines with its own salt. An entry counts as
 * recorded when at least one device wrote it; when devices are enabled and none could,
 * `log` throws and the caller refuses the request (Vault's fail-closed rule).
 */
export class AuditService {
  private running = new Map<string, RunningDevice>();
  private loadedAt = Number.NEGATIVE_INFINITY;
  /** The other workers' change epoch when the table was last read (decision 0056). */
  private loadedEpoch = 0;
  readonly #peers: PeerChanges;
  private loading: Promise<void> | undefined;
  private closed = false;

  constructor(
    private readonly deps: { repo: AuditRepo; secrets: SecretBox; clock: Clock; logger: Logger; peers?: PeerChanges },
  ) {
    this.#peers = deps.peers ?? new PeerChanges();
  }

  /** The time stamped on entries. */
  now(): Date {
    return this.deps.clock.now();
  }

  /**
   * Whether any device is enabled, from the cached table without waiting; null when the
   * table must be read again first (`enabled()`).
   */
  enabledNow(): boolean | null {
    const now = this.deps.clock.now().getTime();
    if (now - this.loadedAt >= CACHE_MS || now < this.loadedAt || this.loadedEpoch !== this.#peers.epoch) return null;
    return this.running.size > 0;
  }

  async enabled(): Promise<boolean> {
    const now = this.enabledNow();
    if (now !== null) return now;
    await this.reload();
    return this.running.size > 0;
  }

  /** Every enabled device (Vault's `sys/audit` listing). */
  async list(): Promise<AuditDevice[]> {
    await this.reload();
    return [...this.running.values()].map((r) => r.device);
  }

  /** Enables a device: validates its options and opens it before storing it, so a bad one is refused. */
  async enable(rawPath: string, input: EnableAuditInput): Promise<void> {
    const path = normalizeDevicePath(rawPath);
    const type = assertDeviceType(input.type);
    const options = optionStrings(input.options);
    const settings = deviceSettings(type, options);
    assertNoPathConflict(await this.list(), path);
    let sink: AuditSink;
    try {
      sink = await openSink(settings);
    } catch (err) {
      throw invalid(`sys/audit: failed to enable audit device "${path}/": ${(err as Error).message}`);
    }
    const salt = randomUUID();
    const device: StoredAuditDevice = {
      path,
      type,
      description: input.description ?? '',
      options,
      local: input.local ?? false,
      createdAt: this.deps.clock.now(),
      sealedSalt: this.deps.secrets.seal(salt, saltContext(path)),
    };
    try {
      await this.deps.repo.insert(device);
    } catch (err) {
      await sink.close().catch(() => {});
      throw err;
    }
    this.running.set(path, {
      device,
      settings,
      salt,
      format: entryFormat(settings, salt),
      sink,
      openError: undefined,
      failing: false,
    });
    this.#peers.changed();
    this.deps.logger.info({ auditDevice: `${path}/`, type }, 'enabled an audit device');
  }

  /** The audit_file setting: a file device at `path` unless one is there already. */
  async ensureFileDevice(path: string, filePath: string): Promise<void> {
    if ((await this.list()).some((d) => d.path === path)) return;
    try {
      await this.enable(path, { type: 'file', options: { file_path: filePath } });
    } catch (err) {
      // Another node enabled it at the same moment.
      if (!(await this.list()).some((d) => d.path === path)) throw err;
    }
  }

  async disable(rawPath: string): Promise<void> {
    const path = normalizeDevicePath(rawPath);
    await this.deps.repo.delete(path);
    this.#peers.changed();
    const r = this.running.get(path);
    this.running.delete(path);
    if (r) {
      await r.sink?.close().catch(() => {});
      this.deps.logger.info({ auditDevice: `${path}/` }, 'disabled an audit device');
    }
  }

  /** sys/audit-hash: the HMAC a device would write for `input`. */
  async hash(rawPath: string, input: string): Promise<string> {
    const path = normalizeDevicePath(rawPath);
    await this.reload();
    const r = this.running.get(path);
    if (!r) throw notFound(`unknown audit backend ${path}/`);
    return auditHmac(r.salt, input);
  }

  /**
   * Writes the entry to every device; resolves once at least one wrote it (or when no device
   * is enabled), rejects with AuditUnavailableError when none could. Not async: the common
   * case (the table cached, one device) hands back the device's promise with one step added.
   */
  log(record: AuditRecord): Promise<void> {
    if (this.enabledNow() === null) return this.reload().then(() => this.logLoaded(record));
    return this.logLoaded(record);
  }

  private logLoaded(record: AuditRecord): Promise<void> {
    if (this.running.size === 0) return Promise.resolve();
    if (this.running.size > 1) return this.logToAll(record);
    // One device (the common case): its own outcome decides.
    const r = this.running.values().next().value as RunningDevice;
    const unavailable = (err: unknown): AuditUnavailableError => new AuditUnavailableError([this.failed(r, err)]);
    let written: Promise<void>;
    try {
      written = this.writeTo(r, record);
    } catch (err) {
      return Promise.reject(unavailable(err));
    }
    return written.then(
      () => this.wrote(r),
      (err: unknown) => {
        throw unavailable(err);
      },
    );
  }

  private async logToAll(record: AuditRecord): Promise<void> {
    const devices = [...this.running.values()];
    const results = await Promise.allSettled(devices.map((r) => this.writeTo(r, record)));
    let ok = false;
    const causes: string[] = [];
    results.forEach((res, i) => {
      const r = devices[i] as RunningDevice;
      if (res.status === 'fulfilled') {
        ok = true;
        this.wrote(r);
      } else causes.push(this.failed(r, res.reason));
    });
    if (!ok) throw new AuditUnavailableError(causes);
  }

  private wrote(r: RunningDevice): void {
    if (!r.failing) return;
    r.failing = false;
    this.deps.logger.warn({ auditDevice: `${r.device.path}/` }, 'audit device writes again');
  }

  /** Logs a device's first failure; returns the cause as the error names it. */
  private failed(r: RunningDevice, reason: unknown): string {
    const msg = (reason as Error)?.message ?? String(reason);
    if (!r.failing) {
      r.failing = true;
      this.deps.logger.error({ auditDevice: `${r.device.path}/`, error: msg }, 'audit device failed to write');
    }
    return `${r.device.path}/: ${msg}`;
  }

  private writeTo(r: RunningDevice, record: AuditRecord): Promise<void> {
    if (!r.sink) return this.retryOpen(r).then((sink) => sink.write(this.line(r, record)));
    return r.sink.write(this.line(r, record));
  }

  private line(r: RunningDevice, record: AuditRecord): string {
    return formatEntry(record, r.format as EntryFormat);
  }

  private async retryOpen(r: RunningDevice): Promise<AuditSink> {
    if (!r.settings) throw new Error(r.openError ?? 'device options refused');
    const sink = await openSink(r.settings);
    r.sink = sink;
    r.openError = undefined;
    return sink;
  }

  /** SIGHUP: every file device closes and opens its file again (after log rotation). */
  reopen(): void {
    for (const r of this.running.values()) r.sink?.reopen();
  }

  /** Reads the device table again: opens devices enabled elsewhere, closes those disabled. */
  async reload(): Promise<void> {
    this.loading ??= this.doReload().finally(() => {
      this.loading = undefined;
    });
    await this.loading;
  }

  private async doReload(): Promise<void> {
    const epoch = this.#peers.epoch;
    const stored = await this.deps.repo.list();
    if (this.closed) return;
    const seen = new Set<string>();
    for (const d of stored) {
      seen.add(d.path);
      const current = this.running.get(d.path);
      if (current && current.device.createdAt.getTime() === d.createdAt.getTime()) continue;
      if (current) await current.sink?.close().catch(() => {});
      this.running.set(d.path, await this.start(d));
    }
    for (const [path, r] of this.running) {
      if (seen.has(path)) continue;
      this.running.delete(path);
      await r.sink?.close().catch(() => {});
    }
    this.loadedAt = this.deps.clock.now().getTime();
    this.loadedEpoch = epoch;
  }

  private async start(d: StoredAuditDevice): Promise<RunningDevice> {
    const salt = this.deps.secrets.openString(d.sealedSalt, saltContext(d.path));
    const { sealedSalt: _sealed, ...device } = d;
    let settings: AuditDeviceSettings | undefined;
    let refusal: string | undefined;
    try {
      settings = deviceSettings(d.type, d.options);
    } catch (err) {
      // Stored options this version does not accept: the device can only fail (closed).
      refusal = `options refused: ${(err as Error).message}`;
    }
    const r: RunningDevice = {
      device,
      settings,
      salt,
      format: settings ? entryFormat(settings, salt) : undefined,
      sink: undefined,
      openError: refusal,
      failing: false,
    };
    try {
      if (settings) r.sink = await openSink(settings);
    } catch (err) {
      r.openError = (err as Error).message;
    }
    if (r.openError) {
      r.failing = true;
      this.deps.logger.error({ auditDevice: `${d.path}/`, error: r.openError }, 'audit device could not be opened');
    }
    return r;
  }

  /** Writes what every device holds, then closes them (clean shutdown loses no entry). */
  async close(): Promise<void> {
    this.closed = true;
    await this.loading?.catch(() => {});
    const all = [...this.running.values()];
    this.running.clear();
    await Promise.all(all.map((r) => r.sink?.close().catch(() => {})));
  }
}

function entryFormat(s: AuditDeviceSettings, salt: string): EntryFormat {
  return {
    hash: auditHasher(salt),
    logRaw: s.logRaw,
    hmacAccessor: s.hmacAccessor,
    elideListResponses: s.elideListResponses,
    prefix: s.prefix,
  };
}

function saltContext(path: string): string {
  return `audit-device-salt:${path}`;
}
