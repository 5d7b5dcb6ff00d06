import { test } from 'node:test';
import assert from 'node:assert/strict';
import { coerceField, defineFields, parseVaultBody, unknownFieldsWarning } from './vault-fields.js';
import type { FieldType } from './vault-fields.js';
import { isDomainError } from '../shared/errors.js';

function invalidWith(re: RegExp, field?: string) {
  return (err: unknown) =>
    isDomainError(err) &&
    err.kind === 'invalid' &&
    re.test(err.message) &&
    (field === undefined || err.field === field);
}

test('coercion of every type from JSON and form inputs', () => {
  const cases: Array<[FieldType, unknown, unknown]> = [
    ['string', 'web', 'web'],
    ['string', 42, '42'],
    ['string', true, 'true'],
    ['string', ['only'], 'only'],
    ['int', 2048, 2048],
    ['int', '2048', 2048],
    ['int', ' -1 ', -1],
    ['int', '+3', 3],
    ['bool', true, true],
    ['bool', false, false],
    ['bool', 'true', true],
    ['bool', 'false', false],
    ['bool', 'TRUE', true],
    ['bool', '1', true],
    ['bool', '0', false],
    ['bool', 't', true],
    ['bool', 'f', false],
    ['bool', '', false],
    ['bool', 1, true],
    ['bool', 0, false],
    ['bool', ['true'], true],
    ['duration', '72h', 259200],
    ['duration', '1h30m', 5400],
    ['duration', '90s', 90],
    ['duration', '15d', 1296000],
    ['duration', 259200, 259200],
    ['duration', '259200', 259200],
    ['duration', '', 0],
    ['duration', 1.9, 1],
    ['commaList', 'a,b', ['a', 'b']],
    ['commaList', ' a , b ,, c ', ['a', 'b', 'c']],
    ['commaList', ['x.example.com', ' y.example.com '], ['x.example.com', 'y.example.com']],
    ['commaList', ['a,b'], ['a,b']],
    ['commaList', ['', ' '], []],
    ['commaList', '', []],
    ['commaList', 7, ['7']],
    ['commaList', [1, 'z'], ['1', 'z']],
    ['map', { a: 1 }, { a: 1 }],
    ['map', '{"a":[1]}', { a: [1] }],
    ['any', { anything: [1] }, { anything: [1] }],
    ['any', ['a', 'b'], ['a', 'b']],
  ];
  for (const [type, input, expected] of cases) {
    assert.deepEqual(coerceField('f', type, input), expected, `${type} ${JSON.stringify(input)}`);
  }
});

test('conversion failures name the field and the value', () => {
  const cases: Array<[FieldType, unknown, RegExp]> = [
    ['string', { a: 1 }, /input \{"a":1\} for field "f": not a valid string/],
    ['string', ['a', 'b'], /input \["a","b"\] for field "f"/],
    ['int', 'abc', /input "abc" for field "f": not a valid integer/],
    ['int', 1.5, /input 1.5 for field "f"/],
    ['int', '1.5', /input "1.5" for field "f"/],
    ['int', true, /input true for field "f"/],
    ['bool', 'abc', /^Field validation failed: error converting input "abc" for field "f": not a valid boolean$/],
    ['bool', 'yes', /input "yes" for field "f"/],
    ['bool', {}, /input \{\} for field "f"/],
    ['duration', 'abc', /input "abc" for field "f": not a valid duration/],
    ['duration', '10x', /input "10x"/],
    ['duration', -5, /input -5/],
    ['duration', true, /input true/],
    ['commaList', { a: 1 }, /not a valid list of strings/],
    ['commaList', [{ a: 1 }], /input \[\{"a":1\}\]/],
    ['map', 'a=b', /input "a=b" for field "f": not a valid map/],
    ['map', ['x'], /not a valid map/],
  ];
  for (const [type, input, re] of cases) {
    assert.throws(() => coerceField('f', type, input), invalidWith(re, 'f'), `${type} ${JSON.stringify(input)}`);
  }
});

const roleFields = defineFields({
  name: { type: 'string', required: true },
  ttl: { type: 'duration', default: 0 },
  max_ttl: { type: 'duration' },
  allow_any_name: { type: 'bool', default: false },
  key_bits: { type: 'int', default: 2048 },
  allowed_domains: { type: 'commaList', default: [] },
  extra: { type: 'map' },
});

