import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  SUDO_SYS_PATTERNS,
  SUDO_TOKEN_PATTERNS,
  UNAUTHENTICATED_PKI_PATTERNS,
  compilePathPatterns,
  isSudoPkiPath,
  isSudoSystemPath,
  isUnauthenticatedPkiPath,
  matchesPathPattern,
  normalizeRequestPath,
  resolveOperation,
  writeOperation,
} from './vault-paths.js';
import { isDomainError } from '../shared/errors.js';

test('HTTP method (and ?list=) to Vault operation', () => {
  const cases: Array<[string, Record<string, unknown> | undefined, string | undefined, string[] | undefined]> = [
    ['GET', undefined, 'read', ['read']],
    ['get', {}, 'read', ['read']],
    ['HEAD', undefined, 'read', ['read']],
    ['GET', { list: 'true' }, 'list', ['list']],
    ['GET', { list: '1' }, 'list', ['list']],
    ['GET', { list: ['t'] }, 'list', ['list']],
    ['GET', { list: 'false' }, 'read', ['read']],
    ['LIST', undefined, 'list', ['list']],
    ['POST', undefined, 'write', ['create', 'update']],
    ['PUT', undefined, 'write', ['create', 'update']],
    ['PATCH', undefined, 'patch', ['patch']],
    ['DELETE', { list: 'true' }, 'delete', ['delete']],
    ['OPTIONS', undefined, undefined, undefined],
    ['TRACE', undefined, undefined, undefined],
  ];
  for (const [method, query, kind, ops] of cases) {
    const r = resolveOperation(method, query);
    assert.equal(r?.kind, kind, `${method} ${JSON.stringify(query)}`);
    assert.deepEqual(r?.operations, ops, `${method} ${JSON.stringify(query)}`);
  }
  assert.throws(
    () => resolveOperation('GET', { list: 'maybe' }),
    (err: unknown) => isDomainError(err) && err.kind === 'invalid' && /invalid value for "list"/.test(err.message),
  );
});

test('writes: update without an existence check, create only for a missing target', () => {
  assert.equal(writeOperation(), 'update');
  assert.equal(writeOperation(true), 'update');
  assert.equal(writeOperation(false), 'create');
});

test('request path normalisation', () => {
  assert.equal(normalizeRequestPath('/pki/certs', true), 'pki/certs/');
  assert.equal(normalizeRequestPath('pki/certs/', true), 'pki/certs/');
  assert.equal(normalizeRequestPath('//pki/ca', false), 'pki/ca');
});

test('pattern matching: exact, +, trailing *', () => {
  const cases: Array<[string, string, boolean]> = [
    ['ca', 'ca', true],
    ['ca', 'ca/', false],
    ['ca', 'ca/pem', false],
    ['cert/*', 'cert/', true],
    ['cert/*', 'cert/01:02/raw/pem', true],
    ['cert/*', 'cert', false],
    ['accessors*', 'accessors/', true],
    ['issuer/+/pem', 'issuer/default/pem', true],
    ['issuer/+/pem', 'issuer/a/b/pem', false],
    ['issuer/+/pem', 'issuer/default/pem/x', false],
    ['acme/challenge/+/+', 'acme/challenge/a/b', true],
    ['acme/challenge/+/+', 'acme/challenge/a', false],
    ['a/+/b*', 'a/x/bc/d', true],
    ['a/+/b*', 'a/x/c', false],
  ];
  for (const [pattern, path, expected] of cases)
    assert.equal(matchesPathPattern(pattern, path), expected, `${pattern} ~ ${path}`);
});

