import { JsonScanner, JsonSyntaxError } from './json-scanner.js';
import type { JsonEvents } from './json-scanner.js';

/**
 * Validation of raw Terraform state files and of `json-state-outputs` uploads.
 *
 * Only the JSON formats written by Terraform 0.7 and later are accepted: version 3
 * (0.7 – 0.11) and version 4 (0.12 and later). See the state API reference, section 5.
 */

export const SUPPORTED_STATE_VERSIONS: readonly number[] = [3, 4];

/** The identifying fields at the top of a state file. */
export interface StateHeader {
  /** State file format version (`version`). */
  version: 3 | 4;
  serial: number;
  lineage: string;
  /** `terraform_version`; null when the file does not say. */
  terraformVersion: string | null;
}

export type StateHeaderResult = { ok: true; header: StateHeader } | { ok: false; error: string };

/** One output as the outputs API shows it (before any redaction of sensitive values). */
export interface StateOutput {
  name: string;
  sensitive: boolean;
  /** Coarse type name: string, number, bool, list, map, set, object, tuple or dynamic. */
  type: string;
  value: unknown;
  /** The cty type JSON exactly as written by Terraform, or null when unknown (v3 states). */
  detailedType: unknown;
}

export type StateOutputsResult = { ok: true; outputs: StateOutput[] } | { ok: false; error: string };

/** Top-level fields as found in the file, before validation. Absent fields stay undefined. */
export interface RawStateHeader {
  version?: unknown;
  serial?: unknown;
  lineage?: unknown;
  terraform_version?: unknown;
}

const HEADER_KEYS = ['version', 'serial', 'lineage', 'terraform_version'] as const;

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object') return 'an object';
  if (typeof v === 'string') return `the string ${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)}`;
  return `${typeof v} ${String(v)}`;
}

/** Checks the `version` value alone, so streaming readers can stop at an unsupported format early. */
export function checkStateVersion(v: unknown): string | null {
  if (typeof v !== 'number' || !Number.isInteger(v)) return `state "version" must be an integer, got ${describe(v)}`;
  if (!SUPPORTED_STATE_VERSIONS.includes(v)) {
    return `unsupported state format version ${v}: only versions 3 and 4 are supported`;
  }
  return null;
}

/** Validates the identifying fields; the first problem found is reported. */
export function validateStateHeader(raw: RawStateHeader): StateHeaderResult {
  if (raw.version === undefined) return { ok: false, error: 'state has no "version" field' };
  const versionError = checkStateVersion(raw.version);
  if (versionError) return { ok: false, error: versionError };
  if (raw.serial === undefined) return { ok: false, error: 'state has no "serial" field' };
  const serial = raw.serial;
  if (typeof serial !== 'number' || !Number.isSafeInteger(serial) || serial < 0) {
    return { ok: false, error: `state "serial" must be a non-negative integer, got ${describe(serial)}` };
  }
  if (raw.lineage === undefined) return { ok: false, error: 'state has no "lineage" field' };
  if (typeof raw.lineage !== 'string') {
    return { ok: false, error: `state "lineage" must be a string, got ${describe(raw.lineage)}` };
  }
  const tv = raw.terraform_version;
  if (tv !== undefined && tv !== null && typeof tv !== 'string') {
    return { ok: false, error: `state "terraform_version" must be a string, got ${describe(tv)}` };
  }
  return {
    ok: true,
    header: { version: raw.version as 3 | 4, serial, lineage: raw.lineage, terraformVersion: tv ?? null },
  };
}

/** Thrown by event handlers to stop a scan with a message about the content, not the syntax. */
export class StateContentError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StateContentError';
  }
}

class StopScan extends Error {}

/**
 * OpenTofu's client-side state encryption uploads an envelope instead of a state:
 * `{"meta":{…},"encrypted_data":"<base64>","encryption_version":"v0"}` (reference 3.7).
 * A well-formed JSON object with both keys and no `version` is taken for one.
 */
const ENVELOPE_KEYS = ['encrypted_data', 'encryption_version'] as const;

/** What a state file turned out to be, after the whole document was checked. */
export type StateInspection =
  | { kind: 'state'; header: StateHeader }
  /** An OpenTofu encrypted state envelope: opaque, nothing inside can be checked. */
  | { kind: 'encrypted' }
  | { kind: 'invalid'; error: string };

