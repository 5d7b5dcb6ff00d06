import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';

/**
 * Generators of realistic Terraform state files for tests and benchmarks.
 *
 * Each generator also reports what a correct extraction must find, computed from what it
 * wrote (not by parsing it), so tests can compare the two.
 */

export interface ExpectedResource {
  name: string;
  type: string;
  count: number;
  module: string;
  provider: string;
}
export interface ExpectedOutput {
  name: string;
  sensitive: boolean;
  type: string;
  value: unknown;
  detailedType: unknown;
}

export interface GeneratedStateSummary {
  bytes: number;
  md5: string;
  stateVersion: 3 | 4;
  serial: number;
  lineage: string;
  terraformVersion: string;
  /** Instance objects written, deposed ones included. */
  instanceObjects: number;
  resources: ExpectedResource[];
  modules: Record<string, Record<string, number>>;
  providers: Record<string, Record<string, number>>;
  billableRumCount: number;
  outputs: ExpectedOutput[];
}

export interface V4StateOptions {
  /** Instances to write (current objects; a few deposed ones come on top). */
  resourceInstances: number;
  /** Approximate file size; attribute payloads grow to reach it. Default: about 1 KB per instance. */
  targetBytes?: number;
  seed?: number;
  serial?: number;
  lineage?: string;
  terraformVersion?: string;
}

/** Small deterministic PRNG (mulberry32). */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const AWS = 'provider["registry.terraform.io/hashicorp/aws"]';
const RANDOM = 'provider["registry.terraform.io/hashicorp/random"]';
const NULL = 'provider["registry.terraform.io/hashicorp/null"]';
const BUILTIN = 'provider["terraform.io/builtin/terraform"]';

interface Kind {
  mode: 'managed' | 'data';
  type: string;
  provider: string;
}
const KINDS: Kind[] = [
  { mode: 'data', type: 'aws_ami', provider: AWS },
  { mode: 'data', type: 'aws_iam_policy_document', provider: AWS },
  { mode: 'data', type: 'terraform_remote_state', provider: BUILTIN },
  { mode: 'managed', type: 'aws_instance', provider: AWS },
  { mode: 'managed', type: 'aws_s3_bucket', provider: AWS },
  { mode: 'managed', type: 'aws_security_group_rule', provider: AWS },
  { mode: 'managed', type: 'aws_route', provider: `${AWS}.west` },
  { mode: 'managed', type: 'aws_iam_role', provider: AWS },
  { mode: 'managed', type: 'random_password', provider: RANDOM },
  { mode: 'managed', type: 'null_resource', provider: NULL },
  { mode: 'managed', type: 'terraform_data', provider: BUILTIN },
];

/**
 * Module instance addresses grouped by the module string extraction must report for them;
 * each generated resource appears once in every instance of its module.
 */
const MODULE_GROUPS: [string, (string | undefined)[]][] = [
  ['root', [undefined]],
  ['root.network', ['module.network']],
  [
    'root.network.subnets',
    ['module.network.module.subnets["eu-west-1a"]', 'module.network.module.subnets["eu-west-1b"]'],
  ],
  ['root.app', ['module.app[0]', 'module.app[1]']],
  ['root.app.sg', ['module.app[0].module.sg']],
  ['root.dns', ['module.dns["example.com"]']],
];

const OUTPUTS: ExpectedOutput[] = [
  {
    name: 'bucket_names',
    sensitive: false,
    type: 'list',
    detailedType: ['list', 'string'],
    value: ['logs-a', 'logs-b'],
  },
  { name: 'db_password', sensitive: true, type: 'string', detailedType: 'string', value: 'p@ss "quoted" \\ wörd' },
  { name: 'instance_count', sensitive: false, type: 'number', detailedType: 'number', value: 3 },
  { name: 'enabled', sensitive: false, type: 'bool', detailedType: 'bool', value: true },
  { name: 'tags', sensitive: false, type: 'map', detailedType: ['map', 'string'], value: { env: 'prod', team: 'ops' } },
  {
    name: 'endpoint',
    sensitive: true,
    type: 'object',
    detailedType: ['object', { host: 'string', port: 'number', tls: 'bool' }],
    value: { host: 'db.internal', port: 5432, tls: true },
  },
  { name: 'pair', sensitive: false, type: 'tuple', detailedType: ['tuple', ['string', 'number']], value: ['a', 1] },
  { name: 'azs', sensitive: false, type: 'set', detailedType: ['set', 'string'], value: ['eu-west-1a', 'eu-west-1b'] },
];