test('a compiled pattern set matches exactly the paths one of its patterns matches', () => {
  const sets = [UNAUTHENTICATED_PKI_PATTERNS, SUDO_SYS_PATTERNS, SUDO_TOKEN_PATTERNS, ['a/+/b*', '+/x', 'ab*', 'a/b']];
  const paths = [
    '',
    'a',
    'a/b',
    'a/x/bc/d',
    'a/x/c',
    'q/x',
    'x',
    'abc',
    'ab',
    'cert',
    'cert/',
    'cert/01',
    'ca',
    'ca/pem',
    'ca/der',
    'issuers',
    'issuers/',
    'issuer/default/pem',
    'issuer/a/b/pem',
    'issuer/x/crl/delta/pem',
    'issuer/x/crl/delta/der/y',
    'ocsp',
    'ocsp/',
    'ocsp/abc',
    'ocspx',
    'acme/directory',
    'roles/r/acme/new-order',
    'issuer/i/roles/r/acme/order/o/cert',
    'issuer/i/roles/r/acme/order/o/cert/x',
    'sign/ec',
    'issue/ec',
    'auth/x',
    'auth',
    'raw',
    'raw/x',
    'leases',
    'leases/lookup/a',
    'accessors',
    'accessors/',
    'accessorsx',
    'revoke-orphan/t',
  ];
  for (const patterns of sets) {
    const compiled = compilePathPatterns(patterns);
    for (const path of paths) {
      assert.equal(
        compiled(path),
        patterns.some((p) => matchesPathPattern(p, path)),
        `${path} against ${patterns.slice(0, 3).join(',')}...`,
      );
    }
  }
  assert.equal(compilePathPatterns(['a/+/b*'])('a/x/bc/d'), true);
  assert.equal(compilePathPatterns(['+/x'])('q/x'), true);
});

// Reference §2.1, pattern by pattern, with a concrete request for each.
const PUBLIC: Array<[string, string]> = [
  ['GET', 'cert/17:6a:2b:00'],
  ['GET', 'cert/17-6a-2b-00/raw'],
  ['GET', 'cert/17:6a:2b:00/raw/pem'],
  ['GET', 'cert/ca'],
  ['GET', 'cert/ca_chain'],
  ['GET', 'cert/crl'],
  ['GET', 'cert/delta-crl'],
  ['GET', 'cert/unified-crl'],
  ['GET', 'cert/unified-delta-crl'],
  ['GET', 'ca'],
  ['GET', 'ca/pem'],
  ['GET', 'ca_chain'],
  ['GET', 'crl'],
  ['GET', 'crl/pem'],
  ['GET', 'crl/delta'],
  ['GET', 'crl/delta/pem'],
  ...['crl', 'crl/der', 'crl/pem', 'crl/delta', 'crl/delta/der', 'crl/delta/pem'].map((s): [string, string] => [
    'GET',
    `issuer/default/${s}`,
  ]),
  ...[
    'unified-crl',
    'unified-crl/der',
    'unified-crl/pem',
    'unified-crl/delta',
    'unified-crl/delta/der',
    'unified-crl/delta/pem',
  ].map((s): [string, string] => ['GET', `issuer/my-issuer/${s}`]),
  ['GET', 'issuer/8a0e0c4a-9d36-4d5c-a3f6-1f9f1f1f1f1f/json'],
  ['GET', 'issuer/default/der'],
  ['GET', 'issuer/default/pem'],
  ['LIST', 'issuers'],
  ['LIST', 'issuers/'],
  ['GET?list=true', 'issuers'],
  ['POST', 'ocsp'],
  ['GET', 'ocsp/MFQwUjBQME4wTDAJBgUrDgMCGgUABBQ%2F'],
  ['GET', 'unified-crl'],
  ['GET', 'unified-crl/pem'],
  ['GET', 'unified-crl/delta'],
  ['GET', 'unified-crl/delta/pem'],
  ['POST', 'unified-ocsp'],
  ['GET', 'unified-ocsp/MFQw'],
  ...['', 'issuer/default/', 'roles/web/', 'issuer/default/roles/web/'].flatMap((prefix): Array<[string, string]> => [
    ['GET', `${prefix}acme/directory`],
    ['HEAD', `${prefix}acme/new-nonce`],
    ['POST', `${prefix}acme/new-account`],
    ['POST', `${prefix}acme/new-order`],
    ['POST', `${prefix}acme/revoke-cert`],
    ['POST', `${prefix}acme/key-change`],
    ['POST', `${prefix}acme/account/kid-1`],
    ['POST', `${prefix}acme/authorization/auth-1`],
    ['POST', `${prefix}acme/challenge/auth-1/http-01`],
    ['POST', `${prefix}acme/orders`],
    ['POST', `${prefix}acme/order/o-1`],
    ['POST', `${prefix}acme/order/o-1/finalize`],
    ['POST', `${prefix}acme/order/o-1/cert`],
  ]),
];

