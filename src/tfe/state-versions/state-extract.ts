import { JsonScanner } from './json-scanner.js';
import type { JsonEvents, JsonScannerLimits } from './json-scanner.js';
import {
  StateContentError,
  checkStateVersion,
  describeScanError,
  toStateOutput,
  validateStateHeader,
} from './state-file.js';
import type { RawStateHeader, StateOutput } from './state-file.js';

/**
 * Streaming extraction of the derived state-version attributes (reference 6.3):
 * resources, modules, providers, outputs, tool version and billable-rum-count.
 * Resource attribute values are validated as JSON but never decoded or kept.
 */

export interface ExtractedResource {
  name: string;
  /** Resource type; data sources carry a `data.` prefix. */
  type: string;
  /** Instances, excluding deposed objects. */
  count: number;
  /** `root`, or `root.` + module names with instance keys dropped (`root.app_sg.sg`). */
  module: string;
  /** Provider configuration address, verbatim from the file. */
  provider: string;
}

export interface StateExtract {
  stateVersion: 3 | 4;
  serial: number;
  lineage: string;
  terraformVersion: string | null;
  resources: ExtractedResource[];
  /** module string → resource type → instance count. */
  modules: Record<string, Record<string, number>>;
  /** provider address → resource type → instance count. */
  providers: Record<string, Record<string, number>>;
  /** Root module outputs only. */
  outputs: StateOutput[];
  billableRumCount: number;
  resourcesProcessed: true;
  /** Bytes read. */
  size: number;
  /**
   * `resources`, `modules` and `providers` as JSON text, when the extraction ran in a worker
   * thread: made there, so that the event loop neither clones the lists from the thread nor
   * serializes them to store them (the lists themselves are then parsed only if read).
   */
  json?: ExtractJson;
}

export interface ExtractJson {
  resources: string;
  modules: string;
  providers: string;
}

export type ExtractResult = { ok: true; value: StateExtract } | { ok: false; error: string };

/** Managed resource types that HCP does not bill (reference 6.3). */
const UNBILLED_TYPES = new Set(['null_resource', 'terraform_data']);

/** `module.app["eu"].module.sg[0]` → `root.app.sg`. */
export function moduleString(address: string | undefined): string {
  if (!address) return 'root';
  const names: string[] = [];
  let i = 0;
  const n = address.length;
  while (i < n) {
    if (!address.startsWith('module.', i)) return `root.${address}`;
    i += 7;
    const start = i;
    while (i < n && address[i] !== '.' && address[i] !== '[') i++;
    if (i === start) return `root.${address}`;
    names.push(address.slice(start, i));
    if (address[i] === '[') {
      i++;
      if (address[i] === '"') {
        i++;
        while (i < n && address[i] !== '"') i += address[i] === '\\' ? 2 : 1;
        i++;
      } else {
        while (i < n && address[i] !== ']') i++;
      }
      if (address[i] !== ']') return `root.${address}`;
      i++;
    }
    if (i < n) {
      if (address[i] !== '.') return `root.${address}`;
      i++;
    }
  }
  return ['root', ...names].join('.');
}

/** Collects resources in file order and the per-module and per-provider sums. */
class ResourceTally {
  private readonly entries = new Map<string, ExtractedResource>();
  private readonly modules = new Map<string, Map<string, number>>();
  private readonly providers = new Map<string, Map<string, number>>();
  billable = 0;

  add(module: string, type: string, name: string, provider: string, count: number, managed: boolean): void {
    const key = `${module}\u0000${type}\u0000${name}\u0000${provider}`;
    const entry = this.entries.get(key);
    if (entry) entry.count += count;
    else this.entries.set(key, { name, type, count, module, provider });
    bump(this.modules, module, type, count);
    bump(this.providers, provider, type, count);
    if (managed && !UNBILLED_TYPES.has(type)) this.billable += count;
  }

  result(): Pick<StateExtract, 'resources' | 'modules' | 'providers' | 'billableRumCount'> {
    return {
      resources: [...this.entries.values()],
      modules: toRecord(this.modules),
      providers: toRecord(this.providers),
      billableRumCount: this.billable,
    };
  }
}

