import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { extractState, extractStateFromBytes, moduleString } from './state-extract.js';
import type { ExtractResult, StateExtract } from './state-extract.js';
import { V4StateGenerator, generateV3State, v4StateBuffers } from '../../../bench/generators/tfstate.js';

const FIXTURES = new URL('../../../../src/tfe/state-versions/fixtures/', import.meta.url);
const fixture = (name: string): Buffer => readFileSync(new URL(name, FIXTURES));

async function* chunks(bytes: Uint8Array, size: number): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

function value(r: ExtractResult): StateExtract {
  assert.ok(r.ok, r.ok ? '' : r.error);
  return r.value;
}

function failure(r: ExtractResult): string {
  assert.equal(r.ok, false, 'expected the extraction to fail');
  return r.ok ? '' : r.error;
}

describe('extractState on fixtures', () => {
  for (const name of ['worked-example', 'v4-modules', 'v4-empty', 'v3-nested']) {
    it(`${name} gives the expected attributes at any chunk size`, async () => {
      const bytes = fixture(`${name}.tfstate`);
      const expected = { ...JSON.parse(fixture(`${name}.expected.json`).toString('utf8')), size: bytes.length };
      assert.deepEqual(extractStateFromBytes(bytes), { ok: true, value: expected });
      for (const size of [1, 3, 64, 4096])
        assert.deepEqual(await extractState(chunks(bytes, size)), { ok: true, value: expected });
    });
  }

  it('gives the same result for every two-chunk split of the worked example', async () => {
    const bytes = fixture('worked-example.tfstate');
    const expected = extractStateFromBytes(bytes);
    for (let cut = 1; cut < bytes.length; cut++) {
      assert.deepEqual(await extractState(twoChunks(bytes, cut)), expected, `split at ${cut}`);
    }
  });
});

async function* twoChunks(bytes: Uint8Array, cut: number): AsyncGenerator<Uint8Array> {
  yield bytes.subarray(0, cut);
  yield bytes.subarray(cut);
}

describe('extractState on generated states', () => {
  for (const [instances, targetBytes] of [
    [1, 2000],
    [300, 300_000],
    [3000, 3_000_000],
  ] as const) {
    it(`v4 with ${instances} instances and ~${targetBytes} bytes`, async () => {
      const gen = new V4StateGenerator({ resourceInstances: instances, targetBytes, seed: instances });
      const v = value(await extractState(v4StateBuffers(gen)));
      const s = gen.summary;
      assert.ok(s);
      assert.equal(v.size, s.bytes);
      assert.equal(v.stateVersion, 4);
      assert.equal(v.serial, s.serial);
      assert.equal(v.lineage, s.lineage);
      assert.equal(v.terraformVersion, s.terraformVersion);
      assert.deepEqual(v.resources, s.resources);
      assert.deepEqual(v.modules, s.modules);
      assert.deepEqual(v.providers, s.providers);
      assert.equal(v.billableRumCount, s.billableRumCount);
      assert.deepEqual(v.outputs, s.outputs);
      assert.equal(
        v.resources.reduce((n, r) => n + r.count, 0),
        instances,
      );
    });
  }

  it('v3 with nested modules', () => {
    const { text, summary } = generateV3State({ instancesPerResource: 4 });
    const v = value(extractStateFromBytes(Buffer.from(text)));
    assert.equal(v.stateVersion, 3);
    assert.equal(v.terraformVersion, '0.11.14');
    assert.deepEqual(v.resources, summary.resources);
    assert.deepEqual(v.modules, summary.modules);
    assert.deepEqual(v.providers, summary.providers);
    assert.equal(v.billableRumCount, summary.billableRumCount);
    assert.deepEqual(v.outputs, summary.outputs);
  });
});

const WORKED = fixture('worked-example.tfstate').toString('utf8');
const edit = (from: string, to: string): string => {
  assert.ok(WORKED.includes(from), from);
  return WORKED.replace(from, to);
};