function indent(json: string, pad: string): string {
  return json.replace(/\n/g, `\n${pad}`);
}

/** Streams a v4 state as text pieces; `summary` is complete once the iteration ends. */
export class V4StateGenerator {
  private readonly rand: () => number;
  private readonly hash = createHash('md5');
  private bytes = 0;
  private readonly entries = new Map<string, ExpectedResource>();
  private readonly modules = new Map<string, Map<string, number>>();
  private readonly providers = new Map<string, Map<string, number>>();
  private billable = 0;
  private objects = 0;
  summary: GeneratedStateSummary | null = null;

  constructor(private readonly opts: V4StateOptions) {
    this.rand = rng(opts.seed ?? 1);
  }

  private int(n: number): number {
    return Math.floor(this.rand() * n);
  }

  private emit(s: string): string {
    this.bytes += Buffer.byteLength(s);
    this.hash.update(s);
    return s;
  }

  private record(module: string, kind: Kind, name: string, count: number): void {
    const type = kind.mode === 'data' ? `data.${kind.type}` : kind.type;
    const key = `${module}|${type}|${name}|${kind.provider}`;
    const e = this.entries.get(key);
    if (e) e.count += count;
    else this.entries.set(key, { name, type, count, module, provider: kind.provider });
    for (const [map, outer] of [
      [this.modules, module],
      [this.providers, kind.provider],
    ] as const) {
      let m = map.get(outer);
      if (!m) map.set(outer, (m = new Map()));
      m.set(type, (m.get(type) ?? 0) + count);
    }
    if (kind.mode === 'managed' && kind.type !== 'null_resource' && kind.type !== 'terraform_data')
      this.billable += count;
  }

  private attributes(kind: Kind, id: string, fill: number): Record<string, unknown> {
    const blocks: unknown[] = [];
    let left = fill;
    while (left > 260) {
      blocks.push({
        cidr_blocks: [`10.${this.int(256)}.${this.int(256)}.0/24`],
        description: 'Allow "internal" traffic\n(generated)',
        from_port: this.int(65536),
        protocol: 'tcp',
        self: false,
        to_port: this.int(65536),
        security_groups: [],
        prefix_list_ids: null,
      });
      left -= 260;
    }
    return {
      id,
      arn: `arn:aws:${kind.type}:eu-west-1:123456789012:${id}`,
      tags: { Name: `${kind.type}-${id}`, env: 'prod', 'owner/team': 'platform', note: 'naïve – “quoted” \u00e9' },
      policy: JSON.stringify({
        Version: '2012-10-17',
        Statement: [{ Effect: 'Allow', Action: ['s3:GetObject'], Resource: '*' }],
      }),
      size: this.rand() * 1000,
      enabled: this.rand() < 0.5,
      timeouts: null,
      ingress: blocks,
      user_data: 'x'.repeat(Math.max(0, left)),
    };
  }

  private instance(
    kind: Kind,
    indexKey: number | string | undefined,
    deposed: string | undefined,
    fill: number,
  ): string {
    const id = `${kind.type.slice(0, 3)}-${this.objects.toString(16).padStart(8, '0')}`;
    const inst: Record<string, unknown> = {};
    if (indexKey !== undefined) inst.index_key = indexKey;
    if (deposed !== undefined) inst.deposed = deposed;
    if (this.int(50) === 0) inst.status = 'tainted';
    inst.schema_version = this.int(3);
    inst.attributes = this.attributes(kind, id, fill);
    inst.sensitive_attributes = kind.type === 'random_password' ? [[{ type: 'get_attr', value: 'result' }]] : [];
    inst.private = 'eyJzY2hlbWFfdmVyc2lvbiI6IjEifQ==';
    if (this.int(3) === 0) inst.dependencies = ['data.aws_ami.base', 'module.network.aws_route.r0'];
    this.objects++;
    return indent(JSON.stringify(inst, null, 2), '        ');
  }