/** Event handler that records the root's header fields and skips everything else. */
class HeaderCollector implements JsonEvents {
  scanner!: JsonScanner;
  readonly raw: RawStateHeader = {};
  /** Envelope keys seen at the root (bit per ENVELOPE_KEYS entry). */
  envelopeKeys = 0;
  private depth = 0;
  private found = 0;

  constructor(private readonly stopEarly: boolean) {}

  startObject(): void {
    if (this.depth === 0) this.depth = 1;
  }
  endObject(): void {}
  startArray(): void {
    throw new StateContentError('state must be a JSON object, got an array');
  }
  endArray(): void {}
  scalar(v: string | number | boolean | null): void {
    throw new StateContentError(`state must be a JSON object, got ${describe(v)}`);
  }
  key(name: string): void {
    const k = HEADER_KEYS.find((h) => h === name);
    if (!k) {
      const e = ENVELOPE_KEYS.indexOf(name as (typeof ENVELOPE_KEYS)[number]);
      if (e >= 0) this.envelopeKeys |= 1 << e;
      return this.scanner.skipValue();
    }
    this.scanner.captureValue((v) => {
      if (k === 'version') {
        const err = checkStateVersion(v);
        if (err) throw new StateContentError(err);
      }
      if (this.raw[k] === undefined) this.found++;
      this.raw[k] = v;
      if (this.stopEarly && this.found === HEADER_KEYS.length) throw new StopScan();
    });
  }
}

/** Turns scanner and handler failures into the messages users see. */
export function describeScanError(err: unknown, subject = 'state'): string {
  if (err instanceof JsonSyntaxError) {
    if (err.truncated)
      return err.message.startsWith('document is empty')
        ? `${subject} is empty`
        : `${subject} is ${err.message.replace('document is ', '')}`;
    return `${subject} is not valid JSON: ${err.message}`;
  }
  if (err instanceof StateContentError) return err.message;
  throw err;
}

function classify(collector: HeaderCollector, error: string | undefined): StateInspection {
  if (error !== undefined) return { kind: 'invalid', error };
  if (collector.raw.version === undefined && collector.envelopeKeys === (1 << ENVELOPE_KEYS.length) - 1)
    return { kind: 'encrypted' };
  const r = validateStateHeader(collector.raw);
  return r.ok ? { kind: 'state', header: r.header } : { kind: 'invalid', error: r.error };
}

function headerOnly(i: StateInspection): StateHeaderResult {
  if (i.kind === 'state') return { ok: true, header: i.header };
  return { ok: false, error: i.kind === 'invalid' ? i.error : 'state has no "version" field' };
}

/**
 * Checks a state document fed in chunks, without holding it: unless told to stop at the
 * header, it must be well-formed JSON from the first byte to the last (nothing after the
 * root value), and either a state with valid identifying fields or an encrypted envelope.
 */
export class StateInspector {
  private readonly collector: HeaderCollector;
  private readonly scanner: JsonScanner;
  private error: string | undefined;
  private done = false;

  constructor(opts: { stopEarly?: boolean } = {}) {
    this.collector = new HeaderCollector(opts.stopEarly ?? false);
    this.scanner = new JsonScanner(this.collector);
    this.collector.scanner = this.scanner;
  }

  /** False once the outcome is known (refused, or the header was read with stopEarly): send no more. */
  write(chunk: Uint8Array): boolean {
    if (this.done) return false;
    try {
      this.scanner.write(chunk);
      return true;
    } catch (err) {
      this.stop(err);
      return false;
    }
  }

  end(): StateInspection {
    if (!this.done) {
      try {
        this.scanner.end();
      } catch (err) {
        this.stop(err);
      }
      this.done = true;
    }
    return classify(this.collector, this.error);
  }

  private stop(err: unknown): void {
    this.done = true;
    if (!(err instanceof StopScan)) this.error = describeScanError(err);
  }
}

/** StateInspector over a stream. */
export async function inspectStateStream(
  source: AsyncIterable<Uint8Array>,
  opts: { stopEarly?: boolean } = {},
): Promise<StateInspection> {
  const inspector = new StateInspector(opts);
  for await (const chunk of source) if (!inspector.write(chunk)) break;
  return inspector.end();
}