test('defineFields: typed values, defaults, supplied set', () => {
  const parsed = roleFields.parse(
    { ttl: '72h', allowed_domains: 'example.com, example.org', allow_any_name: null },
    { name: 'web' },
  );
  assert.deepEqual(parsed.values, {
    name: 'web',
    ttl: 259200,
    max_ttl: undefined,
    allow_any_name: false,
    key_bits: 2048,
    allowed_domains: ['example.com', 'example.org'],
    extra: undefined,
  });
  assert.deepEqual([...parsed.supplied].sort(), ['allowed_domains', 'name', 'ttl']);
  assert.deepEqual(parsed.warnings, []);
  // Types flow through: these lines only compile if the inferred types are right.
  const ttl: number = parsed.values.ttl;
  const maxTtl: number | undefined = parsed.values.max_ttl;
  const domains: string[] = parsed.values.allowed_domains;
  assert.equal(typeof ttl + typeof maxTtl + domains.length, 'numberundefined2');
});

test('defineFields: defaults are copied, never shared between requests', () => {
  const a = roleFields.parse({}, { name: 'a' });
  a.values.allowed_domains.push('mutated');
  assert.deepEqual(roleFields.parse({}, { name: 'b' }).values.allowed_domains, []);
});

test('defineFields: form bodies (all strings) and JSON bodies give the same values', () => {
  const form = parseVaultBody(
    'application/x-www-form-urlencoded',
    'ttl=1h&allow_any_name=true&key_bits=4096&allowed_domains=a.com%2Cb.com',
  );
  const json = parseVaultBody(
    undefined,
    '{"ttl":3600,"allow_any_name":true,"key_bits":4096,"allowed_domains":["a.com","b.com"]}',
  );
  assert.deepEqual(form, { ttl: '1h', allow_any_name: 'true', key_bits: '4096', allowed_domains: 'a.com,b.com' });
  assert.deepEqual(roleFields.parse(form, { name: 'r' }).values, roleFields.parse(json, { name: 'r' }).values);
});

test('defineFields: unknown keys and path overrides become Vault warnings', () => {
  const parsed = roleFields.parse({ name: 'body-name', zeta: 1, alpha: 'x', ttl: 5 }, { name: 'web' });
  assert.equal(parsed.values.name, 'web');
  assert.deepEqual(parsed.unknown, ['alpha', 'zeta']);
  assert.deepEqual(parsed.replacedByPath, ['name']);
  assert.deepEqual(parsed.warnings, [
    'Endpoint ignored these unrecognized parameters: [alpha zeta]',
    "Endpoint replaced the value of these parameters with the values captured from the endpoint's path: [name]",
  ]);
  assert.equal(unknownFieldsWarning(['b', 'a']), 'Endpoint ignored these unrecognized parameters: [a b]');
});

test('defineFields: required fields, bad values and non-object bodies are invalid', () => {
  assert.throws(() => roleFields.parse({ ttl: 1 }), invalidWith(/missing required field "name"/, 'name'));
  assert.throws(() => roleFields.parse({ name: null }), invalidWith(/missing required field "name"/, 'name'));
  assert.throws(
    () => roleFields.parse({ key_bits: 'lots' }, { name: 'x' }),
    invalidWith(/input "lots" for field "key_bits"/, 'key_bits'),
  );
  assert.throws(() => roleFields.parse(['a'], { name: 'x' }), invalidWith(/must be a JSON object/));
  assert.deepEqual(defineFields({ a: { type: 'int' } }).parse(undefined).values, { a: undefined });
});

test('parseVaultBody: content-type rules, repeated form keys and JSON errors', () => {
  assert.deepEqual(parseVaultBody('application/x-www-form-urlencoded; charset=utf-8', 'a=1&a=2&a=3&b=x+y'), {
    a: ['1', '2', '3'],
    b: 'x y',
  });
  // A form content type with a JSON-looking body is read as JSON.
  assert.deepEqual(parseVaultBody('application/x-www-form-urlencoded', '  {"a":1}'), { a: 1 });
  // Without the form content type the body is JSON, whatever it looks like.
  assert.throws(() => parseVaultBody('text/plain', 'a=1'), invalidWith(/failed to parse JSON input/));
  assert.throws(() => parseVaultBody(undefined, '[1,2]'), invalidWith(/must be a JSON object/));
  assert.throws(() => parseVaultBody('application/x-www-form-urlencoded', '[1]'), invalidWith(/must be a JSON object/));
  assert.deepEqual(parseVaultBody(undefined, '   '), {});
  const proto = parseVaultBody('application/x-www-form-urlencoded', '__proto__=x');
  assert.deepEqual(Object.keys(proto), ['__proto__']);
  assert.equal(Object.getPrototypeOf(proto), Object.prototype);
});
