import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  DEFAULT_POLICY_TEXT,
  assertPolicyDeletable,
  assertPolicyWritable,
  buildAcl,
  decodePolicyText,
  normalizePolicyName,
  parsePolicy,
} from './policy.js';
import type { AclOperation, Capability } from './policy.js';
import { isDomainError } from '../../shared/errors.js';

const OPS: readonly AclOperation[] = ['create', 'read', 'update', 'patch', 'delete', 'list'];

function aclOf(...texts: string[]) {
  return buildAcl(texts.map((t, i) => ({ name: `p${i}`, policy: parsePolicy(t) })));
}

function invalidWith(re: RegExp) {
  return (err: unknown) => isDomainError(err) && err.kind === 'invalid' && re.test(err.message);
}

test('each capability grants exactly its own operation', () => {
  for (const cap of OPS) {
    const acl = aclOf(`path "pki/x" { capabilities = ["${cap}"] }`);
    for (const op of OPS) {
      const r = acl.check('pki/x', op);
      assert.equal(r.allowed, op === cap, `capability ${cap}, operation ${op}`);
      assert.equal(r.sudo, false);
    }
  }
});

test('sudo is reported only where granted, and grants no operation by itself', () => {
  const acl = aclOf(
    'path "pki/root" { capabilities = ["delete", "sudo"] }\npath "pki/only-sudo" { capabilities = ["sudo"] }',
  );
  assert.deepEqual(
    { allowed: acl.check('pki/root', 'delete').allowed, sudo: acl.check('pki/root', 'delete').sudo },
    { allowed: true, sudo: true },
  );
  assert.equal(acl.check('pki/only-sudo', 'read').allowed, false);
  assert.equal(acl.check('pki/only-sudo', 'read').sudo, true);
  assert.equal(acl.check('pki/other', 'read').sudo, false);
});

test('deny in a rule removes every other capability, sudo included', () => {
  const acl = aclOf('path "pki/*" { capabilities = ["read", "sudo", "deny"] }');
  const r = acl.check('pki/ca', 'read');
  assert.deepEqual([r.allowed, r.sudo, r.capabilities], [false, false, ['deny']]);
});

test('no matching rule denies', () => {
  const r = aclOf('path "pki/issue/web" { capabilities = ["update"] }').check('pki/issue/api', 'update');
  assert.deepEqual([r.allowed, r.sudo, r.matchedPath], [false, false, undefined]);
});

test('path matching: exact, trailing glob and + segments', () => {
  const acl = aclOf(`
    path "pki/issue/web" { capabilities = ["update"] }
    path "pki/cert/*"    { capabilities = ["read"] }
    path "pki/+/web"     { capabilities = ["create"] }
    path "pki/ro*"       { capabilities = ["list"] }
    path "pki/+/+/sign/*" { capabilities = ["patch"] }
  `);
  const cases: Array<[string, AclOperation, boolean, string | undefined]> = [
    ['pki/issue/web', 'update', true, 'pki/issue/web'],
    ['/pki/issue/web', 'update', true, 'pki/issue/web'],
    ['pki/issue/web/extra', 'update', false, undefined],
    ['pki/cert/0a:1b', 'read', true, 'pki/cert/*'],
    ['pki/cert/', 'read', true, 'pki/cert/*'],
    ['pki/cert', 'read', false, undefined],
    ['pki/sign/web', 'create', true, 'pki/+/web'],
    ['pki/a/b/web', 'create', false, undefined],
    ['pki/roles/x', 'list', true, 'pki/ro*'],
    ['pki/root', 'list', true, 'pki/ro*'],
    ['pki/issuer/abc/sign/role1', 'patch', true, 'pki/+/+/sign/*'],
    ['pki/issuer/abc/sign', 'patch', false, undefined],
  ];
  for (const [path, op, allowed, matched] of cases) {
    const r = acl.check(path, op);
    assert.equal(r.allowed, allowed, `${op} ${path}`);
    assert.equal(r.matchedPath, matched, `${op} ${path} matched`);
  }
});

test('+ glob pattern with a partial last segment before *', () => {
  const acl = aclOf('path "pki/+/we*" { capabilities = ["read"] }');
  assert.equal(acl.check('pki/issue/web', 'read').allowed, true);
  assert.equal(acl.check('pki/issue/web/x', 'read').allowed, true);
  assert.equal(acl.check('pki/issue/api', 'read').allowed, false);
});

