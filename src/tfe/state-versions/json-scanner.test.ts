import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { JsonScanner, JsonSyntaxError } from './json-scanner.js';
import type { JsonEvents } from './json-scanner.js';

const noEvents: JsonEvents = {
  startObject() {},
  endObject() {},
  startArray() {},
  endArray() {},
  key() {},
  scalar() {},
};

/** Parses `text` fed in pieces of `size` bytes, capturing the root value whole. */
function scan(text: string | Buffer, size = Infinity): unknown {
  const bytes = typeof text === 'string' ? Buffer.from(text) : text;
  let out: unknown = undefined;
  const s = new JsonScanner(noEvents, { maxWhitespaceRun: 1000 });
  s.captureValue((v) => (out = v));
  for (let i = 0; i < bytes.length; i += Math.min(size, bytes.length)) s.write(bytes.subarray(i, i + size));
  s.end();
  return out;
}

const VALID = [
  '{}',
  '[]',
  '0',
  '-0',
  '1.5e10',
  '-12.25E-3',
  '3E+2',
  '"x"',
  'true',
  'false',
  'null',
  '""',
  '{"a":[1,2,{"b":null}],"c":"\\"q\\" \\\\ \\/ \\b\\f\\n\\r\\t \\u00e9 \\ud83d\\ude00","d":-0.5}',
  ' \n\t\r{ "k" : [ true , false , null ] } \n',
  '"naïve – “quoted” 😀"',
  '[[[[[["deep"]]]]]]',
  '{"__proto__":{"polluted":true},"constructor":1}',
  '123456789012345678901234567890',
];

describe('JsonScanner', () => {
  for (const text of VALID) {
    it(`parses ${JSON.stringify(text).slice(0, 50)} like JSON.parse at every chunk size`, () => {
      const expected = JSON.parse(text);
      for (const size of [1, 2, 3, 5, Infinity]) assert.deepEqual(scan(text, size), expected);
    });
  }

  it('keeps a "__proto__" key as plain data', () => {
    const v = scan('{"__proto__":{"polluted":true}}') as Record<string, unknown>;
    assert.deepEqual(Object.keys(v), ['__proto__']);
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });

  const INVALID: [string, RegExp][] = [
    ['{"a":1,}', /expected a property name/],
    ['[1,]', /expected a value/],
    ['{"a" 1}', /expected ':'/],
    ['{a:1}', /property name in double quotes/],
    ['[1 2]', /expected ',' or '\]'/],
    ['01', /end of the document/],
    ['1.', /truncated/],
    ['[1.]', /invalid number/],
    ['[-a]', /invalid number/],
    ['[1e+]', /invalid number/],
    ['-', /truncated/],
    ['1e', /truncated/],
    ['.5', /expected a value/],
    ['tru', /truncated/],
    ['trux', /invalid literal/],
    ['"a\\x"', /invalid escape/],
    ['"\\u12g4"', /invalid \\u escape/],
    ['"a\tb"', /control character/],
    ['{"a":1}}', /end of the document/],
    ['{"a":1} x', /end of the document/],
    ['[1]]', /end of the document/],
    ['{"a":[1}', /expected ',' or '\]'/],
    ['', /empty/],
    ['   ', /empty/],
    ['{"a":"unterminated', /truncated: input ended inside a string/],
    ['{"a":[1,2', /truncated: input ended inside a container nested 2 deep/],
    [`{"a":${' '.repeat(1001)}1}`, /more than 1000 consecutive whitespace bytes/],
    ['\ufeff{}', /unexpected byte 0xef/],
  ];
  for (const [text, message] of INVALID) {
    it(`rejects ${JSON.stringify(text).slice(0, 40)}`, () => {
      for (const size of [1, Infinity]) {
        assert.throws(
          () => scan(text, size),
          (err: unknown) => err instanceof JsonSyntaxError && message.test(err.message),
        );
      }
    });
  }

  it('reports the byte offset of a syntax error', () => {
    assert.throws(() => scan('{"abc": nul!}', 4), /invalid literal at byte 11/);
  });

  it('limits nesting depth', () => {
    assert.throws(() => scan('['.repeat(600)), /nesting deeper than 512 levels/);
  });

  it('skips a value without reporting it and reports the rest', () => {
    const events: string[] = [];
    const h: JsonEvents = {
      startObject: () => events.push('{'),
      endObject: () => events.push('}'),
      startArray: () => events.push('['),
      endArray: () => events.push(']'),
      key: (k) => {
        events.push(`key:${k}`);
        if (k === 'skip') scanner.skipValue();
      },
      scalar: (v) => events.push(`scalar:${String(v)}`),
    };
    const scanner = new JsonScanner(h);
    scanner.write(Buffer.from('{"skip":{"x":[1,{"y":"z"}]},"keep":[true,"s"],"skip":3}'));
    scanner.end();
    assert.deepEqual(events, ['{', 'key:skip', 'key:keep', '[', 'scalar:true', 'scalar:s', ']', 'key:skip', '}']);
  });

  it('still validates skipped values', () => {
    const h: JsonEvents = { ...noEvents, key: () => scanner.skipValue() };
    const scanner = new JsonScanner(h);
    assert.throws(() => scanner.write(Buffer.from('{"skip":{"x":[1,{"y":tru}]}}')), /invalid literal/);
  });

  it('does not limit the length of skipped strings', () => {
    const h: JsonEvents = { ...noEvents, key: () => scanner.skipValue() };
    const scanner = new JsonScanner(h, { maxStringBytes: 10 });
    scanner.write(Buffer.from(`{"a":"${'x'.repeat(100)}"}`));
    scanner.end();
    const s2 = new JsonScanner(noEvents, { maxStringBytes: 10 });
    assert.throws(() => s2.write(Buffer.from(`{"a":"${'x'.repeat(100)}"}`)), /longer than 10 bytes/);
  });
});
