import { createHash } from 'node:crypto';
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
  /** Attribute name → hash of its JSON value. */
  attributes: Map<string, string>;
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

export function hashValue(v: unknown): string {
  return createHash('sha256').update(JSON.stringify(v) ?? 'undefined').digest('base64').slice(0, 16);
}

/** `module.app["a"]` + `data` + `aws_ami` + `base` + `0` → `module.app["a"].data.aws_ami.base[0]`. */
export function instanceAddress(module: string | undefined, mode: 'managed' | 'data', type: string, name: string, indexKey: unknown): string {
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

const ELEMENT: Record<number, number> = { [RESOURCES]: RESOURCE, [INSTANCES]: INSTANCE, [MODULES]: MODULE };

interface Resource { module?: unknown; mode?: unknown; type?: unknown; name?: unknown }
interface Instance { indexKey?: unknown; deposed: boolean; attributes?: unknown; flat?: unknown }

function str(v: unknown, what: string): string {
  if (typeof v !== 'string') throw new StateContentError(`${what} must be a string`);
  return v;
}

function attributeHashes(attrs: unknown): Map<string, string> {
  const out = new Map<string, string>();
  if (attrs === null || typeof attrs !== 'object' || Array.isArray(attrs)) return out;
  for (const [k, v] of Object.entries(attrs as Record<string, unknown>)) out.set(k, hashValue(v));
  return out;
}

class DigestCollector implements JsonEvents {
  scanner!: JsonScanner;
  version: unknown;
  readonly instances = new Map<string, InstanceDigest>();
  readonly outputs = new Map<string, OutputDigest>();
  private readonly v3Outputs = new Map<string, OutputDigest>();
  private stack: number[] = [];
  private next = 0;
  private resources: Array<{ r: Resource; instances: Instance[] }> = [];
  private resource: Resource = {};
  private instList: Instance[] = [];
  private instance: Instance = { deposed: false };
  private modulePath: unknown;
  private moduleResources: Array<[string, Map<string, string>]> = [];
  private moduleOutputs: OutputDigest[] = [];
  private v3Key = '';
  private v3Attrs = new Map<string, string>();

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
    if (ctx === V3_RESOURCE) this.v3Attrs = new Map();
    this.stack.push(ctx);
  }

  startObject(): void {
    this.push(true);
  }
  startArray(): void {
    this.push(false);
  }
  endArray(): void {
    this.stack.pop();
  }
  scalar(): void {
    const top = this.stack[this.stack.length - 1];
    if (top === undefined) throw new StateContentError('state must be a JSON object');
    this.next = 0;
  }

  endObject(): void {
    const ctx = this.stack.pop();
    if (ctx === INSTANCE) this.instList.push(this.instance);
    else if (ctx === RESOURCE) this.finishResource();
    else if (ctx === V3_RESOURCE) this.moduleResources.push([this.v3Key, this.v3Attrs]);
    else if (ctx === MODULE) this.finishModule();
  }

  key(name: string): void {
    const s = this.scanner;
    switch (this.stack[this.stack.length - 1]) {
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
        if (name === 'module' || name === 'mode' || name === 'type' || name === 'name') return s.captureValue((v) => (this.resource[name] = v));
        return s.skipValue();
      case INSTANCE:
        if (name === 'index_key') return s.captureValue((v) => (this.instance.indexKey = v));
        if (name === 'deposed') return s.captureValue((v) => (this.instance.deposed = typeof v === 'string' && v !== ''));
        // One instance's attributes are small next to the whole state; they are hashed and dropped.
        if (name === 'attributes') return s.captureValue((v) => (this.instance.attributes = attributeHashes(v)));
        if (name === 'attributes_flat') return s.captureValue((v) => (this.instance.flat = attributeHashes(v)));
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
        if (name === 'attributes') return s.captureValue((v) => (this.v3Attrs = attributeHashes(v)));
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
    if (mode !== 'managed' && mode !== 'data') throw new StateContentError(`resource "mode" must be "managed" or "data"`);
    const type = str(r.type, 'resource "type"');
    const name = str(r.name, 'resource "name"');
    const module = r.module === undefined || r.module === null ? undefined : str(r.module, 'resource "module"');
    for (const inst of this.instList) {
      // Deposed objects are leftovers of create-before-destroy, not part of the configuration.
      if (inst.deposed) continue;
      const address = instanceAddress(module, mode, type, name, inst.indexKey);
      const attributes = (inst.attributes ?? inst.flat ?? new Map()) as Map<string, string>;
      this.instances.set(address, { address, module: moduleString(module), mode, type, name, attributes });
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
      if (rest.length < 2 || rest.length > 3) throw new StateContentError(`resource key ${JSON.stringify(key)} is not a resource address`);
      const [type, name, index] = rest as [string, string, string | undefined];
      const address = instanceAddress(prefix || undefined, data ? 'data' : 'managed', type, name, index === undefined ? undefined : Number(index));
      this.instances.set(address, { address, module: (path as string[]).join('.'), mode: data ? 'data' : 'managed', type, name, attributes });
    }
    // Terraform 0.11 exposes root module outputs only.
    if (names.length === 0) for (const o of this.moduleOutputs) this.v3Outputs.set(o.name, o);
  }

  finish(): StateDigest {
    if (this.version !== 3 && this.version !== 4) throw new StateContentError(`unsupported state format version ${JSON.stringify(this.version)}`);
    return { stateVersion: this.version, instances: this.instances, outputs: this.version === 4 ? this.outputs : this.v3Outputs };
  }
}

function outputDigest(name: string, raw: unknown): OutputDigest {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new StateContentError(`output "${name}" must be an object`);
  const o = raw as { value?: unknown; type?: unknown; sensitive?: unknown };
  return { name, sensitive: o.sensitive === true, hash: hashValue([o.value ?? null, o.type ?? null]) };
}

/** Reduces a state arriving in chunks to its digest. Content problems become `{ ok: false }`. */
export async function digestState(source: AsyncIterable<Uint8Array>, opts: { signal?: AbortSignal } = {}): Promise<DigestResult> {
  const collector = new DigestCollector();
  const scanner = new JsonScanner(collector);
  collector.scanner = scanner;
  try {
    for await (const chunk of source) {
      opts.signal?.throwIfAborted();
      scanner.write(chunk);
    }
    scanner.end();
    return { ok: true, digest: collector.finish() };
  } catch (err) {
    return { ok: false, error: describeScanError(err) };
  }
}

const byAddress = (a: DiffResource, b: DiffResource) => (a.address < b.address ? -1 : a.address > b.address ? 1 : 0);
const byName = (a: ChangedOutput, b: ChangedOutput) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

function describe(d: InstanceDigest): DiffResource {
  return { address: d.address, module: d.module, mode: d.mode, type: d.type, name: d.name };
}

/** What changed from `before` to `after`; every list is sorted by address or name. */
export function diffDigests(before: StateDigest, after: StateDigest): StateDiff {
  const diff: StateDiff = { resourcesAdded: [], resourcesRemoved: [], resourcesChanged: [], outputsAdded: [], outputsRemoved: [], outputsChanged: [] };
  for (const [address, a] of after.instances) {
    const b = before.instances.get(address);
    if (!b) {
      diff.resourcesAdded.push(describe(a));
      continue;
    }
    const changed = new Set<string>();
    for (const [k, h] of a.attributes) if (b.attributes.get(k) !== h) changed.add(k);
    for (const k of b.attributes.keys()) if (!a.attributes.has(k)) changed.add(k);
    if (changed.size > 0) diff.resourcesChanged.push({ ...describe(a), changedAttributes: [...changed].sort() });
  }
  for (const [address, b] of before.instances) if (!after.instances.has(address)) diff.resourcesRemoved.push(describe(b));
  for (const [name, a] of after.outputs) {
    const b = before.outputs.get(name);
    if (!b) diff.outputsAdded.push({ name, sensitive: a.sensitive });
    else if (b.hash !== a.hash || b.sensitive !== a.sensitive) diff.outputsChanged.push({ name, sensitive: a.sensitive || b.sensitive });
  }
  for (const [name, b] of before.outputs) if (!after.outputs.has(name)) diff.outputsRemoved.push({ name, sensitive: b.sensitive });
  diff.resourcesAdded.sort(byAddress);
  diff.resourcesRemoved.sort(byAddress);
  diff.resourcesChanged.sort(byAddress);
  diff.outputsAdded.sort(byName);
  diff.outputsRemoved.sort(byName);
  diff.outputsChanged.sort(byName);
  return diff;
}