test('precedence between different matching patterns (only the winner applies)', () => {
  // Each row: two patterns both matching the path; the first listed must win.
  const cases: Array<[string, string, string, string]> = [
    // exact beats any glob
    ['exact over glob', 'pki/issue/web', 'pki/issue/*', 'pki/issue/web'],
    ['exact over +', 'pki/issue/web', 'pki/+/web', 'pki/issue/web'],
    // (1) a later first wildcard wins
    ['later glob wins', 'pki/issue/*', 'pki/*', 'pki/issue/web'],
    ['later + wins over earlier +', 'pki/issue/+', 'pki/+/web', 'pki/issue/web'],
    ['later * wins over earlier +', 'pki/issue/w*', 'pki/+/web', 'pki/issue/web'],
    // (2) same position: no trailing * beats trailing *
    ['+ beats * at the same position', 'pki/+/web', 'pki/*', 'pki/issue/web'],
    ['pki/+/bar beats pki/+/ba*', 'pki/+/bar', 'pki/+/ba*', 'pki/x/bar'],
    // (3) fewer + segments win
    ['fewer + wins', 'pki/+/x/+', 'pki/+/+/+', 'pki/a/x/b'],
    // (4) longer wins
    ['longer wins', 'pki/+/bar/ba*', 'pki/+/bar/b*', 'pki/x/bar/baz'],
    // (5) lexically larger wins as the final tie-break ('+' sorts before letters)
    ['lexical tie-break', 'x/+/a/+', 'x/+/+/b', 'x/q/a/b'],
  ];
  for (const [name, winner, loser, path] of cases) {
    const acl = aclOf(`path "${winner}" { capabilities = ["read"] }\npath "${loser}" { capabilities = ["delete"] }`);
    const r = acl.check(path, 'read');
    assert.equal(r.matchedPath, winner, name);
    assert.equal(r.allowed, true, name);
    // Capabilities of the losing pattern do not merge in.
    assert.equal(acl.check(path, 'delete').allowed, false, `${name}: no merge`);
    // Declaration order must not matter.
    const swapped = aclOf(
      `path "${loser}" { capabilities = ["delete"] }`,
      `path "${winner}" { capabilities = ["read"] }`,
    );
    assert.equal(swapped.check(path, 'read').matchedPath, winner, `${name} (swapped)`);
    // Sanity: the loser does match the path on its own.
    assert.equal(
      aclOf(`path "${loser}" { capabilities = ["delete"] }`).check(path, 'delete').matchedPath,
      loser,
      `${name}: loser matches`,
    );
  }
});

test('list adds a slash, so a prefix rule can win where a + rule no longer matches', () => {
  const acl = aclOf('path "pki/+/web" { capabilities = ["list"] }\npath "pki/*" { capabilities = ["read"] }');
  const r = acl.check('pki/issue/web', 'list');
  assert.deepEqual([r.matchedPath, r.allowed], ['pki/*', false]);
  // Without any other candidate, the + rule is retried on the path without the slash.
  const only = aclOf('path "pki/+/web" { capabilities = ["list"] }');
  assert.deepEqual(
    [only.check('pki/issue/web', 'list').matchedPath, only.check('pki/issue/web', 'list').allowed],
    ['pki/+/web', true],
  );
});

test('the same pattern in several policies merges; deny anywhere wins', () => {
  const merged = aclOf(
    'path "pki/issue/*" { capabilities = ["create"] }',
    'path "pki/issue/*" { capabilities = ["update", "sudo"] }',
  );
  const r = merged.check('pki/issue/web', 'update');
  assert.deepEqual([r.allowed, r.sudo, r.capabilities], [true, true, ['create', 'update', 'sudo']]);
  assert.equal(merged.check('pki/issue/web', 'create').allowed, true);

  const denied = aclOf(
    'path "pki/issue/*" { capabilities = ["create", "update", "sudo"] }',
    'path "pki/issue/*" { capabilities = ["deny"] }',
  );
  const d = denied.check('pki/issue/web', 'update');
  assert.deepEqual([d.allowed, d.sudo, d.capabilities], [false, false, ['deny']]);

  // Order does not matter.
  const denied2 = aclOf(
    'path "pki/issue/*" { capabilities = ["deny"] }',
    'path "pki/issue/*" { capabilities = ["update"] }',
  );
  assert.equal(denied2.check('pki/issue/web', 'update').allowed, false);

  // A deny on a less specific pattern does not override a more specific grant.
  const specific = aclOf(
    'path "pki/*" { capabilities = ["deny"] }',
    'path "pki/issue/web" { capabilities = ["update"] }',
  );
  assert.equal(specific.check('pki/issue/web', 'update').allowed, true);
  assert.equal(specific.check('pki/issue/api', 'update').allowed, false);

  // "pki/a" and "pki/a*" are different patterns and do not merge.
  const distinct = aclOf('path "pki/a" { capabilities = ["read"] }', 'path "pki/a*" { capabilities = ["list"] }');
  assert.equal(distinct.check('pki/a', 'read').allowed, true);
  assert.equal(distinct.check('pki/ab', 'list').allowed, true);
  assert.equal(distinct.check('pki/ab', 'read').allowed, false);
});

