import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import {
  StateInspector,
  checkJsonStream,
  coarseOutputType,
  inspectStateFile,
  inspectStateStream,
  parseJsonStateOutputs,
  parseStateFile,
  readStateHeader,
  validateStateHeader,
} from './state-file.js';
import type { StateHeaderResult } from './state-file.js';

const FIXTURES = new URL('../../../../src/tfe/state-versions/fixtures/', import.meta.url);
const fixture = (name: string): Buffer => readFileSync(new URL(name, FIXTURES));

async function* chunks(bytes: Uint8Array, size: number): AsyncGenerator<Uint8Array> {
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

const doc = (fields: Record<string, unknown>): Buffer => Buffer.from(JSON.stringify({ ...fields, resources: [] }));
const BASE = { version: 4, terraform_version: '1.9.5', serial: 3, lineage: 'abc' };

describe('parseStateFile and readStateHeader', () => {
  const GOOD: [string, Buffer, StateHeaderResult][] = [
    [
      'worked example',
      fixture('worked-example.tfstate'),
      {
        ok: true,
        header: { version: 4, serial: 7, lineage: '3f2c9a1e-58b4-4c1d-9e77-0a1b2c3d4e5f', terraformVersion: '1.9.5' },
      },
    ],
    [
      'v3 state',
      fixture('v3-nested.tfstate'),
      {
        ok: true,
        header: {
          version: 3,
          serial: 12,
          lineage: '9d2f4c1a-6b3e-4f70-8a21-5c9e0d7b3f11',
          terraformVersion: '0.11.14',
        },
      },
    ],
    [
      'no terraform_version',
      doc({ version: 4, serial: 0, lineage: '' }),
      { ok: true, header: { version: 4, serial: 0, lineage: '', terraformVersion: null } },
    ],
    [
      'fields in another order',
      doc({ lineage: 'l', serial: 9, terraform_version: '1.0.0', version: 4 }),
      { ok: true, header: { version: 4, serial: 9, lineage: 'l', terraformVersion: '1.0.0' } },
    ],
  ];
  const BAD: [string, Buffer, string][] = [
    ['not JSON', Buffer.from('version = 4'), "state is not valid JSON: unexpected 'v', expected a value, at byte 0"],
    [
      'truncated',
      fixture('worked-example.tfstate').subarray(0, 100),
      'state is truncated: input ended inside a container nested 1 deep at byte 100',
    ],
    ['empty', Buffer.alloc(0), 'state is empty'],
    ['an array', Buffer.from('[{"version":4}]'), 'state must be a JSON object, got an array'],
    ['a number', Buffer.from('4'), 'state must be a JSON object, got number 4'],
    ['missing version', doc({ ...BASE, version: undefined }), 'state has no "version" field'],
    ['version as string', doc({ ...BASE, version: '4' }), 'state "version" must be an integer, got the string "4"'],
    [
      'version 1',
      doc({ ...BASE, version: 1 }),
      'unsupported state format version 1: only versions 3 and 4 are supported',
    ],
    [
      'version 5',
      doc({ ...BASE, version: 5 }),
      'unsupported state format version 5: only versions 3 and 4 are supported',
    ],
    ['missing serial', doc({ ...BASE, serial: undefined }), 'state has no "serial" field'],
    [
      'serial as string',
      doc({ ...BASE, serial: '3' }),
      'state "serial" must be a non-negative integer, got the string "3"',
    ],
    ['negative serial', doc({ ...BASE, serial: -2 }), 'state "serial" must be a non-negative integer, got number -2'],
    [
      'huge serial',
      Buffer.from('{"version":4,"serial":1e300,"lineage":"x"}'),
      'state "serial" must be a non-negative integer, got number 1e+300',
    ],
    ['missing lineage', doc({ ...BASE, lineage: undefined }), 'state has no "lineage" field'],
    ['lineage as object', doc({ ...BASE, lineage: { a: 1 } }), 'state "lineage" must be a string, got an object'],
    [
      'terraform_version as number',
      doc({ ...BASE, terraform_version: 1.3 }),
      'state "terraform_version" must be a string, got number 1.3',
    ],
  ];

  for (const [name, bytes, expected] of GOOD) {
    it(`accepts ${name}`, async () => {
      assert.deepEqual(parseStateFile(bytes), expected);
      assert.deepEqual(await readStateHeader(chunks(bytes, 7)), expected);
      assert.deepEqual(await readStateHeader(chunks(bytes, 7), { stopEarly: false }), expected);
    });
  }
  for (const [name, bytes, error] of BAD) {
    it(`rejects ${name}`, async () => {
      assert.deepEqual(parseStateFile(bytes), { ok: false, error });
      assert.deepEqual(await readStateHeader(chunks(bytes, 7), { stopEarly: false }), { ok: false, error });
    });
  }

  it('validates the whole document when parsing inline state', () => {
    const broken = Buffer.from(
      fixture('worked-example.tfstate').toString('utf8').replace('"bucket":"acme-logs-b"', '"bucket":acme'),
    );
    assert.match((parseStateFile(broken) as { error: string }).error, /^state is not valid JSON: unexpected 'a'/);
  });

  it('stops reading once the four fields were seen', async () => {
    let pulled = 0;
    async function* big(): AsyncGenerator<Buffer> {
      yield Buffer.from('{"version":4,"terraform_version":"1.9.5","serial":8,"lineage":"x","resources":[');
      for (let i = 0; i < 1_000_000; i++) {
        pulled++;
        yield Buffer.from('{"mode":"managed"},');
      }
    }
    assert.deepEqual(await readStateHeader(big()), {
      ok: true,
      header: { version: 4, serial: 8, lineage: 'x', terraformVersion: '1.9.5' },
    });
    assert.equal(pulled, 0);
  });

  it('reads to the end when a field is missing', async () => {
    const bytes = Buffer.from('{"version":4,"serial":8,"lineage":"x","resources":[1,2,3]}');
    assert.deepEqual(await readStateHeader(chunks(bytes, 4)), {
      ok: true,
      header: { version: 4, serial: 8, lineage: 'x', terraformVersion: null },
    });
    assert.deepEqual(await readStateHeader(chunks(bytes.subarray(0, 50), 4)), {
      ok: false,
      error: 'state is truncated: input ended inside a container nested 1 deep at byte 50',
    });
  });

  it('fails fast on whitespace bombs', async () => {
    let pulled = 0;
    async function* bomb(): AsyncGenerator<Buffer> {
      for (let i = 0; i < 1024; i++) {
        pulled++;
        yield Buffer.alloc(1024 * 1024, 0x0a);
      }
    }
    const r = await readStateHeader(bomb());
    assert.deepEqual(r, {
      ok: false,
      error: 'state is not valid JSON: more than 1048576 consecutive whitespace bytes at byte 1048576',
    });
    assert.ok(pulled <= 2);
  });
});

describe('validateStateHeader', () => {
  it('reports the first problem', () => {
    assert.deepEqual(validateStateHeader({}), { ok: false, error: 'state has no "version" field' });
    assert.deepEqual(validateStateHeader({ version: 3, serial: 1, lineage: 'l', terraform_version: null }), {
      ok: true,
      header: { version: 3, serial: 1, lineage: 'l', terraformVersion: null },
    });
  });
});

describe('coarseOutputType', () => {
  const CASES: [unknown, unknown, string][] = [
    ['string', 'x', 'string'],
    ['number', 1, 'number'],
    ['bool', true, 'bool'],
    [['list', 'string'], [], 'list'],
    [['map', 'number'], {}, 'map'],
    [['set', 'string'], [], 'set'],
    [['object', { a: 'string' }], { a: 'x' }, 'object'],
    [['tuple', ['string']], ['x'], 'tuple'],
    ['dynamic', 'x', 'string'],
    ['dynamic', [1], 'tuple'],
    ['dynamic', { a: 1 }, 'object'],
    ['dynamic', null, 'dynamic'],
    [undefined, false, 'bool'],
    [undefined, 2, 'number'],
  ];
  for (const [detailed, v, expected] of CASES) {
    it(`${JSON.stringify(detailed)} with ${JSON.stringify(v)} → ${expected}`, () =>
      assert.equal(coarseOutputType(detailed, v), expected));
  }
});

describe('parseJsonStateOutputs', () => {
  it('parses the outputs of the worked example', () => {
    const json =
      '{"bucket_names":{"sensitive":false,"value":["acme-logs-a","acme-logs-b"],"type":["list","string"]},' +
      '"db_password":{"sensitive":true,"value":"hunter2-but-longer","type":"string"}}';
    assert.deepEqual(parseJsonStateOutputs(Buffer.from(json)), {
      ok: true,
      outputs: [
        {
          name: 'bucket_names',
          sensitive: false,
          type: 'list',
          value: ['acme-logs-a', 'acme-logs-b'],
          detailedType: ['list', 'string'],
        },
        { name: 'db_password', sensitive: true, type: 'string', value: 'hunter2-but-longer', detailedType: 'string' },
      ],
    });
  });

  it('accepts {} and null as no outputs', () => {
    assert.deepEqual(parseJsonStateOutputs(Buffer.from('{}')), { ok: true, outputs: [] });
    assert.deepEqual(parseJsonStateOutputs(Buffer.from('null')), { ok: true, outputs: [] });
  });

  it('rejects malformed documents', () => {
    assert.match(
      (parseJsonStateOutputs(Buffer.from('{"a":')) as { error: string }).error,
      /^json-state-outputs is not valid JSON/,
    );
    assert.deepEqual(parseJsonStateOutputs(Buffer.from('[1]')), {
      ok: false,
      error: 'json-state-outputs must be a JSON object, got an array',
    });
    assert.deepEqual(parseJsonStateOutputs(Buffer.from('{"a":"x"}')), {
      ok: false,
      error: 'json-state-outputs: output "a" must be an object, got the string "x"',
    });
  });
});

describe('StateInspector', () => {
  const split = (text: string, size: number): Uint8Array[] => {
    const b = Buffer.from(text);
    const out: Uint8Array[] = [];
    for (let i = 0; i < b.length; i += size) out.push(b.subarray(i, i + size));
    return out;
  };
  const inspect = (text: string, size = 5) => {
    const x = new StateInspector();
    for (const c of split(text, size)) if (!x.write(c)) break;
    return x.end();
  };
  const header = '{"version":4,"serial":3,"lineage":"l","terraform_version":"1.9.5"';
  const cases: [string, string, unknown][] = [
    [
      'a whole state',
      `${header},"resources":[]}`,
      { kind: 'state', header: { version: 4, serial: 3, lineage: 'l', terraformVersion: '1.9.5' } },
    ],
    [
      'a body broken after the header',
      `${header},"resources":[{"a":`,
      { kind: 'invalid', error: 'state is truncated: input ended inside a container nested 3 deep at byte 84' },
    ],
    [
      'trailing content',
      `${header}} {}`,
      {
        kind: 'invalid',
        error: "state is not valid JSON: unexpected '{', expected the end of the document, at byte 67",
      },
    ],
    [
      'an encrypted envelope',
      '{"meta":{"k":"v"},"encrypted_data":"eA==","encryption_version":"v0"}',
      { kind: 'encrypted' },
    ],
    [
      'an envelope with a version',
      '{"version":4,"encrypted_data":"eA==","encryption_version":"v0"}',
      { kind: 'invalid', error: 'state has no "serial" field' },
    ],
    ['half an envelope', '{"encrypted_data":"eA=="}', { kind: 'invalid', error: 'state has no "version" field' }],
    [
      'a broken envelope',
      '{"encrypted_data":"eA==","encryption_version":"v0"',
      { kind: 'invalid', error: 'state is truncated: input ended inside a container nested 1 deep at byte 50' },
    ],
  ];
  for (const [name, text, expected] of cases) {
    it(name, async () => {
      assert.deepEqual(inspect(text), expected);
      assert.deepEqual(inspectStateFile(Buffer.from(text)), expected);
      assert.deepEqual(await inspectStateStream(chunks(Buffer.from(text), 3)), expected);
    });
  }

  it('checkJsonStream accepts any one JSON document and names the subject in errors', async () => {
    assert.equal(await checkJsonStream(chunks(Buffer.from('[1,{"a":[true]}]'), 2), 'JSON state'), null);
    assert.equal(
      await checkJsonStream(chunks(Buffer.from('{"a":1} x'), 2), 'JSON state'),
      "JSON state is not valid JSON: unexpected 'x', expected the end of the document, at byte 8",
    );
    assert.equal(await checkJsonStream(chunks(Buffer.from(''), 2), 'JSON state'), 'JSON state is empty');
  });
});