  *chunks(): Generator<string> {
    const o = this.opts;
    const total = o.resourceInstances;
    const target = o.targetBytes ?? total * 1100;
    const serial = o.serial ?? 42;
    const lineage = o.lineage ?? '8b1c7c7a-2f5e-4c8e-9d0e-6f1a2b3c4d5e';
    const terraformVersion = o.terraformVersion ?? '1.9.5';
    const outputs = Object.fromEntries(
      OUTPUTS.map((x) => [
        x.name,
        {
          value: x.value,
          type: x.detailedType,
          ...(x.sensitive ? { sensitive: true } : {}),
        },
      ]),
    );
    let buf = this.emit(
      `{\n  "version": 4,\n  "terraform_version": ${JSON.stringify(terraformVersion)},\n  "serial": ${serial},\n` +
        `  "lineage": ${JSON.stringify(lineage)},\n  "outputs": ` +
        `${indent(JSON.stringify(outputs, null, 2), '  ')},\n  "resources": [`,
    );
    let written = 0;
    let first = true;
    let seq = 0;
    let baseAvg = 700;
    while (written < total) {
      const [moduleStr, addresses] = MODULE_GROUPS[seq % MODULE_GROUPS.length] as [string, (string | undefined)[]];
      const kind = KINDS[this.int(KINDS.length)] as Kind;
      const name = `r${Math.floor(seq / MODULE_GROUPS.length)}`;
      seq++;
      for (const address of addresses) {
        if (written >= total) break;
        const shape = this.int(3); // 0 single, 1 count, 2 for_each
        const n = shape === 0 ? 1 : Math.min(total - written, 1 + this.int(6));
        const parts: string[] = [];
        let partsLen = 0;
        for (let k = 0; k < n; k++) {
          const key = shape === 0 ? undefined : shape === 1 ? k : `key-${k}.${kind.type}`;
          const fill = Math.max(0, Math.floor((target - this.bytes - partsLen) / (total - written - k)) - baseAvg);
          const text = this.instance(kind, key, undefined, fill);
          baseAvg = baseAvg * 0.95 + Math.max(0, text.length - fill) * 0.05;
          parts.push(text);
          partsLen += text.length;
          if (kind.mode === 'managed' && this.int(40) === 0)
            parts.push(this.instance(kind, key, `d${this.int(1e8).toString(16)}`, 0));
        }
        written += n;
        this.record(moduleStr, kind, name, n);
        const head = {
          ...(address ? { module: address } : {}),
          mode: kind.mode,
          type: kind.type,
          name,
          provider: kind.provider,
        };
        const headJson = JSON.stringify(head, null, 2).slice(0, -2);
        buf += this.emit(
          `${first ? '' : ','}\n    ${indent(headJson, '    ')},\n      "instances": [\n        ` +
            `${parts.join(',\n        ')}\n      ]\n    }`,
        );
        first = false;
      }
      if (buf.length > 65536) {
        yield buf;
        buf = '';
      }
    }
    buf += this.emit('\n  ],\n  "check_results": null\n}\n');
    yield buf;
    const toRecord = (m: Map<string, Map<string, number>>) =>
      Object.fromEntries([...m].map(([k, v]) => [k, Object.fromEntries(v)]));
    this.summary = {
      bytes: this.bytes,
      md5: this.hash.digest('hex'),
      stateVersion: 4,
      serial,
      lineage,
      terraformVersion,
      instanceObjects: this.objects,
      resources: [...this.entries.values()],
      modules: toRecord(this.modules),
      providers: toRecord(this.providers),
      billableRumCount: this.billable,
      outputs: OUTPUTS,
    };
  }
}

/** Chunks of a generated v4 state as Buffers, for feeding an extractor directly. */
export async function* v4StateBuffers(gen: V4StateGenerator): AsyncGenerator<Buffer> {
  for (const s of gen.chunks()) yield Buffer.from(s);
}