// Reference §2.1 "Notably authenticated", plus neighbours of public paths.
const PRIVATE: Array<[string, string]> = [
  ['LIST', 'certs'],
  ['GET?list=true', 'certs'],
  ['LIST', 'keys'],
  ['GET', 'issuers'],
  ['GET', 'issuer/default'],
  ['POST', 'issuer/default'],
  ['GET', 'key/default'],
  ['GET', 'crl/rotate'],
  ['GET', 'crl/rotate-delta'],
  ['POST', 'acme/new-eab'],
  ['POST', 'issuer/default/acme/new-eab'],
  ['GET', 'cert-metadata/17:6a'],
  ['LIST', 'cert-metadata'],
  ['POST', 'issue/web'],
  ['POST', 'sign/web'],
  ['POST', 'root/sign-intermediate'],
  ['DELETE', 'root'],
  ['GET', 'roles/web'],
  ['LIST', 'roles'],
  ['GET', 'config/crl'],
  ['GET', 'ca/other'],
  ['GET', 'crl/delta/der'],
  ['GET', 'issuer/default/crl/rotate'],
  ['POST', 'issuer/default/resign-crls'],
  ['GET', 'issuer/a/b/pem'],
  ['GET', 'certs/revoked'],
  ['POST', 'revoke'],
  ['POST', 'tidy'],
  ['GET', 'acme/unknown'],
];

function run(spec: string, path: string): boolean {
  const [method, q] = spec.split('?') as [string, string | undefined];
  return isUnauthenticatedPkiPath(
    path,
    method,
    q === undefined ? undefined : Object.fromEntries(new URLSearchParams(q)),
  );
}

test('unauthenticated PKI paths: everything the reference lists is public', () => {
  for (const [method, path] of PUBLIC) assert.equal(run(method, path), true, `${method} ${path}`);
});

test('unauthenticated PKI paths: everything else needs a token', () => {
  for (const [method, path] of PRIVATE) assert.equal(run(method, path), false, `${method} ${path}`);
});

test('unauthenticated PKI pattern list has no duplicates and a bad list flag grants nothing', () => {
  assert.equal(new Set(UNAUTHENTICATED_PKI_PATTERNS).size, UNAUTHENTICATED_PKI_PATTERNS.length);
  // Vault's 32 fetch paths and 13 ACME resources under 4 prefixes, plus renewal-info (RFC 9773) under each prefix.
  assert.equal(UNAUTHENTICATED_PKI_PATTERNS.length, 32 + 13 * 4 + 4);
  assert.equal(isUnauthenticatedPkiPath('issuers', 'GET', { list: 'maybe' }), false);
});

test('sudo paths: PKI root and root/sign-self-issued only', () => {
  const cases: Array<[string, boolean]> = [
    ['root', true],
    ['/root', true],
    ['root/sign-self-issued', true],
    ['issuer/default/sign-self-issued', false],
    ['root/sign-intermediate', false],
    ['root/generate/internal', false],
    ['root/rotate/internal', false],
    ['sign-verbatim', false],
    ['config/ca', false],
  ];
  for (const [path, sudo] of cases) assert.equal(isSudoPkiPath(path), sudo, path);
});

test('sudo paths: system and token store', () => {
  const cases: Array<[string, boolean]> = [
    ['sys/auth/userpass', true],
    ['sys/audit', true],
    ['sys/audit/file', true],
    ['sys/raw/core', true],
    ['sys/remount', true],
    ['sys/rotate', true],
    ['sys/seal', true],
    ['sys/step-down', true],
    ['sys/leases', true],
    ['sys/leases/lookup/pki/issue/', true],
    ['sys/leases/revoke-prefix/pki/issue/web', true],
    ['sys/leases/revoke-force/pki', true],
    ['sys/revoke-prefix/pki', true],
    ['sys/config/cors', true],
    ['sys/plugins/catalog/secret/pki', true],
    ['auth/token/revoke-orphan/abc', true],
    ['auth/token/accessors/', true],
    ['sys/auth', false],
    ['sys/mounts', false],
    ['sys/mounts/pki', false],
    ['sys/mounts/pki/tune', false],
    ['sys/policies/acl', false],
    ['sys/policies/acl/admin', false],
    ['sys/policy/admin', false],
    ['sys/leases/lookup', false],
    ['sys/leases/revoke', false],
    ['sys/leases/renew', false],
    ['sys/capabilities-self', false],
    ['sys/health', false],
    ['auth/token/create', false],
    ['auth/token/lookup-self', false],
    ['pki/root', false],
  ];
  for (const [path, sudo] of cases) assert.equal(isSudoSystemPath(path), sudo, path);
});