test('list requests: trailing slash is added and exact rules match with or without it', () => {
  const cases: Array<[string, string, boolean]> = [
    ['pki/certs', 'pki/certs', true],
    ['pki/certs', 'pki/certs/', true],
    ['pki/certs/', 'pki/certs', true],
    ['pki/certs/*', 'pki/certs', true],
    ['pki/cert*', 'pki/certs', true],
    ['pki/certs/x', 'pki/certs', false],
  ];
  for (const [pattern, path, allowed] of cases) {
    const acl = aclOf(`path "${pattern}" { capabilities = ["list"] }`);
    assert.equal(acl.check(path, 'list').allowed, allowed, `list ${path} with ${pattern}`);
  }
  // Outside of list, an exact rule with a slash does not match the bare path.
  assert.equal(aclOf('path "pki/certs/" { capabilities = ["read"] }').check('pki/certs', 'read').allowed, false);
});

test('root policy allows everything with sudo; a missing policy body grants nothing', () => {
  const root = buildAcl([{ name: 'root' }]);
  for (const op of OPS)
    assert.deepEqual([root.check('any/path', op).allowed, root.check('any/path', op).sudo], [true, true]);
  assert.equal(root.check('x', 'read').isRoot, true);
  assert.deepEqual(root.capabilitiesOf('x'), ['root']);
  const none = buildAcl([{ name: 'deleted-policy' }]);
  assert.equal(none.check('pki/ca', 'read').allowed, false);
});

test('capabilitiesOf reports like sys/capabilities-self', () => {
  const acl = aclOf(
    'path "pki/issue/*" { capabilities = ["update", "create"] }\npath "pki/root" { capabilities = ["deny"] }',
  );
  assert.deepEqual(acl.capabilitiesOf('pki/issue/web'), ['create', 'update']);
  assert.deepEqual(acl.capabilitiesOf('pki/root'), ['deny']);
  assert.deepEqual(acl.capabilitiesOf('nothing/here'), ['deny']);
});

test('the default policy parses and only covers token self-management', () => {
  const acl = buildAcl([{ name: 'default', policy: parsePolicy(DEFAULT_POLICY_TEXT) }]);
  const cases: Array<[string, AclOperation, boolean]> = [
    ['auth/token/lookup-self', 'read', true],
    ['auth/token/renew-self', 'update', true],
    ['auth/token/revoke-self', 'update', true],
    ['sys/capabilities-self', 'update', true],
    ['auth/token/create', 'update', false],
    ['auth/token/lookup-self', 'update', false],
    ['pki/issue/web', 'update', false],
    ['sys/policies/acl/default', 'update', false],
  ];
  for (const [path, op, allowed] of cases) assert.equal(acl.check(path, op).allowed, allowed, `${op} ${path}`);
});

test('parsePolicy: JSON forms equal the HCL form', () => {
  const hcl = parsePolicy(
    'path "pki/*" { capabilities = ["read", "list"] }\npath "/pki/issue/web" { capabilities = ["update"] }',
  );
  const json = parsePolicy(
    '{"path":{"pki/*":{"capabilities":["read","list"]},"/pki/issue/web":{"capabilities":["update"]}}}',
  );
  const jsonList = parsePolicy(
    '{"path":[{"pki/*":{"capabilities":["read","list"]}},{"pki/issue/web":{"capabilities":["update"]}}]}',
  );
  const hclAssign = parsePolicy(
    'name = "x"\npath = { "pki/*" = { capabilities = ["read", "list"] }, "pki/issue/web" = { ' +
      'capabilities = ["update"] } }',
  );
  const expected = {
    rules: [
      { pattern: 'pki/*', capabilities: ['read', 'list'] },
      { pattern: 'pki/issue/web', capabilities: ['update'] },
    ],
  };
  const jsonBlockList = parsePolicy(
    '{"path":{"pki/*":[{"capabilities":["read","list"]}],"pki/issue/web":[{"capabilities":["update"]}]}}',
  );
  for (const p of [hcl, json, jsonList, hclAssign, jsonBlockList]) assert.deepEqual(p, expected);
});

