import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bodyToObject, parseHcl } from './hcl.js';
import { isDomainError } from '../../shared/errors.js';

test('parses a path block with a capability list', () => {
  const entries = parseHcl('path "pki/issue/web" {\n  capabilities = ["create", "update"]\n}\n');
  assert.deepEqual(entries, [
    {
      kind: 'block',
      type: 'path',
      labels: ['pki/issue/web'],
      line: 1,
      body: [{ kind: 'attribute', name: 'capabilities', value: ['create', 'update'], line: 2 }],
    },
  ]);
});

test('values: strings, numbers, booleans, lists, maps and nested blocks', () => {
  const src = `
    s = "text"
    i = 42
    neg = -7
    f = 1.5
    yes = true
    no = false
    empty = []
    trailing = ["a", "b",]
    nested_list = [["x"], [1, true]]
    m = { "ttl" = [], key_usage = ["DigitalSignature"], "c": "colon" }
    outer "l1" "l2" {
      inner { v = 1 }
    }
  `;
  assert.deepEqual(bodyToObject(parseHcl(src)), {
    s: 'text',
    i: 42,
    neg: -7,
    f: 1.5,
    yes: true,
    no: false,
    empty: [],
    trailing: ['a', 'b'],
    nested_list: [['x'], [1, true]],
    m: { ttl: [], key_usage: ['DigitalSignature'], c: 'colon' },
    outer: { l1: { l2: { inner: { v: 1 } } } },
  });
});

test('string escapes', () => {
  const cases: Array<[string, string]> = [
    ['"a\\"b"', 'a"b'],
    ['"back\\\\slash"', 'back\\slash'],
    ['"tab\\tnl\\n"', 'tab\tnl\n'],
    ['"\\u00e9t\\u00e9"', 'été'],
    ['"\\U0001F600"', '\u{1F600}'],
    ['"pki/+/web"', 'pki/+/web'],
    ['"# not a comment"', '# not a comment'],
  ];
  for (const [lit, expected] of cases) {
    assert.deepEqual(bodyToObject(parseHcl(`v = ${lit}`)), { v: expected }, lit);
  }
});

test('comments of all three styles are ignored and keep line numbers right', () => {
  const src = [
    '# hash comment',
    '// slash comment',
    '/* block',
    '   comment */ path "a" { capabilities = ["read"] } # trailing',
    'path "b" { /* inline */ capabilities = ["list"] // trailing',
    '}',
  ].join('\n');
  const entries = parseHcl(src);
  assert.deepEqual(
    entries.map((e) => [e.kind === 'block' ? e.labels[0] : '', e.line]),
    [
      ['a', 4],
      ['b', 5],
    ],
  );
});

test('repeated blocks are kept in order', () => {
  const entries = parseHcl('path "a" {}\npath "a" { capabilities = ["deny"] }\npath "b" {}');
  assert.equal(entries.length, 3);
  assert.deepEqual(
    entries.map((e) => e.line),
    [1, 2, 3],
  );
});

test('a "__proto__" key is plain data', () => {
  const obj = bodyToObject(parseHcl('m = { "__proto__" = ["x"] }'));
  const m = obj['m'] as Record<string, unknown>;
  assert.deepEqual(Object.keys(m), ['__proto__']);
  assert.equal(Object.getPrototypeOf(m), Object.prototype);
});

test('syntax errors name the line (and column)', () => {
  const cases: Array<[string, RegExp]> = [
    ['path "a" {\n  capabilities = ["read"\n}', /^line 3, column 1: expected "," or "\]" in list but found "}"/],
    ['path "a" {\n  capabilities = ["read"]\n', /^line 3, column 1: unexpected end of input: missing "}"/],
    ['path "a" {\n  capabilities = "unterminated\n}', /^line 2, column 18: unterminated string/],
    ['/* never closed\npath "a" {}', /^line 1, column 1: unterminated comment/],
    ['a = "bad \\q escape"', /^line 1, column \d+: invalid escape sequence "\\q"/],
    ['\n\npath "a" "b" = 1', /^line 3, column 14: expected "=" or "\{" after "path" but found "="/],
    ['x = yes', /^line 1, column 5: unexpected identifier "yes"/],
    ['x = ]', /^line 1, column 5: expected a value but found "\]"/],
    ['x = 1 }', /^line 1, column 7: expected a key but found "}"/],
    ['x = 1\n@', /^line 2, column 1: unexpected character "@"/],
    ['[1]', /^line 1, column 1: expected a key but found "\["/],
  ];
  for (const [src, re] of cases) {
    assert.throws(
      () => parseHcl(src),
      (err: unknown) => isDomainError(err) && err.kind === 'invalid' && re.test(err.message),
      `${JSON.stringify(src)} should fail with ${re}`,
    );
  }
});

test('empty input and comment-only input give no entries', () => {
  assert.deepEqual(parseHcl(''), []);
  assert.deepEqual(parseHcl('# nothing\n/* here */\n'), []);
});
