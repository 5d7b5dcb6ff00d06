import { before, it } from 'node:test';
import assert from 'node:assert/strict';
import { defineFields } from '../../src/pki/vault-fields.js';
import { notFound } from '../../src/shared/errors.js';
import type { PkiRoute } from '../../src/pki/pki-route.js';
import { describeWithServer } from '../support/test-server.js';
import { vault, vaultClient } from './vault-http.js';

/** Tiny routes served inside every mount, so the dispatcher can be tested on its own. */
const ECHO_FIELDS = defineFields({
  count: { type: 'int' },
  flag: { type: 'bool' },
  names: { type: 'commaList' },
  ttl: { type: 'duration' },
});
const testRoutes: PkiRoute[] = [
  {
    pattern: 'echo/:name',
    operations: ['read', 'update', 'delete'],
    async handler(ctx) {
      if (ctx.operation === 'delete') return { kind: 'empty' };
      const parsed = ECHO_FIELDS.parse(ctx.body);
      return {
        kind: 'json',
        data: {
          name: ctx.params['name'],
          operation: ctx.operation,
          mount: ctx.mount.path,
          path: ctx.path,
          values: parsed.values,
          accessor: ctx.token?.accessor ?? null,
        },
        warnings: [...parsed.warnings],
      };
    },
  },
  { pattern: 'echo', operations: ['list'], handler: async () => ({ kind: 'json', data: { keys: ['a', 'b'] } }) },
  { pattern: 'empty', operations: ['list'], handler: async () => ({ kind: 'json', data: { keys: [] } }) },
  // Flagged public, but not on Vault's list: the flag alone must not open it.
  {
    pattern: 'public/thing',
    operations: ['read'],
    unauthenticated: true,
    handler: async (ctx) => ({ kind: 'json', data: { token: ctx.token === undefined ? 'none' : 'some' } }),
  },
  {
    pattern: 'unified-crl/pem',
    operations: ['read'],
    handler: async (ctx) => ({ kind: 'json', data: { token: ctx.token === undefined ? 'none' : 'some' } }),
  },
  { pattern: 'guarded', operations: ['update'], sudo: true, handler: async () => ({ kind: 'empty' }) },
  {
    pattern: 'zzissue/:role',
    operations: ['update'],
    handler: async (ctx) => ({ kind: 'json', data: { role: ctx.params['role'] } }),
  },
  {
    pattern: 'zzsign/:role',
    operations: ['update'],
    handler: async (ctx) => ({ kind: 'json', data: { role: ctx.params['role'] } }),
  },
  {
    pattern: 'missing/:x',
    operations: ['read'],
    handler: async () => {
      throw notFound('nothing here');
    },
  },
  // Matches one of Vault's unauthenticated PKI path patterns (unified-ocsp/*) without a flag of its own.
  {
    pattern: 'unified-ocsp/*req',
    operations: ['read'],
    handler: async (ctx) => ({
      kind: 'raw',
      contentType: 'application/ocsp-response',
      body: Buffer.from(ctx.params['req'] ?? ''),
    }),
  },
  {
    pattern: 'patchable/:name',
    operations: ['patch'],
    handler: async (ctx) => ({ kind: 'json', data: { patched: ctx.body } }),
  },
];