function bump(map: Map<string, Map<string, number>>, outer: string, inner: string, count: number): void {
  let m = map.get(outer);
  if (!m) map.set(outer, (m = new Map()));
  m.set(inner, (m.get(inner) ?? 0) + count);
}

function toRecord(map: Map<string, Map<string, number>>): Record<string, Record<string, number>> {
  // fromEntries defines own properties, so hostile keys such as "__proto__" stay plain data.
  return Object.fromEntries([...map].map(([k, v]) => [k, Object.fromEntries(v)]));
}

// Where the collector is in the document.
const ROOT = 1;
const RESOURCES = 2; // v4 resources[]
const RESOURCE = 3;
const INSTANCES = 4;
const INSTANCE = 5;
const OUTPUTS = 6; // v4 root outputs{}
const MODULES = 7; // v3 modules[]
const MODULE = 8;
const V3_RESOURCES = 9;
const V3_RESOURCE = 10;
const V3_OUTPUTS = 11;

const CONTEXT_NAMES: Record<number, string> = {
  [ROOT]: 'state',
  [RESOURCES]: '"resources"',
  [RESOURCE]: 'a resource',
  [INSTANCES]: '"instances"',
  [INSTANCE]: 'an instance',
  [OUTPUTS]: '"outputs"',
  [MODULES]: '"modules"',
  [MODULE]: 'a module',
  [V3_RESOURCES]: 'module "resources"',
  [V3_RESOURCE]: 'a resource',
  [V3_OUTPUTS]: 'module "outputs"',
};
const ELEMENT_CONTEXTS: Record<number, number> = { [RESOURCES]: RESOURCE, [INSTANCES]: INSTANCE, [MODULES]: MODULE };
const OBJECT_CONTEXTS = new Set([ROOT, RESOURCE, INSTANCE, OUTPUTS, MODULE, V3_RESOURCES, V3_RESOURCE, V3_OUTPUTS]);

interface V4Resource {
  module?: unknown;
  mode?: unknown;
  type?: unknown;
  name?: unknown;
  provider?: unknown;
  count: number;
}
interface V3Resource {
  type?: unknown;
  provider?: unknown;
}
interface V3Module {
  path?: unknown;
  outputs: StateOutput[];
  resources: [string, V3Resource][];
}

function str(v: unknown, what: string): string {
  if (typeof v !== 'string') throw new StateContentError(`${what} must be a string`);
  return v;
}

/** Parses a v3 resource key: `aws_instance.web`, `aws_instance.web.1`, `data.aws_ami.base.0`. */
function v3Address(key: string): { mode: 'managed' | 'data'; type: string; name: string } {
  const parts = key.split('.');
  const data = parts[0] === 'data';
  const rest = data ? parts.slice(1) : parts;
  if (rest.length < 2 || rest.length > 3 || !rest[0] || !rest[1]) {
    throw new StateContentError(`resource key ${JSON.stringify(key)} is not a resource address`);
  }
  return { mode: data ? 'data' : 'managed', type: rest[0], name: rest[1] };
}

class StateCollector implements JsonEvents {
  scanner!: JsonScanner;
  readonly header: RawStateHeader = {};
  readonly v4 = new ResourceTally();
  readonly v3 = new ResourceTally();
  v4Outputs: StateOutput[] = [];
  v3Outputs: StateOutput[] = [];
  private stack: number[] = [];
  private next = 0; // context for the container announced by the last key
  private resource: V4Resource = { count: 0 };
  private deposed = false;
  private module: V3Module = { outputs: [], resources: [] };
  private v3Key = '';
  private v3Resource: V3Resource = {};

