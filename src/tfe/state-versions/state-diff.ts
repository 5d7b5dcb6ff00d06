import { JsonScanner } from './json-scanner.js';
import type { JsonEvents } from './json-scanner.js';
import { moduleString } from './state-extract.js';
import { StateContentError, describeScanError } from './state-file.js';

/**
 * State diff (a feature beyond HCP Terraform): which resource instances were added,
 * removed or changed between two states of one workspace, and which outputs changed.
 *
 * Each state is reduced in one streaming pass to a digest: per resource instance, a
 * short hash of every top-level attribute value; per root output, a hash of its value
 * and type. The diff compares digests only, so no attribute or output value is ever
 * part of the result (sensitive or not), and memory grows with the number of instances
 * and attributes, not with the size of the state.
 */

export interface InstanceDigest {
  address: string;
  /** `root` or `root.a.b` as in the state version's `resources[].module`. */
  module: string;
  mode: 'managed' | 'data';
  type: string;
  name: string;
  /**
   * Top-level attributes in file order as `name\u0001hash` pairs joined by `\u0000`: one
   * string per instance keeps a digest of hundreds of thousands of instances small.
   */
  attributes: string;
}

export interface OutputDigest {
  name: string;
  sensitive: boolean;
  hash: string;
}

export interface StateDigest {
  stateVersion: 3 | 4;
  instances: Map<string, InstanceDigest>;
  outputs: Map<string, OutputDigest>;
}

export type DigestResult = { ok: true; digest: StateDigest } | { ok: false; error: string };

export interface DiffResource {
  address: string;
  module: string;
  mode: 'managed' | 'data';
  type: string;
  name: string;
}

export interface ChangedResource extends DiffResource {
  /** Names of the top-level attributes whose value differs (added or removed ones included). */
  changedAttributes: string[];
}

export interface ChangedOutput {
  name: string;
  sensitive: boolean;
}

export interface StateDiff {
  resourcesAdded: DiffResource[];
  resourcesRemoved: DiffResource[];
  resourcesChanged: ChangedResource[];
  outputsAdded: ChangedOutput[];
  outputsRemoved: ChangedOutput[];
  outputsChanged: ChangedOutput[];
}

/**
 * A 64-bit hash of a value's JSON text: two independently seeded 32-bit multiply-xor
 * lanes. It only has to tell two values of the same attribute apart, and a JS loop is
 * several times cheaper than a crypto hash call per attribute on states with millions.
 */
export function hashValue(v: unknown): string {
  const h = new RunningHash();
  h.text(JSON.stringify(v) ?? 'undefined');
  return h.digest();
}

/** The hash of hashValue, fed piece by piece (attribute values arrive as scanner events). */
class RunningHash {
  private h1 = 0x811c9dc5;
  private h2 = 0x01000193;

  reset(): void {
    this.h1 = 0x811c9dc5;
    this.h2 = 0x01000193;
  }

  text(t: string): void {
    let h1 = this.h1;
    let h2 = this.h2;
    for (let i = 0; i < t.length; i++) {
      const c = t.charCodeAt(i);
      h1 = Math.imul(h1 ^ c, 0x01000193);
      h2 = Math.imul(h2 ^ c, 0x5bd1e995);
      h2 ^= h2 >>> 15;
    }
    this.h1 = h1;
    this.h2 = h2;
  }

  /** A scalar with its type, so that "1" and 1 differ. */
  scalar(v: string | number | boolean | null): void {
    if (typeof v === 'string') {
      this.text('\u0002s');
      this.text(v);
      this.text('\u0003');
    } else this.text(`\u0002${v === null ? 'z' : typeof v === 'number' ? `n${v}` : v ? 't' : 'f'}`);
  }

  digest(): string {
    const h1 = Math.imul(this.h1 ^ (this.h1 >>> 16), 0x85ebca6b) ^ Math.imul(this.h2 ^ (this.h2 >>> 13), 0xc2b2ae35);
    const h2 = Math.imul(this.h2 ^ (this.h2 >>> 16), 0x27d4eb2f) ^ h1;
    return `${(h1 >>> 0).toString(36)}:${(h2 >>> 0).toString(36)}`;
  }
}

