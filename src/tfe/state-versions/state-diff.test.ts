import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { diffDigests, digestState, instanceAddress } from './state-diff.js';
import { diffInWorker } from './state-diff-worker.js';
import type { StateDigest } from './state-diff.js';
import { V4StateGenerator, v4StateBuffers } from '../../../bench/generators/tfstate.js';

const FIXTURES = new URL('../../../../src/tfe/state-versions/fixtures/', import.meta.url);
const fixture = (name: string): Buffer => readFileSync(new URL(name, FIXTURES));

async function* chunks(bytes: Uint8Array, size: number): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

async function digest(doc: unknown, chunkSize = 7): Promise<StateDigest> {
  const r = await digestState(chunks(Buffer.from(typeof doc === 'string' ? doc : JSON.stringify(doc)), chunkSize));
  assert.ok(r.ok, r.ok ? '' : r.error);
  return r.digest;
}

const P = 'provider["registry.terraform.io/hashicorp/aws"]';
function v4(resources: unknown[], outputs: Record<string, unknown> = {}) {
  return { version: 4, terraform_version: '1.9.5', serial: 1, lineage: 'l', outputs, resources };
}
function res(type: string, name: string, instances: unknown[], extra: Record<string, unknown> = {}) {
  return { mode: 'managed', type, name, provider: P, instances, ...extra };
}
const inst = (attributes: Record<string, unknown>, more: Record<string, unknown> = {}) => ({
  schema_version: 0,
  attributes,
  sensitive_attributes: [],
  ...more,
});

describe('instanceAddress', () => {
  it('writes Terraform resource instance addresses', () => {
    assert.equal(instanceAddress(undefined, 'managed', 'aws_instance', 'web', undefined), 'aws_instance.web');
    assert.equal(instanceAddress(undefined, 'managed', 'aws_instance', 'web', 2), 'aws_instance.web[2]');
    assert.equal(
      instanceAddress('module.net["eu"]', 'data', 'aws_ami', 'base', 'a"b'),
      'module.net["eu"].data.aws_ami.base["a\\"b"]',
    );
  });
});