/** Writes a generated v4 state to `path` as a stream; the file is never held in memory. */
export async function writeV4State(path: string, opts: V4StateOptions): Promise<GeneratedStateSummary> {
  const gen = new V4StateGenerator(opts);
  const out = createWriteStream(path);
  for (const s of gen.chunks()) {
    if (!out.write(s)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
  return gen.summary as GeneratedStateSummary;
}

/** A small v3 (Terraform 0.11) state with nested modules, count, data sources and module outputs. */
export function generateV3State(opts: { seed?: number; instancesPerResource?: number } = {}): {
  text: string;
  summary: GeneratedStateSummary;
} {
  const rand = rng(opts.seed ?? 3);
  const per = opts.instancesPerResource ?? 3;
  const paths = [['root'], ['root', 'network'], ['root', 'network', 'sg']];
  const resources: ExpectedResource[] = [];
  const modules: Record<string, Record<string, number>> = {};
  const providers: Record<string, Record<string, number>> = {};
  let billable = 0;
  let objects = 0;
  const doc = {
    version: 3,
    terraform_version: '0.11.14',
    serial: 9,
    lineage: '0f6a3d9e-1b2c-4d5e-8f90-a1b2c3d4e5f6',
    modules: paths.map((path) => {
      const mod = path.join('.');
      const res: Record<string, unknown> = {};
      const add = (type: string, name: string, count: number, provider: string, data: boolean) => {
        for (let i = 0; i < count; i++) {
          const key = `${data ? 'data.' : ''}${type}.${name}${count > 1 ? `.${i}` : ''}`;
          const id = `${type}-${Math.floor(rand() * 1e9)}`;
          res[key] = {
            type,
            depends_on: [],
            provider,
            primary: { id, attributes: { id, 'tags.%': '1', 'tags.Name': `${name} "${i}"` }, meta: {}, tainted: false },
            deposed: [],
          };
          objects++;
        }
        const t = data ? `data.${type}` : type;
        resources.push({ name, type: t, count, module: mod, provider });
        (modules[mod] ??= {})[t] = (modules[mod]?.[t] ?? 0) + count;
        (providers[provider] ??= {})[t] = (providers[provider]?.[t] ?? 0) + count;
        if (!data && type !== 'null_resource') billable += count;
      };
      add('aws_ami', 'base', 1, 'provider.aws', true);
      add('aws_instance', 'web', per, 'provider.aws', false);
      add('aws_eip', 'ip', 1, 'provider.aws.west', false);
      add('null_resource', 'hook', 2, 'provider.null', false);
      return {
        path,
        outputs: {
          [`${path.at(-1)}_ip`]: { sensitive: false, type: 'string', value: '10.1.2.3' },
          ...(mod === 'root'
            ? {
                ids: { sensitive: false, type: 'list', value: ['i-1', 'i-2'] },
                secret: { sensitive: true, type: 'string', value: 'hunter2' },
                labels: { sensitive: false, type: 'map', value: { a: 'b' } },
              }
            : {}),
        },
        resources: res,
        depends_on: [],
      };
    }),
  };
  const text = `${JSON.stringify(doc, null, 4)}\n`;
  return {
    text,
    summary: {
      bytes: Buffer.byteLength(text),
      md5: createHash('md5').update(text).digest('hex'),
      stateVersion: 3,
      serial: doc.serial,
      lineage: doc.lineage,
      terraformVersion: doc.terraform_version,
      instanceObjects: objects,
      resources,
      modules,
      providers,
      billableRumCount: billable,
      outputs: [
        { name: 'root_ip', sensitive: false, type: 'string', value: '10.1.2.3', detailedType: null },
        { name: 'ids', sensitive: false, type: 'list', value: ['i-1', 'i-2'], detailedType: null },
        { name: 'secret', sensitive: true, type: 'string', value: 'hunter2', detailedType: null },
        { name: 'labels', sensitive: false, type: 'map', value: { a: 'b' }, detailedType: null },
      ],
    },
  };
}