/** `module.app["a"]` + `data` + `aws_ami` + `base` + `0` → `module.app["a"].data.aws_ami.base[0]`. */
export function instanceAddress(
  module: string | undefined,
  mode: 'managed' | 'data',
  type: string,
  name: string,
  indexKey: unknown,
): string {
  let a = `${module ? `${module}.` : ''}${mode === 'data' ? 'data.' : ''}${type}.${name}`;
  if (typeof indexKey === 'number') a += `[${indexKey}]`;
  else if (typeof indexKey === 'string') a += `[${JSON.stringify(indexKey)}]`;
  return a;
}

// Where the collector is.
const ROOT = 1;
const RESOURCES = 2;
const RESOURCE = 3;
const INSTANCES = 4;
const INSTANCE = 5;
const OUTPUTS = 6;
const MODULES = 7;
const MODULE = 8;
const V3_RESOURCES = 9;
const V3_RESOURCE = 10;
const V3_PRIMARY = 11;
const V3_OUTPUTS = 12;
const OTHER = 13;
/** An `attributes` object: its keys are hashed value by value from the events. */
const ATTRS = 14;

const ELEMENT: Record<number, number> = { [RESOURCES]: RESOURCE, [INSTANCES]: INSTANCE, [MODULES]: MODULE };

interface Resource {
  module?: unknown;
  mode?: unknown;
  type?: unknown;
  name?: unknown;
}
interface Instance {
  indexKey?: unknown;
  deposed: boolean;
  attributes?: string;
  flat?: string;
}

function str(v: unknown, what: string): string {
  if (typeof v !== 'string') throw new StateContentError(`${what} must be a string`);
  return v;
}

function attributeMap(attrs: string): Map<string, string> {
  const m = new Map<string, string>();
  if (attrs === '') return m;
  for (const pair of attrs.split('\u0000')) {
    const at = pair.lastIndexOf('\u0001');
    m.set(pair.slice(0, at), pair.slice(at + 1));
  }
  return m;
}

class DigestCollector implements JsonEvents {
  scanner!: JsonScanner;
  version: unknown;
  constructor(private readonly onInstance: (d: InstanceDigest) => void) {}
  readonly outputs = new Map<string, OutputDigest>();
  private readonly v3Outputs = new Map<string, OutputDigest>();
  private stack: number[] = [];
  private next = 0;
  private resource: Resource = {};
  private instList: Instance[] = [];
  private instance: Instance = { deposed: false };
  private modulePath: unknown;
  private moduleResources: Array<[string, string]> = [];
  private moduleOutputs: OutputDigest[] = [];
  private v3Key = '';
  private v3Attrs = '';
  // The attributes object being read: finished pairs, the attribute whose value is being
  // hashed, how deep inside that value the scanner is, and where the result goes.
  private attrPairs: string[] = [];
  private attrName: string | null = null;
  private valueDepth = 0;
  private readonly hash = new RunningHash();
  private attrsTarget: 'attributes' | 'flat' | 'v3' = 'attributes';

  private push(isObject: boolean): void {
    const top = this.stack[this.stack.length - 1];
    let ctx = this.next;
    this.next = 0;
    if (top === undefined) {
      if (!isObject) throw new StateContentError('state must be a JSON object');
      ctx = ROOT;
    } else if (ELEMENT[top] !== undefined) ctx = ELEMENT[top] as number;
    else if (ctx === 0) ctx = OTHER;
    if (ctx === RESOURCE) this.resource = {};
    if (ctx === INSTANCES) this.instList = [];
    if (ctx === INSTANCE) this.instance = { deposed: false };
    if (ctx === MODULE) {
      this.modulePath = undefined;
      this.moduleResources = [];
      this.moduleOutputs = [];
    }
    if (ctx === V3_RESOURCE) this.v3Attrs = '';
    if (ctx === ATTRS) this.attrPairs = [];
    this.stack.push(ctx);
  }