describeWithServer('vault dispatcher and ACL', (server) => {
  let root: ReturnType<typeof vaultClient>;
  const tokenWith = async (...policies: string[]): Promise<string> => {
    const r = await root('POST', 'auth/token/create', { body: { policies } });
    assert.equal(r.status, 200, r.text);
    return r.json.auth.client_token as string;
  };
  const writePolicy = async (name: string, policy: string) => {
    const r = await root('PUT', `sys/policies/acl/${name}`, { body: { policy } });
    assert.equal(r.status, 204, r.text);
  };

  before(async () => {
    server.deps.pki.addRoutes(testRoutes);
    root = vaultClient(server.url, server.rootToken);
    assert.equal((await root('POST', 'sys/mounts/acl', { body: { type: 'pki' } })).status, 204);
    assert.equal((await root('POST', 'sys/mounts/team/pki', { body: { type: 'pki' } })).status, 204);
  });

  it('answers with the Vault envelope and accepts the token in all three headers', async () => {
    for (const tokenHeader of ['x-secrets-token', 'x-vault-token', 'bearer'] as const) {
      const r = await vault(server.url, 'GET', 'acl/echo/one', { token: server.rootToken, tokenHeader });
      assert.equal(r.status, 200, tokenHeader);
      assert.match(r.contentType, /^application\/json/);
      assert.deepEqual(Object.keys(r.json).sort(), [
        'auth',
        'data',
        'lease_duration',
        'lease_id',
        'mount_type',
        'renewable',
        'request_id',
        'warnings',
        'wrap_info',
      ]);
      assert.equal(r.json.data.name, 'one');
      assert.equal(r.json.data.mount, 'acl/');
      assert.equal(r.json.data.path, 'echo/one');
      assert.equal(r.json.mount_type, 'pki');
      assert.equal(r.json.warnings, null);
      assert.match(r.json.request_id, /^[0-9a-f-]{36}$/);
    }
  });

  it('routes nested mount paths to the right mount', async () => {
    const r = await root('POST', 'team/pki/echo/x', { body: {} });
    assert.equal(r.status, 200);
    assert.equal(r.json.data.mount, 'team/pki/');
    assert.equal(r.json.data.operation, 'update');
  });

  it('coerces JSON and form bodies the same way and warns about unknown fields', async () => {
    const json = await root('POST', 'acl/echo/x', {
      body: { count: '7', flag: 'true', names: 'a, b', ttl: '1h', extra: 1 },
    });
    assert.equal(json.status, 200);
    assert.deepEqual(json.json.data.values, { count: 7, flag: true, names: ['a', 'b'], ttl: 3600 });
    assert.deepEqual(json.json.warnings, ['Endpoint ignored these unrecognized parameters: [extra]']);
    const form = await root('POST', 'acl/echo/x', {
      form: { count: '7', flag: 't', names: ['a', 'b'], ttl: '3600' },
    });
    assert.equal(form.status, 200);
    assert.deepEqual(form.json.data.values, { count: 7, flag: true, names: ['a', 'b'], ttl: 3600 });
    // curl -d sends JSON labelled as a form; Vault reads it as JSON.
    const curlStyle = await root('POST', 'acl/echo/x', {
      body: { count: 4 },
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    assert.equal(curlStyle.status, 200, curlStyle.text);
    assert.equal(curlStyle.json.data.values.count, 4);
    // JSON sent without a JSON content type is still JSON, as in Vault.
    const untyped = await root('POST', 'acl/echo/x', {
      body: { count: 3 },
      headers: { 'content-type': 'text/plain' },
    });
    assert.equal(untyped.json.data.values.count, 3);
    // GET takes its parameters from the query string.
    const get = await root('GET', 'acl/echo/x?count=5');
    assert.equal(get.json.data.values.count, 5);
  });

  it('rejects bad input with 400 and the reason', async () => {
    let r = await root('POST', 'acl/echo/x', { body: { count: 'many' } });
    assert.equal(r.status, 400);
    assert.match(r.json.errors[0], /count/);
    r = await root('POST', 'acl/echo/x', { body: '{"count": ', headers: { 'content-type': 'application/json' } });
    assert.equal(r.status, 400);
    r = await vault(server.url, 'POST', 'acl/echo/x', { token: server.rootToken, body: [1, 2] });
    assert.equal(r.status, 400);
    r = await root('GET', 'acl/echo?list=maybe');
    assert.equal(r.status, 400);
    assert.match(r.json.errors[0], /list/);
    // Response wrapping is refused, not ignored: the answer would otherwise come back unwrapped.
    r = await root('POST', 'acl/echo/x', { body: { count: 1 }, headers: { 'x-vault-wrap-ttl': '60s' } });
    assert.equal(r.status, 400);
    assert.deepEqual(r.json, { errors: ['response wrapping (X-Vault-Wrap-TTL) is not supported by this server'] });
    r = await vault(server.url, 'POST', 'acl/echo/x', {
      token: 'not-a-token',
      body: {},
      headers: { 'x-vault-wrap-ttl': '60s' },
    });
    assert.equal(r.status, 403, 'the token is checked first');
  });

  it('answers 404 with an empty error list for unknown paths and empty reads, 405 for other operations', async () => {
    let r = await root('GET', 'acl/no/such/path');
    assert.equal(r.status, 404);
    assert.deepEqual(r.json, { errors: [] });
    r = await root('GET', 'nomount/x');
    assert.equal(r.status, 404);
    assert.deepEqual(r.json, { errors: ['no handler for route "nomount/x". route entry not found.'] });
    r = await root('GET', 'acl/missing/1');
    assert.equal(r.status, 404);
    assert.deepEqual(r.json, { errors: [] });
    r = await root('LIST', 'acl/empty');
    assert.equal(r.status, 404);
    assert.deepEqual(r.json, { errors: [] });
    r = await root('DELETE', 'acl/zzissue/web');
    assert.equal(r.status, 405);
    assert.equal(r.json.errors.length, 1);
    r = await root('PATCH', 'acl/patchable/web', { body: { ttl: '1h' } });
    assert.equal(r.status, 415);
    r = await root('PATCH', 'acl/patchable/web', {
      body: { ttl: '1h' },
      headers: { 'content-type': 'application/merge-patch+json' },
    });
    assert.equal(r.status, 200);
    assert.deepEqual(r.json.data.patched, { ttl: '1h' });
    // Without a token an unknown path is forbidden, as in Vault.
    r = await vault(server.url, 'GET', 'nomount/x');
    assert.equal(r.status, 403);
    assert.deepEqual(r.json, { errors: ['permission denied', 'missing client token'] });
  });

  it('treats the LIST method and ?list=true alike', async () => {
    await writePolicy('lister', 'path "acl/echo" { capabilities = ["list"] }');
    const t = await tokenWith('lister');
    const viaMethod = await vault(server.url, 'LIST', 'acl/echo', { token: t });
    assert.equal(viaMethod.status, 200, viaMethod.text);
    assert.deepEqual(viaMethod.json.data.keys, ['a', 'b']);
    const viaQuery = await vault(server.url, 'GET', 'acl/echo/?list=true', { token: t });
    assert.equal(viaQuery.status, 200);
    assert.deepEqual(viaQuery.json.data.keys, ['a', 'b']);
    // A plain read of the same path is another capability.
    const read = await vault(server.url, 'GET', 'acl/echo', { token: t });
    assert.equal(read.status, 403);
  });

  it('grants each capability separately', async () => {
    await writePolicy('cap-read', 'path "acl/echo/*" { capabilities = ["read"] }');
    await writePolicy('cap-update', 'path "acl/echo/*" { capabilities = ["update"] }');
    await writePolicy('cap-create', 'path "acl/echo/*" { capabilities = ["create"] }');
    await writePolicy('cap-delete', 'path "acl/echo/*" { capabilities = ["delete"] }');
    await writePolicy('cap-list', 'path "acl/echo/*" { capabilities = ["list"] }');
    const expect: Record<string, Record<string, number>> = {
      'cap-read': { GET: 200, POST: 403, DELETE: 403, LIST: 403 },
      'cap-update': { GET: 403, POST: 200, DELETE: 403, LIST: 403 },
      // PKI paths have no existence check, so every write is an update.
      'cap-create': { GET: 403, POST: 403, DELETE: 403, LIST: 403 },
      'cap-delete': { GET: 403, POST: 403, DELETE: 204, LIST: 403 },
      // Allowed, but the path has no list operation.
      'cap-list': { GET: 403, POST: 403, DELETE: 403, LIST: 405 },
    };
    for (const [policy, byMethod] of Object.entries(expect)) {
      const t = await tokenWith(policy);
      for (const [method, status] of Object.entries(byMethod)) {
        const r = await vault(server.url, method, 'acl/echo/x', {
          token: t,
          ...(method === 'POST' ? { body: {} } : {}),
        });
        assert.equal(r.status, status, `${policy} ${method}: ${r.text}`);
      }
    }
  });

  it('matches + segments and * prefixes, with the most specific rule winning', async () => {
    await writePolicy(
      'glob',
      [
        'path "acl/+/web" { capabilities = ["update"] }',
        'path "acl/echo/*" { capabilities = ["read"] }',
        'path "acl/echo/secret*" { capabilities = ["deny"] }',
        'path "acl/echo/open" { capabilities = ["read", "update"] }',
      ].join('\n'),
    );
    const t = await tokenWith('glob');
    const call = (method: string, path: string) =>
      vault(server.url, method, path, { token: t, ...(method === 'POST' ? { body: {} } : {}) });
    assert.equal((await call('POST', 'acl/zzissue/web')).status, 200);
    assert.equal((await call('POST', 'acl/zzsign/web')).status, 200);
    assert.equal((await call('POST', 'acl/zzissue/api')).status, 403);
    assert.equal((await call('GET', 'acl/echo/anything')).status, 200);
    assert.equal((await call('POST', 'acl/echo/anything')).status, 403);
    assert.equal((await call('GET', 'acl/echo/secret-1')).status, 403);
    assert.equal((await call('POST', 'acl/echo/open')).status, 200);
    // The mount path is part of the ACL path: another mount is not covered.
    assert.equal((await call('GET', 'team/pki/echo/anything')).status, 403);
  });

  it('lets deny win when several policies name the same path', async () => {
    await writePolicy('allow-x', 'path "acl/echo/x" { capabilities = ["read", "update"] }');
    await writePolicy('deny-x', 'path "acl/echo/x" { capabilities = ["deny"] }');
    const both = await tokenWith('allow-x', 'deny-x');
    assert.equal((await vault(server.url, 'GET', 'acl/echo/x', { token: both })).status, 403);
    const allowOnly = await tokenWith('allow-x');
    assert.equal((await vault(server.url, 'GET', 'acl/echo/x', { token: allowOnly })).status, 200);
  });

  it('enforces allowed, denied and required parameters on the request data', async () => {
    await writePolicy(
      'params-allowed',
      'path "acl/echo/*" {\n  capabilities = ["update"]\n  allowed_parameters = {\n    "count" = ["1", ' +
        '"2"]\n    "names" = []\n  }\n}',
    );
    await writePolicy(
      'params-denied',
      'path "acl/echo/*" {\n  capabilities = ["update"]\n  denied_parameters = { "flag" = [] }\n  ' +
        'required_parameters = ["count"]\n}',
    );
    const allowed = await tokenWith('params-allowed');
    const denied = await tokenWith('params-denied');
    const post = async (token: string, body: Record<string, unknown>) =>
      (await vault(server.url, 'POST', 'acl/echo/p', { token, body })).status;
    assert.equal(await post(allowed, { count: '1' }), 200);
    assert.equal(await post(allowed, { count: '3' }), 403);
    assert.equal(await post(allowed, { names: 'anything' }), 200);
    assert.equal(await post(allowed, { flag: 'true' }), 403);
    assert.equal(await post(denied, { count: '5' }), 200);
    assert.equal(await post(denied, { count: '5', flag: 'true' }), 403);
    assert.equal(await post(denied, {}), 403);
  });

  it('accepts JSON policies', async () => {
    await writePolicy('json-pol', JSON.stringify({ path: { 'acl/echo/j': { capabilities: ['read'] } } }));
    const t = await tokenWith('json-pol');
    assert.equal((await vault(server.url, 'GET', 'acl/echo/j', { token: t })).status, 200);
    assert.equal((await vault(server.url, 'GET', 'acl/echo/k', { token: t })).status, 403);
  });

  it('requires sudo on root-protected paths', async () => {
    await writePolicy(
      'no-sudo',
      'path "acl/root" { capabilities = ["delete"] }\npath "acl/guarded" { capabilities = ["update"] }',
    );
    await writePolicy(
      'with-sudo',
      'path "acl/root" { capabilities = ["delete", "sudo"] }\npath "acl/guarded" { capabilities = ["update", "sudo"] }',
    );
    const plain = await tokenWith('no-sudo');
    const sudo = await tokenWith('with-sudo');
    // `root` is sudo-protected by Vault's list whatever module serves it.
    assert.equal((await vault(server.url, 'DELETE', 'acl/root', { token: plain })).status, 403);
    assert.notEqual((await vault(server.url, 'DELETE', 'acl/root', { token: sudo })).status, 403);
    assert.equal((await vault(server.url, 'POST', 'acl/guarded', { token: plain, body: {} })).status, 403);
    assert.equal((await vault(server.url, 'POST', 'acl/guarded', { token: sudo, body: {} })).status, 204);
  });

  it('serves unauthenticated paths without a token, even with a bad one', async () => {
    let r = await vault(server.url, 'GET', 'acl/unified-crl/pem', { token: 'garbage' });
    assert.equal(r.status, 200);
    assert.equal(r.json.data.token, 'none');
    // Only Vault's list of unauthenticated paths opens a path, never a route's own flag.
    r = await vault(server.url, 'GET', 'acl/public/thing');
    assert.equal(r.status, 403);
    r = await vault(server.url, 'GET', 'acl/public/thing', { token: server.rootToken });
    assert.equal(r.status, 200);
    assert.equal(r.json.data.token, 'some');
    r = await vault(server.url, 'GET', 'acl/unified-ocsp/MEow/Ab+c');
    assert.equal(r.status, 200);
    assert.equal(r.contentType, 'application/ocsp-response');
    assert.equal(r.text, 'MEow/Ab+c');
    r = await vault(server.url, 'GET', 'acl/echo/x');
    assert.equal(r.status, 403);
    assert.deepEqual(r.json, { errors: ['permission denied', 'missing client token'] });
  });

  it('reports capabilities with sys/capabilities-self', async () => {
    await writePolicy('caps', 'path "acl/echo/*" { capabilities = ["read", "list"] }');
    const t = await tokenWith('caps');
    const r = await vault(server.url, 'POST', 'sys/capabilities-self', {
      token: t,
      body: { paths: ['acl/echo/x', 'acl/other'] },
    });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json.data['acl/echo/x'], ['list', 'read']);
    assert.deepEqual(r.json.data['acl/other'], ['deny']);
    const rootCaps = await root('POST', 'sys/capabilities-self', { body: { path: 'anything' } });
    assert.deepEqual(rootCaps.json.data.capabilities, ['root']);
    // sys/capabilities inspects another token without spending its uses.
    const once = (await root('POST', 'auth/token/create', { body: { policies: ['caps'], num_uses: 1 } })).json.auth
      .client_token as string;
    const other = await root('POST', 'sys/capabilities', { body: { token: once, paths: 'acl/echo/x' } });
    assert.deepEqual(other.json.capabilities, ['list', 'read']);
    assert.equal((await vault(server.url, 'GET', 'acl/echo/x', { token: once })).status, 200);
    assert.equal((await vault(server.url, 'GET', 'acl/echo/x', { token: once })).status, 403);
  });

  it('manages policies: list, read, HCL errors, built-ins and the legacy endpoints', async () => {
    await writePolicy('Mixed-Case', 'path "a/*" { capabilities = ["read"] }');
    let r = await root('LIST', 'sys/policies/acl');
    assert.equal(r.status, 200);
    assert.ok(r.json.data.keys.includes('mixed-case'));
    assert.ok(r.json.data.keys.includes('default'));
    assert.ok(r.json.data.keys.includes('root'));
    r = await root('GET', 'sys/policies/acl/mixed-case');
    assert.deepEqual(r.json.data, { name: 'mixed-case', policy: 'path "a/*" { capabilities = ["read"] }' });
    r = await root('GET', 'sys/policies/acl/default');
    assert.match(r.json.data.policy, /auth\/token\/lookup-self/);
    r = await root('PUT', 'sys/policies/acl/broken', { body: { policy: 'path "a" { capabilities = ["read"' } });
    assert.equal(r.status, 400);
    assert.ok(r.json.errors[0].length > 0);
    r = await root('PUT', 'sys/policies/acl/bad-cap', { body: { policy: 'path "a" { capabilities = ["fly"] }' } });
    assert.equal(r.status, 400);
    r = await root('PUT', 'sys/policies/acl/empty', { body: {} });
    assert.equal(r.status, 400);
    r = await root('PUT', 'sys/policies/acl/root', { body: { policy: 'path "a" { capabilities = ["read"] }' } });
    assert.equal(r.status, 400);
    r = await root('DELETE', 'sys/policies/acl/default');
    assert.equal(r.status, 400);
    r = await root('GET', 'sys/policies/acl/nope');
    assert.equal(r.status, 404);
    assert.deepEqual(r.json, { errors: [] });
    // base64 of the text is accepted too.
    r = await root('PUT', 'sys/policies/acl/b64', {
      body: { policy: Buffer.from('path "b/*" { capabilities = ["list"] }').toString('base64') },
    });
    assert.equal(r.status, 204);
    r = await root('GET', 'sys/policies/acl/b64');
    assert.equal(r.json.data.policy, 'path "b/*" { capabilities = ["list"] }');
    r = await root('DELETE', 'sys/policies/acl/b64');
    assert.equal(r.status, 204);
    assert.equal((await root('GET', 'sys/policies/acl/b64')).status, 404);

    r = await root('PUT', 'sys/policy/legacy', { body: { rules: 'path "l/*" { capabilities = ["read"] }' } });
    assert.equal(r.status, 204);
    r = await root('GET', 'sys/policy/legacy');
    assert.equal(r.json.rules, 'path "l/*" { capabilities = ["read"] }');
    r = await root('GET', 'sys/policy');
    assert.ok(r.json.policies.includes('legacy'));
  });

  it('uses create or update on policy writes depending on existence', async () => {
    await writePolicy('creator', 'path "sys/policies/acl/*" { capabilities = ["create"] }');
    const t = await tokenWith('creator');
    let r = await vault(server.url, 'PUT', 'sys/policies/acl/fresh', {
      token: t,
      body: { policy: 'path "x" { capabilities = ["read"] }' },
    });
    assert.equal(r.status, 204, r.text);
    r = await vault(server.url, 'PUT', 'sys/policies/acl/fresh', {
      token: t,
      body: { policy: 'path "y" { capabilities = ["read"] }' },
    });
    assert.equal(r.status, 403);
  });

  it('serves health and seal status without a token', async () => {
    let r = await vault(server.url, 'GET', 'sys/health');
    assert.equal(r.status, 200);
    assert.equal(r.json.initialized, true);
    assert.equal(r.json.sealed, false);
    assert.equal(r.json.standby, false);
    assert.equal(typeof r.json.server_time_utc, 'number');
    assert.match(r.json.version, /^1\.\d+\.\d+/);
    r = await vault(server.url, 'HEAD', 'sys/health');
    assert.equal(r.status, 200);
    assert.equal(r.text, '');
    r = await vault(server.url, 'GET', 'sys/health?activecode=299');
    assert.equal(r.status, 299);
    r = await root('GET', 'sys/auth');
    assert.equal(r.json.data['token/'].type, 'token');
    r = await vault(server.url, 'GET', 'sys/seal-status');
    assert.equal(r.status, 200);
    assert.equal(r.json.sealed, false);
    assert.equal(r.json.initialized, true);
  });
});