describe('state diff on v4 states', () => {
  it('finds added, removed and changed instances with the changed attribute names', async () => {
    const before = await digest(
      v4([
        res('aws_instance', 'web', [
          inst({ id: 'i-1', ami: 'ami-1', tags: { a: '1' } }, { index_key: 0 }),
          inst({ id: 'i-2', ami: 'ami-1' }, { index_key: 1 }),
        ]),
        res('aws_s3_bucket', 'logs', [inst({ id: 'b', acl: 'private' })]),
        res('random_password', 'pw', [inst({ id: 'none', result: 'old-secret' })], { module: 'module.db' }),
      ]),
    );
    const after = await digest(
      v4([
        res('aws_instance', 'web', [
          inst({ id: 'i-1', ami: 'ami-2', tags: { a: '2' } }, { index_key: 0 }),
          inst({ id: 'i-3', ami: 'ami-1', extra: 1 }, { index_key: 2 }),
        ]),
        res('random_password', 'pw', [inst({ id: 'none', result: 'new-secret' })], { module: 'module.db' }),
        { ...res('aws_ami', 'base', [inst({ id: 'ami-2' })]), mode: 'data' },
      ]),
    );
    const d = diffDigests(before, after);
    assert.deepEqual(
      d.resourcesAdded.map((r) => r.address),
      ['aws_instance.web[2]', 'data.aws_ami.base'],
    );
    assert.deepEqual(d.resourcesAdded[1], {
      address: 'data.aws_ami.base',
      module: 'root',
      mode: 'data',
      type: 'aws_ami',
      name: 'base',
    });
    assert.deepEqual(
      d.resourcesRemoved.map((r) => r.address),
      ['aws_instance.web[1]', 'aws_s3_bucket.logs'],
    );
    assert.deepEqual(
      d.resourcesChanged.map((r) => [r.address, r.module, r.changedAttributes]),
      [
        ['aws_instance.web[0]', 'root', ['ami', 'tags']],
        ['module.db.random_password.pw', 'root.db', ['result']],
      ],
    );
    // Values never appear in a diff, sensitive or not.
    assert.doesNotMatch(JSON.stringify(d), /secret|ami-1|ami-2"|i-1/);
  });

  it('reports attributes that appear or disappear, and ignores deposed objects', async () => {
    const before = await digest(
      v4([res('x_thing', 'a', [inst({ id: '1', old: true }), inst({ id: 'dep' }, { deposed: 'abcd1234' })])]),
    );
    const after = await digest(v4([res('x_thing', 'a', [inst({ id: '1', fresh: true })])]));
    const d = diffDigests(before, after);
    assert.deepEqual(
      d.resourcesChanged.map((r) => r.changedAttributes),
      [['fresh', 'old']],
    );
    assert.deepEqual(d.resourcesAdded, []);
    assert.deepEqual(d.resourcesRemoved, []);
  });

  it('tells values apart by type and structure, nested or not', async () => {
    const attrs = (n: unknown, e: unknown, deep: unknown) =>
      v4([res('x_thing', 'a', [inst({ id: '1', n, e, deep, same: { k: [1, { z: null }] } })])]);
    const before = await digest(attrs('1', [], { a: { b: [1, 2] } }));
    const after = await digest(attrs(1, {}, { a: { b: [1, 3] } }));
    assert.deepEqual(
      diffDigests(before, after).resourcesChanged.map((r) => r.changedAttributes),
      [['deep', 'e', 'n']],
    );
    assert.deepEqual(diffDigests(before, await digest(attrs('1', [], { a: { b: [1, 2] } }), 1)).resourcesChanged, []);
  });

  it('keys for_each instances by their string keys, escaped', async () => {
    const one = await digest(
      v4([
        res('aws_s3_bucket', 'b', [inst({ id: 'a' }, { index_key: 'a.b' }), inst({ id: 'c' }, { index_key: 'c' })], {
          module: 'module.app["x.y"]',
        }),
      ]),
    );
    assert.deepEqual(
      [...one.instances.keys()],
      ['module.app["x.y"].aws_s3_bucket.b["a.b"]', 'module.app["x.y"].aws_s3_bucket.b["c"]'],
    );
    assert.equal(one.instances.get('module.app["x.y"].aws_s3_bucket.b["c"]')?.module, 'root.app');
  });

  it('finds changed outputs by value, type or sensitivity without showing values', async () => {
    const before = await digest(
      v4([], {
        same: { value: 'x', type: 'string' },
        pw: { value: 'hunter2', type: 'string', sensitive: true },
        typed: { value: ['a'], type: ['list', 'string'] },
        flag: { value: 'v', type: 'string' },
        gone: { value: 1, type: 'number' },
      }),
    );
    const after = await digest(
      v4([], {
        same: { value: 'x', type: 'string' },
        pw: { value: 'hunter3', type: 'string', sensitive: true },
        typed: { value: ['a'], type: ['tuple', ['string']] },
        flag: { value: 'v', type: 'string', sensitive: true },
        fresh: { value: true, type: 'bool' },
      }),
    );
    const d = diffDigests(before, after);
    assert.deepEqual(d.outputsAdded, [{ name: 'fresh', sensitive: false }]);
    assert.deepEqual(d.outputsRemoved, [{ name: 'gone', sensitive: false }]);
    assert.deepEqual(d.outputsChanged, [
      { name: 'flag', sensitive: true },
      { name: 'pw', sensitive: true },
      { name: 'typed', sensitive: false },
    ]);
    assert.doesNotMatch(JSON.stringify(d), /hunter/);
  });

  it('is empty for identical states, whatever the chunking', async () => {
    const bytes = fixture('v4-modules.tfstate');
    const a = await digest(bytes.toString('utf8'), 1);
    const b = await digest(bytes.toString('utf8'), 4096);
    assert.ok(a.instances.size > 3);
    assert.equal(a.outputs.size, 8);
    assert.deepEqual(diffDigests(a, b), {
      resourcesAdded: [],
      resourcesRemoved: [],
      resourcesChanged: [],
      outputsAdded: [],
      outputsRemoved: [],
      outputsChanged: [],
    });
  });

  it('compares an empty state with a full one', async () => {
    const empty = await digest(fixture('v4-empty.tfstate').toString('utf8'));
    const full = await digest(fixture('worked-example.tfstate').toString('utf8'));
    const d = diffDigests(empty, full);
    assert.deepEqual(
      d.resourcesAdded.map((r) => r.address),
      [
        'aws_s3_bucket.logs["a"]',
        'aws_s3_bucket.logs["b"]',
        'data.aws_caller_identity.me',
        'module.db.random_password.pw',
        'terraform_data.marker',
      ],
    );
    assert.deepEqual(d.outputsAdded, [
      { name: 'bucket_names', sensitive: false },
      { name: 'db_password', sensitive: true },
    ]);
    assert.deepEqual(diffDigests(full, empty).resourcesRemoved.length, 5);
  });

  it('digests a generated multi-megabyte state', async () => {
    const gen = new V4StateGenerator({ resourceInstances: 2000, targetBytes: 2_000_000, seed: 7 });
    const r = await digestState(v4StateBuffers(gen));
    assert.ok(r.ok);
    assert.equal(r.digest.instances.size, 2000);
  });
});

describe('state diff on v3 states', () => {
  it('addresses v3 resources by module path and index, with flat attributes', async () => {
    const text = fixture('v3-nested.tfstate').toString('utf8');
    const before = await digest(text);
    assert.ok(before.instances.has('aws_instance.web[0]') || before.instances.has('aws_instance.web'));
    assert.ok([...before.instances.keys()].some((k) => k.startsWith('module.network.module.sg.')));
    assert.equal(before.outputs.size, 4, 'only root module outputs');
    const doc = JSON.parse(text) as {
      modules: Array<{
        path: string[];
        resources: Record<string, { primary: { attributes: Record<string, string> } }>;
      }>;
    };
    const root = doc.modules.find((m) => m.path.length === 1);
    const [key, r] = Object.entries(root?.resources ?? {}).find(([k]) => !k.startsWith('data.')) ?? [];
    assert.ok(key && r);
    r.primary.attributes['tags.%'] = '7';
    const after = await digest(doc);
    const d = diffDigests(before, after);
    assert.equal(d.resourcesChanged.length, 1);
    assert.deepEqual(d.resourcesChanged[0]?.changedAttributes, ['tags.%']);
  });
});

describe('state diff on unreadable content', () => {
  for (const [label, text, pattern] of [
    ['truncated', '{"version":4,"resources":[', /truncated/],
    ['not JSON', '{"version":4,,}', /not valid JSON/],
    ['an array', '[]', /object/],
    ['format version 2', '{"version":2}', /unsupported/],
    ['an encrypted envelope', '{"meta":{},"encrypted_data":"abc","encryption_version":"v0"}', /unsupported/],
  ] as const) {
    it(`fails cleanly on ${label}`, async () => {
      const r = await digestState(chunks(Buffer.from(text), 3));
      assert.equal(r.ok, false);
      assert.match(r.ok ? '' : r.error, pattern);
    });
  }
});

describe('diffInWorker', () => {
  it('gives the same diff as the in-process comparison, and names the unreadable side', async () => {
    const a = fixture('v4-empty.tfstate');
    const b = fixture('worked-example.tfstate');
    const r = await diffInWorker(chunks(a, 5), async () => chunks(b, 5));
    assert.ok(r.ok);
    assert.deepEqual(r.diff, diffDigests(await digest(a.toString('utf8')), await digest(b.toString('utf8'))));
    const broken = Buffer.from('{"version":4,"resources":[');
    assert.deepEqual(await diffInWorker(chunks(broken, 4), async () => chunks(b, 5)), {
      ok: false,
      which: 'against',
      error: 'state is truncated: input ended inside a container nested 2 deep at byte 26',
    });
    const late = await diffInWorker(chunks(b, 64), async () => chunks(broken, 4));
    assert.equal(late.ok, false);
    assert.equal(late.ok ? '' : late.which, 'version');
  });

  it('rejects when aborted', async () => {
    const controller = new AbortController();
    controller.abort(new Error('client went away'));
    await assert.rejects(
      diffInWorker(chunks(fixture('v4-empty.tfstate'), 5), async () => chunks(fixture('v4-empty.tfstate'), 5), {
        signal: controller.signal,
      }),
      /client went away/,
    );
  });
});