  private finishAttribute(): void {
    this.attrPairs.push(`${this.attrName as string}\u0001${this.hash.digest()}`);
    this.attrName = null;
  }

  private finishAttributes(): void {
    const joined = this.attrPairs.join('\u0000');
    this.attrPairs = [];
    if (this.attrsTarget === 'v3') this.v3Attrs = joined;
    else this.instance[this.attrsTarget] = joined;
  }

  startObject(): void {
    if (this.attrName !== null) {
      this.valueDepth++;
      return this.hash.text('\u0002{');
    }
    this.push(true);
  }
  startArray(): void {
    if (this.attrName !== null) {
      this.valueDepth++;
      return this.hash.text('\u0002[');
    }
    this.push(false);
  }
  endArray(): void {
    if (this.attrName !== null) {
      this.hash.text('\u0002]');
      if (--this.valueDepth === 0) this.finishAttribute();
      return;
    }
    this.stack.pop();
  }
  scalar(v: string | number | boolean | null): void {
    if (this.attrName !== null) {
      this.hash.scalar(v);
      if (this.valueDepth === 0) this.finishAttribute();
      return;
    }
    const top = this.stack[this.stack.length - 1];
    if (top === undefined) throw new StateContentError('state must be a JSON object');
    this.next = 0;
  }

  endObject(): void {
    if (this.attrName !== null) {
      this.hash.text('\u0002}');
      if (--this.valueDepth === 0) this.finishAttribute();
      return;
    }
    const ctx = this.stack.pop();
    if (ctx === ATTRS) return this.finishAttributes();
    if (ctx === INSTANCE) this.instList.push(this.instance);
    else if (ctx === RESOURCE) this.finishResource();
    else if (ctx === V3_RESOURCE) this.moduleResources.push([this.v3Key, this.v3Attrs]);
    else if (ctx === MODULE) this.finishModule();
  }

  key(name: string): void {
    if (this.attrName !== null) {
      this.hash.text('\u0002k');
      return this.hash.text(name);
    }
    const s = this.scanner;
    switch (this.stack[this.stack.length - 1]) {
      case ATTRS:
        this.attrName = name;
        this.valueDepth = 0;
        return this.hash.reset();
      case ROOT:
        if (name === 'version') return s.captureValue((v) => (this.version = v));
        if (name === 'resources') return void (this.next = RESOURCES);
        if (name === 'outputs') return void (this.next = OUTPUTS);
        if (name === 'modules') return void (this.next = MODULES);
        return s.skipValue();
      case OUTPUTS:
        return s.captureValue((v) => this.outputs.set(name, outputDigest(name, v)));
      case RESOURCE:
        if (name === 'instances') return void (this.next = INSTANCES);
        if (name === 'module' || name === 'mode' || name === 'type' || name === 'name')
          return s.captureValue((v) => (this.resource[name] = v));
        return s.skipValue();
      case INSTANCE:
        if (name === 'index_key') return s.captureValue((v) => (this.instance.indexKey = v));
        if (name === 'deposed')
          return s.captureValue((v) => (this.instance.deposed = typeof v === 'string' && v !== ''));
        // Attribute values are hashed from the scanner's events, never built as objects.
        if (name === 'attributes' || name === 'attributes_flat') {
          this.attrsTarget = name === 'attributes' ? 'attributes' : 'flat';
          return void (this.next = ATTRS);
        }
        return s.skipValue();
      case MODULE:
        if (name === 'path') return s.captureValue((v) => (this.modulePath = v));
        if (name === 'resources') return void (this.next = V3_RESOURCES);
        if (name === 'outputs') return void (this.next = V3_OUTPUTS);
        return s.skipValue();
      case V3_RESOURCES:
        this.v3Key = name;
        return void (this.next = V3_RESOURCE);
      case V3_RESOURCE:
        if (name === 'primary') return void (this.next = V3_PRIMARY);
        return s.skipValue();
      case V3_PRIMARY:
        if (name === 'attributes') {
          this.attrsTarget = 'v3';
          return void (this.next = ATTRS);
        }
        return s.skipValue();
      case V3_OUTPUTS:
        return s.captureValue((v) => this.moduleOutputs.push(outputDigest(name, v)));
      default:
        return s.skipValue();
    }
  }