  private open(kind: number, isObject: boolean): void {
    const top = this.stack[this.stack.length - 1];
    let ctx = this.next;
    this.next = 0;
    if (top === undefined) ctx = ROOT;
    else if (top === RESOURCES) ctx = RESOURCE;
    else if (top === INSTANCES) ctx = INSTANCE;
    else if (top === MODULES) ctx = MODULE;
    if (ctx === 0) throw new StateContentError('unexpected container in state');
    if (ctx === ROOT && !isObject) throw new StateContentError('state must be a JSON object, got an array');
    const wantObject = OBJECT_CONTEXTS.has(ctx);
    if (wantObject !== isObject) {
      throw new StateContentError(
        `${CONTEXT_NAMES[ctx]} must be ${wantObject ? 'an object' : 'an array'}, got ` +
          `${kind === 1 ? 'an object' : 'an array'}`,
      );
    }
    if (ctx === RESOURCE) this.resource = { count: 0 };
    else if (ctx === INSTANCE) this.deposed = false;
    else if (ctx === MODULE) this.module = { outputs: [], resources: [] };
    else if (ctx === V3_RESOURCE) this.v3Resource = {};
    this.stack.push(ctx);
  }

  startObject(): void {
    this.open(1, true);
  }
  startArray(): void {
    this.open(2, false);
  }
  endArray(): void {
    this.stack.pop();
  }

  endObject(): void {
    const ctx = this.stack.pop();
    if (ctx === INSTANCE) {
      if (!this.deposed) this.resource.count++;
    } else if (ctx === RESOURCE) this.finishV4Resource();
    else if (ctx === V3_RESOURCE) this.module.resources.push([this.v3Key, this.v3Resource]);
    else if (ctx === MODULE) this.finishV3Module();
  }

  scalar(v: string | number | boolean | null): void {
    const top = this.stack[this.stack.length - 1];
    if (top === undefined)
      throw new StateContentError(`state must be a JSON object, got ${v === null ? 'null' : typeof v}`);
    if (v === null && this.next !== 0) {
      // `"resources": null` and the like mean "none".
      this.next = 0;
      return;
    }
    const ctx = this.next !== 0 ? this.next : (ELEMENT_CONTEXTS[top] ?? top);
    this.next = 0;
    throw new StateContentError(`${CONTEXT_NAMES[ctx]} must be ${OBJECT_CONTEXTS.has(ctx) ? 'an object' : 'an array'}`);
  }

  key(name: string): void {
    const s = this.scanner;
    switch (this.stack[this.stack.length - 1]) {
      case ROOT:
        if (name === 'version') {
          return s.captureValue((v) => {
            const err = checkStateVersion(v);
            if (err) throw new StateContentError(err);
            this.header.version = v;
          });
        }
        if (name === 'serial' || name === 'lineage' || name === 'terraform_version') {
          return s.captureValue((v) => (this.header[name] = v));
        }
        if (name === 'resources') return void (this.next = RESOURCES);
        if (name === 'outputs') return void (this.next = OUTPUTS);
        if (name === 'modules') return void (this.next = MODULES);
        return s.skipValue();
      case OUTPUTS:
        return s.captureValue((v) => this.v4Outputs.push(toStateOutput(name, v, true)));
      case RESOURCE:
        if (name === 'instances') return void (this.next = INSTANCES);
        if (name === 'module' || name === 'mode' || name === 'type' || name === 'name' || name === 'provider') {
          return s.captureValue((v) => (this.resource[name] = v));
        }
        return s.skipValue();
      case INSTANCE:
        if (name === 'deposed') return s.captureValue((v) => (this.deposed = v !== null && v !== ''));
        return s.skipValue();
      case MODULE:
        if (name === 'path') return s.captureValue((v) => (this.module.path = v));
        if (name === 'outputs') return void (this.next = V3_OUTPUTS);
        if (name === 'resources') return void (this.next = V3_RESOURCES);
        return s.skipValue();
      case V3_OUTPUTS:
        return s.captureValue((v) => this.module.outputs.push(toStateOutput(name, v, false)));
      case V3_RESOURCES:
        this.v3Key = name;
        return void (this.next = V3_RESOURCE);
      case V3_RESOURCE:
        if (name === 'type' || name === 'provider') return s.captureValue((v) => (this.v3Resource[name] = v));
        return s.skipValue();
      default:
        return s.skipValue();
    }
  }