describe('extractState on bad input', () => {
  const CASES: [string, string, RegExp][] = [
    ['plain text', 'hello', /^state is not valid JSON: unexpected 'h', expected a value, at byte 0$/],
    [
      'broken JSON inside skipped attributes',
      edit('"account_id":"123456789012"', '"account_id":123456789012x"'),
      /^state is not valid JSON: unexpected 'x'/,
    ],
    ['bad escape inside skipped attributes', edit('"acme-logs-a","id"', '"acme\\q","id"'), /invalid escape sequence/],
    ['trailing garbage', `${WORKED}}`, /^state is not valid JSON: unexpected '}', expected the end of the document/],
    ['truncated in the middle', WORKED.slice(0, 800), /^state is truncated: input ended inside/],
    [
      'truncated in a string',
      WORKED.slice(0, WORKED.indexOf('hunter2') + 3),
      /^state is truncated: input ended inside a string/,
    ],
    ['truncated by one byte', WORKED.trimEnd().slice(0, -1), /^state is truncated/],
    ['empty', '', /^state is empty$/],
    ['only whitespace', ' \n ', /^state is empty$/],
    ['an array', '[]', /^state must be a JSON object, got an array$/],
    ['a string', '"x"', /^state must be a JSON object, got string$/],
    ['null', 'null', /^state must be a JSON object, got null$/],
    [
      'version 2',
      edit('"version":4', '"version":2'),
      /^unsupported state format version 2: only versions 3 and 4 are supported$/,
    ],
    ['version 5', edit('"version":4', '"version":5'), /^unsupported state format version 5/],
    [
      'version as string',
      edit('"version":4', '"version":"4"'),
      /^state "version" must be an integer, got the string "4"$/,
    ],
    ['no version', edit('"version":4,', ''), /^state has no "version" field$/],
    ['no serial', edit('"serial":7,', ''), /^state has no "serial" field$/],
    [
      'negative serial',
      edit('"serial":7', '"serial":-1'),
      /^state "serial" must be a non-negative integer, got number -1$/,
    ],
    ['fractional serial', edit('"serial":7', '"serial":7.5'), /non-negative integer, got number 7.5/],
    ['no lineage', edit('"lineage":"3f2c9a1e-58b4-4c1d-9e77-0a1b2c3d4e5f",', ''), /^state has no "lineage" field$/],
    [
      'numeric lineage',
      edit('"lineage":"3f2c9a1e-58b4-4c1d-9e77-0a1b2c3d4e5f"', '"lineage":12'),
      /^state "lineage" must be a string, got number 12$/,
    ],
    [
      'resources as object',
      edit('"resources":[', '"resources":{"x":[')
        .replace('"check_results"', '"y":1},"check_results"')
        .replace(']}],\n "check_results"', ']}]},\n "check_results"'),
      /"resources" must be an array/,
    ],
    [
      'instance that is a number',
      edit(
        '"instances":[{"schema_version":0,"attributes":{"account_id"',
        '"instances":[1,{"schema_version":0,"attributes":{"account_id"',
      ),
      /^an instance must be an object$/,
    ],
    ['resource without type', edit('"type":"aws_caller_identity",', ''), /^resource "type" must be a string$/],
    ['bad mode', edit('"mode":"data"', '"mode":"other"'), /^resource "mode" must be "managed" or "data", got "other"$/],
    [
      'output that is not an object',
      edit('"db_password":{"value":"hunter2-but-longer","type":"string","sensitive":true}', '"db_password":3'),
      /^output "db_password" must be an object, got number 3$/,
    ],
    ['nesting bomb', `{"version":4,"x":${'['.repeat(100_000)}`, /nesting deeper than 512 levels/],
  ];
  for (const [name, text, message] of CASES) {
    it(`reports ${name}`, async () => {
      assert.match(failure(extractStateFromBytes(Buffer.from(text))), message);
      assert.match(failure(await extractState(chunks(Buffer.from(text), 5))), message);
    });
  }

  it('fails fast on a whitespace bomb without reading it all', async () => {
    let pulled = 0;
    async function* bomb(): AsyncGenerator<Buffer> {
      const mb = Buffer.alloc(1024 * 1024, 0x20);
      for (let i = 0; i < 1024; i++) {
        pulled++;
        yield mb;
      }
    }
    assert.match(failure(await extractState(bomb())), /more than 1048576 consecutive whitespace bytes/);
    assert.ok(pulled <= 2, `read ${pulled} MB`);
    async function* inside(): AsyncGenerator<Buffer> {
      yield Buffer.from('{"version":4,"serial":');
      yield* bomb();
    }
    pulled = 0;
    assert.match(failure(await extractState(inside())), /consecutive whitespace/);
    assert.ok(pulled <= 2);
  });

  it('stops reading at an unsupported version', async () => {
    let pulled = 0;
    async function* big(): AsyncGenerator<Buffer> {
      yield Buffer.from('{"version":2,"serial":1,"modules":[');
      for (let i = 0; i < 1000; i++) {
        pulled++;
        yield Buffer.from('{"path":["root"]},');
      }
    }
    assert.match(failure(await extractState(big())), /unsupported state format version 2/);
    assert.equal(pulled, 0);
  });

  it('rejects when aborted', async () => {
    const ac = new AbortController();
    async function* slow(): AsyncGenerator<Buffer> {
      yield Buffer.from('{"version":4,');
      ac.abort();
      yield Buffer.from('"serial":1}');
    }
    await assert.rejects(extractState(slow(), { signal: ac.signal }), { name: 'AbortError' });
  });

  it('rejects when the source fails', async () => {
    async function* failing(): AsyncGenerator<Buffer> {
      yield Buffer.from('{"version":4,');
      throw new Error('disk on fire');
    }
    await assert.rejects(extractState(failing()), /disk on fire/);
  });
});

describe('extracted outputs', () => {
  it('keeps hostile keys in output values as data', () => {
    const v = value(
      extractStateFromBytes(
        Buffer.from(
          edit(
            '"value":["acme-logs-a","acme-logs-b"],"type":["list","string"]',
            '"value":{"__proto__":{"polluted":true}},"type":"dynamic"',
          ),
        ),
      ),
    );
    const out = v.outputs[0];
    assert.ok(out);
    assert.equal(out.type, 'object');
    assert.deepEqual(Object.keys(out.value as object), ['__proto__']);
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });

  it('ignores outputs of nested modules in v3 states', () => {
    const v = value(extractStateFromBytes(fixture('v3-nested.tfstate')));
    assert.deepEqual(
      v.outputs.map((o) => o.name),
      ['ip', 'instance_ids', 'admin_password', 'labels'],
    );
  });
});

describe('moduleString', () => {
  const CASES: [string | undefined, string][] = [
    [undefined, 'root'],
    ['', 'root'],
    ['module.vpc', 'root.vpc'],
    ['module.app_sg.module.sg', 'root.app_sg.sg'],
    ['module.app[0]', 'root.app'],
    ['module.app["eu"].module.sg[12]', 'root.app.sg'],
    ['module.app["a.b]\\"c"].module.x', 'root.app.x'],
    ['module.a-b.module.c_d', 'root.a-b.c_d'],
    ['weird', 'root.weird'],
    ['module.x[0', 'root.module.x[0'],
  ];
  for (const [input, expected] of CASES) {
    it(`${String(input)} → ${expected}`, () => assert.equal(moduleString(input), expected));
  }
});