  private finishResource(): void {
    const r = this.resource;
    const mode = str(r.mode, 'resource "mode"');
    if (mode !== 'managed' && mode !== 'data')
      throw new StateContentError(`resource "mode" must be "managed" or "data"`);
    const type = str(r.type, 'resource "type"');
    const name = str(r.name, 'resource "name"');
    const module = r.module === undefined || r.module === null ? undefined : str(r.module, 'resource "module"');
    for (const inst of this.instList) {
      // Deposed objects are leftovers of create-before-destroy, not part of the configuration.
      if (inst.deposed) continue;
      const address = instanceAddress(module, mode, type, name, inst.indexKey);
      const attributes = (inst.attributes ?? inst.flat ?? '') as string;
      this.onInstance({ address, module: moduleString(module), mode, type, name, attributes });
    }
    this.instList = [];
  }

  private finishModule(): void {
    const path = this.modulePath;
    if (!Array.isArray(path) || path.length === 0 || !path.every((p) => typeof p === 'string')) {
      throw new StateContentError('module "path" must be a non-empty array of strings');
    }
    const names = (path as string[]).slice(1);
    const prefix = names.map((n) => `module.${n}`).join('.');
    for (const [key, attributes] of this.moduleResources) {
      const parts = key.split('.');
      const data = parts[0] === 'data';
      const rest = data ? parts.slice(1) : parts;
      if (rest.length < 2 || rest.length > 3)
        throw new StateContentError(`resource key ${JSON.stringify(key)} is not a resource address`);
      const [type, name, index] = rest as [string, string, string | undefined];
      const address = instanceAddress(
        prefix || undefined,
        data ? 'data' : 'managed',
        type,
        name,
        index === undefined ? undefined : Number(index),
      );
      this.onInstance({
        address,
        module: (path as string[]).join('.'),
        mode: data ? 'data' : 'managed',
        type,
        name,
        attributes,
      });
    }
    // Terraform 0.11 exposes root module outputs only.
    if (names.length === 0) for (const o of this.moduleOutputs) this.v3Outputs.set(o.name, o);
  }

  /** The format version and root outputs, once the whole document was read. */
  finish(): { stateVersion: 3 | 4; outputs: Map<string, OutputDigest> } {
    if (this.version !== 3 && this.version !== 4)
      throw new StateContentError(`unsupported state format version ${JSON.stringify(this.version)}`);
    return { stateVersion: this.version, outputs: this.version === 4 ? this.outputs : this.v3Outputs };
  }
}

function outputDigest(name: string, raw: unknown): OutputDigest {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    throw new StateContentError(`output "${name}" must be an object`);
  const o = raw as { value?: unknown; type?: unknown; sensitive?: unknown };
  return { name, sensitive: o.sensitive === true, hash: hashValue([o.value ?? null, o.type ?? null]) };
}

async function scan(source: AsyncIterable<Uint8Array>, onInstance: (d: InstanceDigest) => void, signal?: AbortSignal) {
  const collector = new DigestCollector(onInstance);
  const scanner = new JsonScanner(collector);
  collector.scanner = scanner;
  for await (const chunk of source) {
    signal?.throwIfAborted();
    scanner.write(chunk);
  }
  scanner.end();
  return collector.finish();
}

/** Reduces a state arriving in chunks to its digest. Content problems become `{ ok: false }`. */
export async function digestState(
  source: AsyncIterable<Uint8Array>,
  opts: { signal?: AbortSignal } = {},
): Promise<DigestResult> {
  const instances = new Map<string, InstanceDigest>();
  try {
    const { stateVersion, outputs } = await scan(source, (d) => instances.set(d.address, d), opts.signal);
    return { ok: true, digest: { stateVersion, instances, outputs } };
  } catch (err) {
    if (opts.signal?.aborted) throw err;
    return { ok: false, error: describeScanError(err) };
  }
}