/** StateInspector over a state held in memory (inline create, a few MB at most). */
export function inspectStateFile(bytes: Uint8Array): StateInspection {
  const inspector = new StateInspector();
  inspector.write(bytes);
  return inspector.end();
}

/** inspectStateFile for callers that want a state and nothing else (an envelope is refused). */
export function parseStateFile(bytes: Uint8Array): StateHeaderResult {
  return headerOnly(inspectStateFile(bytes));
}

export interface ReadStateHeaderOptions {
  /**
   * Stop reading once all four fields were seen (the default; Terraform writes them first).
   * With false the whole stream is read and must be well-formed JSON.
   */
  stopEarly?: boolean;
}

/**
 * Reads `version`, `serial`, `lineage` and `terraform_version` from a state file
 * arriving in chunks, without holding the file in memory.
 */
export async function readStateHeader(
  source: AsyncIterable<Uint8Array>,
  opts: ReadStateHeaderOptions = {},
): Promise<StateHeaderResult> {
  return headerOnly(await inspectStateStream(source, { stopEarly: opts.stopEarly ?? true }));
}

/** Skips every value: the scanner checks the grammar and nothing else. */
class GrammarOnly implements JsonEvents {
  scanner!: JsonScanner;
  startObject(): void {}
  endObject(): void {}
  startArray(): void {}
  endArray(): void {}
  scalar(): void {}
  key(): void {
    this.scanner.skipValue();
  }
}

/** Checks that a stream is one well-formed JSON document (the JSON state upload); null when it is. */
export async function checkJsonStream(source: AsyncIterable<Uint8Array>, subject: string): Promise<string | null> {
  const events = new GrammarOnly();
  const scanner = new JsonScanner(events);
  events.scanner = scanner;
  try {
    for await (const chunk of source) scanner.write(chunk);
    scanner.end();
  } catch (err) {
    return describeScanError(err, subject);
  }
  return null;
}

/**
 * Coarse output type for the outputs API, from the cty type JSON (`"string"`,
 * `["list","string"]`, …). Values of type `dynamic` or without a type are named
 * after their JSON value.
 */
export function coarseOutputType(detailedType: unknown, value: unknown): string {
  if (typeof detailedType === 'string' && detailedType !== 'dynamic') return detailedType;
  if (Array.isArray(detailedType) && typeof detailedType[0] === 'string') return detailedType[0];
  if (typeof value === 'string') return 'string';
  if (typeof value === 'number') return 'number';
  if (typeof value === 'boolean') return 'bool';
  if (Array.isArray(value)) return 'tuple';
  if (value !== null && typeof value === 'object') return 'object';
  return 'dynamic';
}

/** Builds an output from an output object of a v4 state or of `json-state-outputs`. */
export function toStateOutput(name: string, raw: unknown, hasDetailedType: boolean): StateOutput {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new StateContentError(`output "${name}" must be an object, got ${describe(raw)}`);
  }
  const o = raw as { value?: unknown; type?: unknown; sensitive?: unknown };
  const value = o.value === undefined ? null : o.value;
  const detailedType = hasDetailedType && o.type !== undefined ? o.type : null;
  return {
    name,
    sensitive: o.sensitive === true,
    type: coarseOutputType(o.type, value),
    value,
    detailedType,
  };
}

/**
 * Parses `json-state-outputs` (the `values.outputs` object of `terraform show -json`).
 * `{}` and the literal `null` both mean no outputs.
 */
export function parseJsonStateOutputs(bytes: Uint8Array): StateOutputsResult {
  let doc: unknown;
  try {
    doc = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8'));
  } catch (err) {
    return { ok: false, error: `json-state-outputs is not valid JSON: ${(err as Error).message}` };
  }
  if (doc === null) return { ok: true, outputs: [] };
  if (typeof doc !== 'object' || Array.isArray(doc)) {
    return { ok: false, error: `json-state-outputs must be a JSON object, got ${describe(doc)}` };
  }
  try {
    const outputs = Object.entries(doc as Record<string, unknown>).map(([name, o]) => toStateOutput(name, o, true));
    return { ok: true, outputs };
  } catch (err) {
    if (err instanceof StateContentError) return { ok: false, error: `json-state-outputs: ${err.message}` };
    throw err;
  }
}
