import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parametersAllowed } from './policy-parameters.js';
import type { ParameterRules } from './policy-parameters.js';
import { buildAcl, parsePolicy } from './policy.js';

test('parameter constraints, table-driven', () => {
  const cases: Array<[string, ParameterRules, string, Record<string, unknown>, boolean]> = [
    ['no constraints', {}, 'update', { anything: 1 }, true],
    ['required present', { requiredParameters: ['common_name'] }, 'update', { common_name: 'a' }, true],
    ['required missing', { requiredParameters: ['common_name'] }, 'update', { ttl: '1h' }, false],
    ['required missing, empty body', { requiredParameters: ['common_name'] }, 'create', {}, false],
    ['required is not checked on delete', { requiredParameters: ['x'] }, 'delete', {}, true],
    ['required is not checked on list', { requiredParameters: ['x'] }, 'list', {}, true],
    ['allowed key, any value', { allowedParameters: { ttl: [] } }, 'update', { ttl: '1h' }, true],
    ['key not allowed', { allowedParameters: { ttl: [] } }, 'update', { ttl: '1h', alt_names: 'x' }, false],
    ['allowed names are case-insensitive', { allowedParameters: { ttl: [] } }, 'update', { TTL: '1h' }, true],
    ['allowed value', { allowedParameters: { format: ['pem', 'der'] } }, 'update', { format: 'der' }, true],
    ['disallowed value', { allowedParameters: { format: ['pem'] } }, 'update', { format: 'der' }, false],
    [
      'suffix glob value',
      { allowedParameters: { common_name: ['*.example.com'] } },
      'update',
      { common_name: 'a.example.com' },
      true,
    ],
    [
      'suffix glob miss',
      { allowedParameters: { common_name: ['*.example.com'] } },
      'update',
      { common_name: 'example.org' },
      false,
    ],
    ['prefix glob value', { allowedParameters: { common_name: ['web-*'] } }, 'update', { common_name: 'web-1' }, true],
    ['contains glob value', { allowedParameters: { n: ['*mid*'] } }, 'update', { n: 'a-mid-b' }, true],
    ['* key alone allows everything', { allowedParameters: { '*': [] } }, 'update', { a: 1, b: 2 }, true],
    [
      '* key plus listed key',
      { allowedParameters: { '*': [], format: ['pem'] } },
      'update',
      { a: 1, format: 'der' },
      false,
    ],
    [
      'list value: all elements allowed',
      { allowedParameters: { alt_names: ['*.example.com'] } },
      'update',
      { alt_names: ['a.example.com', 'b.example.com'] },
      true,
    ],
    [
      'list value: one element not allowed',
      { allowedParameters: { alt_names: ['*.example.com'] } },
      'update',
      { alt_names: ['a.example.com', 'evil.org'] },
      false,
    ],
    ['denied key, any value', { deniedParameters: { ip_sans: [] } }, 'update', { ip_sans: '10.0.0.1' }, false],
    ['denied key absent', { deniedParameters: { ip_sans: [] } }, 'update', { common_name: 'a' }, true],
    ['denied value', { deniedParameters: { format: ['der'] } }, 'update', { format: 'der' }, false],
    ['other value not denied', { deniedParameters: { format: ['der'] } }, 'update', { format: 'pem' }, true],
    ['denied * blocks any parameter', { deniedParameters: { '*': [] } }, 'update', { a: 1 }, false],
    ['denied * with no parameters', { deniedParameters: { '*': [] } }, 'update', {}, true],
    [
      'list value: one element denied',
      { deniedParameters: { alt_names: ['*.internal'] } },
      'update',
      { alt_names: ['a.com', 'db.internal'] },
      false,
    ],
    [
      'denial beats allowance',
      { allowedParameters: { format: [] }, deniedParameters: { format: ['der'] } },
      'update',
      { format: 'der' },
      false,
    ],
    [
      'non-string values compare by value',
      { allowedParameters: { key_bits: [2048, 4096] } },
      'update',
      { key_bits: 4096 },
      true,
    ],
    ['non-string value not listed', { allowedParameters: { key_bits: [2048] } }, 'update', { key_bits: 4096 }, false],
    ['read is checked too', { allowedParameters: { a: [] } }, 'read', { b: 1 }, false],
    ['patch is checked too', { deniedParameters: { a: [] } }, 'patch', { a: 1 }, false],
    ['delete is not checked', { deniedParameters: { a: [] } }, 'delete', { a: 1 }, true],
  ];
  for (const [name, rules, op, data, expected] of cases)
    assert.equal(parametersAllowed(rules, op, data), expected, name);
});

test("Acl.check applies the matched rule's constraints only when data is given", () => {
  const acl = buildAcl([
    {
      name: 'issuer',
      policy: parsePolicy(`
        path "pki/issue/web" {
          capabilities = ["update"]
          allowed_parameters = { "common_name" = ["*.example.com"], "ttl" = [] }
        }`),
    },
  ]);
  assert.equal(acl.check('pki/issue/web', 'update').allowed, true);
  assert.equal(acl.check('pki/issue/web', 'update', { common_name: 'a.example.com', ttl: '1h' }).allowed, true);
  assert.equal(acl.check('pki/issue/web', 'update', { common_name: 'a.example.org' }).allowed, false);
  assert.equal(
    acl.check('pki/issue/web', 'update', { common_name: 'a.example.com', ip_sans: '10.0.0.1' }).allowed,
    false,
  );
  // Root ignores constraints.
  assert.equal(buildAcl([{ name: 'root' }]).check('pki/issue/web', 'update', { anything: 1 }).allowed, true);
});