/**
 * Compares a digest with a second state as it streams in: each instance of `after` is
 * compared when it has been read and only the `before` digest is held, so memory is
 * one digest whatever the size of the second state. `before` is consumed.
 */
export async function diffAgainstState(
  before: StateDigest,
  after: AsyncIterable<Uint8Array>,
  opts: { signal?: AbortSignal } = {},
): Promise<{ ok: true; diff: StateDiff } | { ok: false; error: string }> {
  const builder = new DiffBuilder(before);
  try {
    const { outputs } = await scan(after, (d) => builder.instance(d), opts.signal);
    return { ok: true, diff: builder.finish(outputs) };
  } catch (err) {
    if (opts.signal?.aborted) throw err;
    return { ok: false, error: describeScanError(err) };
  }
}

const byAddress = (a: DiffResource, b: DiffResource) => (a.address < b.address ? -1 : a.address > b.address ? 1 : 0);
const byName = (a: ChangedOutput, b: ChangedOutput) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

function describe(d: InstanceDigest): DiffResource {
  return { address: d.address, module: d.module, mode: d.mode, type: d.type, name: d.name };
}

function changedAttributes(before: string, after: string): string[] {
  const a = attributeMap(after);
  const b = attributeMap(before);
  const changed = new Set<string>();
  for (const [k, h] of a) if (b.get(k) !== h) changed.add(k);
  for (const k of b.keys()) if (!a.has(k)) changed.add(k);
  return [...changed].sort();
}

class DiffBuilder {
  private readonly diff: StateDiff = {
    resourcesAdded: [],
    resourcesRemoved: [],
    resourcesChanged: [],
    outputsAdded: [],
    outputsRemoved: [],
    outputsChanged: [],
  };
  private readonly remaining: Map<string, InstanceDigest>;

  constructor(private readonly before: StateDigest) {
    this.remaining = before.instances;
  }

  instance(a: InstanceDigest): void {
    const b = this.remaining.get(a.address);
    if (!b) {
      this.diff.resourcesAdded.push(describe(a));
      return;
    }
    this.remaining.delete(a.address);
    // Equal strings are equal attributes; only differing ones are taken apart.
    if (b.attributes === a.attributes) return;
    const changed = changedAttributes(b.attributes, a.attributes);
    if (changed.length > 0) this.diff.resourcesChanged.push({ ...describe(a), changedAttributes: changed });
  }

  finish(afterOutputs: Map<string, OutputDigest>): StateDiff {
    const diff = this.diff;
    for (const b of this.remaining.values()) diff.resourcesRemoved.push(describe(b));
    const before = this.before.outputs;
    for (const [name, a] of afterOutputs) {
      const b = before.get(name);
      if (!b) diff.outputsAdded.push({ name, sensitive: a.sensitive });
      else if (b.hash !== a.hash || b.sensitive !== a.sensitive)
        diff.outputsChanged.push({ name, sensitive: a.sensitive || b.sensitive });
    }
    for (const [name, b] of before)
      if (!afterOutputs.has(name)) diff.outputsRemoved.push({ name, sensitive: b.sensitive });
    diff.resourcesAdded.sort(byAddress);
    diff.resourcesRemoved.sort(byAddress);
    diff.resourcesChanged.sort(byAddress);
    diff.outputsAdded.sort(byName);
    diff.outputsRemoved.sort(byName);
    diff.outputsChanged.sort(byName);
    return diff;
  }
}

/** What changed from `before` to `after`; every list is sorted by address or name. Neither digest is modified. */
export function diffDigests(before: StateDigest, after: StateDigest): StateDiff {
  const builder = new DiffBuilder({ ...before, instances: new Map(before.instances) });
  for (const a of after.instances.values()) builder.instance(a);
  return builder.finish(after.outputs);
}