  private finishV4Resource(): void {
    const r = this.resource;
    const mode = str(r.mode, 'resource "mode"');
    if (mode !== 'managed' && mode !== 'data')
      throw new StateContentError(`resource "mode" must be "managed" or "data", got ${JSON.stringify(mode)}`);
    const type = str(r.type, 'resource "type"');
    const name = str(r.name, 'resource "name"');
    const provider = r.provider === undefined ? '' : str(r.provider, 'resource "provider"');
    const module = r.module === undefined || r.module === null ? undefined : str(r.module, 'resource "module"');
    this.v4.add(
      moduleString(module),
      mode === 'data' ? `data.${type}` : type,
      name,
      provider,
      r.count,
      mode === 'managed',
    );
  }

  private finishV3Module(): void {
    const path = this.module.path;
    if (!Array.isArray(path) || path.length === 0 || !path.every((p) => typeof p === 'string')) {
      throw new StateContentError('module "path" must be a non-empty array of strings');
    }
    const module = (path as string[]).join('.');
    // Instances of one resource (`x.y.0`, `x.y.1`) share a base address and become one entry.
    for (const [key, r] of this.module.resources) {
      const addr = v3Address(key);
      const provider =
        r.provider === undefined || r.provider === null
          ? ''
          : str(r.provider, `resource ${JSON.stringify(key)} "provider"`);
      const type = addr.mode === 'data' ? `data.${addr.type}` : addr.type;
      this.v3.add(module, type, addr.name, provider, 1, addr.mode === 'managed');
    }
    // Terraform 0.11 and earlier only expose root module outputs.
    if (module === 'root') this.v3Outputs.push(...this.module.outputs);
    this.module = { outputs: [], resources: [] };
  }
}

export interface StateExtractorOptions {
  limits?: JsonScannerLimits;
}

/** Incremental extractor: feed chunks with write(), then call end() for the result. */
export class StateExtractor {
  private readonly collector = new StateCollector();
  private readonly scanner: JsonScanner;
  private failed: string | null = null;

  constructor(opts: StateExtractorOptions = {}) {
    this.scanner = new JsonScanner(this.collector, opts.limits);
    this.collector.scanner = this.scanner;
  }

  /** Returns false once the input is known to be invalid; later chunks are ignored. */
  write(chunk: Uint8Array): boolean {
    if (this.failed !== null) return false;
    try {
      this.scanner.write(chunk);
      return true;
    } catch (err) {
      this.failed = describeScanError(err);
      return false;
    }
  }

  end(): ExtractResult {
    if (this.failed === null) {
      try {
        this.scanner.end();
      } catch (err) {
        this.failed = describeScanError(err);
      }
    }
    if (this.failed !== null) return { ok: false, error: this.failed };
    const c = this.collector;
    const h = validateStateHeader(c.header);
    if (!h.ok) return h;
    const v4 = h.header.version === 4;
    return {
      ok: true,
      value: {
        stateVersion: h.header.version,
        serial: h.header.serial,
        lineage: h.header.lineage,
        terraformVersion: h.header.terraformVersion,
        ...(v4 ? c.v4 : c.v3).result(),
        outputs: v4 ? c.v4Outputs : c.v3Outputs,
        resourcesProcessed: true,
        size: this.scanner.position,
      },
    };
  }
}

/** Extracts from a whole state held in memory. */
export function extractStateFromBytes(bytes: Uint8Array): ExtractResult {
  const x = new StateExtractor();
  x.write(bytes);
  return x.end();
}

/**
 * Extracts from a state arriving in chunks. Content problems become `{ ok: false }`;
 * a failing source or an abort rejects.
 */
export async function extractState(
  source: AsyncIterable<Uint8Array>,
  opts: StateExtractorOptions & { signal?: AbortSignal } = {},
): Promise<ExtractResult> {
  const x = new StateExtractor(opts);
  for await (const chunk of source) {
    opts.signal?.throwIfAborted();
    if (!x.write(chunk)) break;
  }
  opts.signal?.throwIfAborted();
  return x.end();
}