test('policy text may arrive base64-encoded', () => {
  const text = 'path "pki/*" { capabilities = ["read"] }';
  const b64 = Buffer.from(text).toString('base64');
  assert.equal(decodePolicyText(b64), text);
  assert.equal(decodePolicyText(`${b64.slice(0, 20)}\n${b64.slice(20)}`), text);
  assert.equal(decodePolicyText(text), text);
  const json = '{"path":{"a":{"capabilities":["read"]}}}';
  assert.equal(decodePolicyText(json), json);
  assert.equal(decodePolicyText(''), '');
});

test('parsePolicy: capabilities are normalised and the legacy policy key is understood', () => {
  const cases: Array<[string, Capability[]]> = [
    ['capabilities = ["LIST", "read", "read"]', ['read', 'list']],
    ['capabilities = ["read", "deny"]', ['deny']],
    ['capabilities = []', []],
    ['capabilities = ["subscribe", "recover"]', ['subscribe', 'recover']],
    ['policy = "read"', ['read', 'list']],
    ['policy = "write"', ['create', 'read', 'update', 'delete', 'list']],
    ['policy = "sudo"', ['create', 'read', 'update', 'delete', 'list', 'sudo']],
    ['policy = "deny"', ['deny']],
  ];
  for (const [body, caps] of cases) {
    assert.deepEqual(parsePolicy(`path "a" { ${body} }`).rules[0]?.capabilities, caps, body);
  }
});

test('parsePolicy keeps parameter constraints and wrapping TTLs', () => {
  const p = parsePolicy(`
    path "pki/issue/web" {
      capabilities = ["update"]
      allowed_parameters = { "common_name" = ["*.example.com"], "TTL" = [] }
      denied_parameters { "ip_sans" = [] }
      required_parameters = ["common_name"]
      min_wrapping_ttl = "1m"
      max_wrapping_ttl = 3600
    }`);
  assert.deepEqual(p.rules[0], {
    pattern: 'pki/issue/web',
    capabilities: ['update'],
    allowedParameters: { common_name: ['*.example.com'], ttl: [] },
    deniedParameters: { ip_sans: [] },
    requiredParameters: ['common_name'],
    minWrappingTtl: 60,
    maxWrappingTtl: 3600,
  });
  const merged = buildAcl([
    { name: 'a', policy: p },
    {
      name: 'b',
      policy: parsePolicy(
        'path "pki/issue/web" { allowed_parameters = { "common_name" = ["x.example.org"], "alt_names" = [] } }',
      ),
    },
  ]);
  assert.deepEqual(merged.check('pki/issue/web', 'update').permissions?.allowedParameters, {
    common_name: ['*.example.com', 'x.example.org'],
    ttl: [],
    alt_names: [],
  });
});

test('parsePolicy rejects bad input with clear messages', () => {
  const cases: Array<[string, RegExp]> = [
    ['path "a" { capabilities = ["read", "write"] }', /invalid capability "write"/],
    ['path "a" { capabilities = "read" }', /capabilities must be a list of strings/],
    ['path "a/*/b" { capabilities = ["read"] }', /"\*" is only allowed at the end/],
    ['path "a" { capability = ["read"] }', /line 1: path "a": invalid key "capability"/],
    ['path "a" { policy = "admin" }', /invalid policy value "admin"/],
    ['path "a" { min_wrapping_ttl = "soon" }', /invalid min_wrapping_ttl "soon"/],
    ['path "a" { allowed_parameters = ["x"] }', /allowed_parameters must be a map/],
    ['path "a" "b" { }', /exactly one label/],
    ['paths "a" { }', /invalid key "paths"/],
    ['path "a" {\n  capabilities = ["read"]\n', /^line 3, column 1: unexpected end of input/],
    ['{"path": {"a": {"capabilities": ["read"]}', /failed to parse policy/],
    ['{"path": {"a": ["read"]}}', /path "a" must be an object/],
    ['{"path": {"a": {"capabilities": ["fly"]}}}', /invalid capability "fly"/],
  ];
  for (const [text, re] of cases) assert.throws(() => parsePolicy(text), invalidWith(re), text);
});

test('policy names: lowercased; root is read-only; default cannot be deleted', () => {
  assert.equal(normalizePolicyName(' PKI-Admin '), 'pki-admin');
  assert.throws(() => normalizePolicyName('  '), invalidWith(/must not be empty/));
  assert.throws(() => assertPolicyWritable('Root'), invalidWith(/cannot update the "root" policy/));
  assert.doesNotThrow(() => assertPolicyWritable('default'));
  assert.throws(() => assertPolicyDeletable('root'), invalidWith(/cannot delete the "root" policy/));
  assert.throws(() => assertPolicyDeletable('DEFAULT'), invalidWith(/cannot delete the "default" policy/));
  assert.doesNotThrow(() => assertPolicyDeletable('pki-admin'));
});
