import { it } from 'node:test';
import assert from 'node:assert/strict';
import { Validator } from '@seriousme/openapi-schema-validator';
import type { RouteOptions } from 'fastify';
import { describeWithServer } from '../support/test-server.js';
import { vaultClient } from './vault-http.js';

/** `:name` and a trailing `*name` → `{name}` (a bare `*` → `{path}`), as the descriptions spell path parameters. */
const openApiPath = (url: string) =>
  url
    .replace(/:([A-Za-z0-9_]+)/g, '{$1}')
    .replace(/\*([A-Za-z0-9_]+)$/, '{$1}')
    .replace(/\*$/, '{path}');

async function assertValidOpenApi(doc: unknown, version: RegExp): Promise<void> {
  assert.match(String((doc as { openapi?: unknown }).openapi), version);
  const result = await new Validator().validate(doc as Record<string, unknown>);
  assert.ok(result.valid, JSON.stringify(result.errors, null, 2)?.slice(0, 4000));
}

describeWithServer('OpenAPI descriptions', (s) => {
  const routes: RouteOptions[] = [];

  it('GET /api/v2/openapi.json is a valid OpenAPI 3.1 description of every /api/v2 route', async () => {
    const res = await fetch(`${s.url}/api/v2/openapi.json`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    const doc = (await res.json()) as { paths: Record<string, Record<string, unknown>> };
    await assertValidOpenApi(doc, /^3\.1\./);
    const tfe = routes.filter((r) => r.url.startsWith('/api/v2/'));
    assert.ok(tfe.length > 50, `only ${tfe.length} /api/v2 routes seen`);
    const missing: string[] = [];
    for (const r of tfe) {
      // Fastify adds a HEAD route for every GET; the description lists the GET.
      for (const m of (Array.isArray(r.method) ? r.method : [r.method]).filter((x) => x !== 'HEAD')) {
        const path = openApiPath(r.url.slice('/api/v2'.length));
        if (!doc.paths[path]?.[m.toLowerCase()]) missing.push(`${m} ${r.url}`);
      }
    }
    assert.deepEqual(missing, []);
  });

  it('GET /v1/sys/internal/specs/openapi: every /v1 path for root, only reachable ones for others', async () => {
    const root = vaultClient(s.url, s.rootToken);
    assert.equal((await root('POST', 'sys/mounts/pki-doc', { body: { type: 'pki' } })).status, 204);
    const res = await fetch(`${s.url}/v1/sys/internal/specs/openapi`, { headers: { 'x-vault-token': s.rootToken } });
    assert.equal(res.status, 200);
    const doc = (await res.json()) as { paths: Record<string, Record<string, unknown>> };
    await assertValidOpenApi(doc, /^3\.0\./);
    const pki = s.deps.pki;
    const missing: string[] = [];
    for (const r of pki.mountRoutes()) {
      const path = `/pki-doc/${openApiPath(r.pattern)}`;
      if (!doc.paths[path]) missing.push(path);
    }
    assert.deepEqual(missing, []);
    for (const p of ['/sys/mounts', '/sys/policies/acl/{name}', '/auth/token/create', '/sys/internal/specs/openapi'])
      assert.ok(doc.paths[p], `${p} is described`);
    for (const p of ['/sys/auth', '/sys/auth/{path}']) assert.ok(doc.paths[p], `${p} is described`);
    const issue = doc.paths['/pki-doc/issue/{role}']?.post as {
      requestBody?: { content: Record<string, { schema: { properties: Record<string, unknown> } }> };
    };
    const props = issue.requestBody?.content['application/json']?.schema.properties ?? {};
    assert.deepEqual(props.alt_names, {
      type: 'array',
      items: { type: 'string' },
      description: 'a list, or a comma-separated string',
      default: [],
    });
    assert.equal(props.role, undefined, 'path parameters are not body fields');

    // A token that may only issue from one role sees that path, not the policy or mount paths.
    const policy = 'path "pki-doc/issue/web" { capabilities = ["update"] }';
    assert.equal((await root('PUT', 'sys/policies/acl/doc-issuer', { body: { policy } })).status, 204);
    const made = await root('POST', 'auth/token/create', { body: { policies: ['doc-issuer'] } });
    const token = (made.json as { auth: { client_token: string } }).auth.client_token;
    const limited = await fetch(`${s.url}/v1/sys/internal/specs/openapi`, { headers: { 'x-vault-token': token } });
    const seen = (await limited.json()) as { paths: Record<string, unknown> };
    await assertValidOpenApi(seen, /^3\.0\./);
    assert.ok(seen.paths['/pki-doc/issue/{role}']);
    assert.equal(seen.paths['/sys/policies/acl/{name}'], undefined);
    assert.equal(seen.paths['/pki-doc/roles/{name}'], undefined);
    assert.ok(seen.paths['/auth/token/lookup-self'], 'the default policy reaches lookup-self');

    // Without a token: the unauthenticated paths only.
    const anonymous = (await (await fetch(`${s.url}/v1/sys/internal/specs/openapi`)).json()) as {
      paths: Record<string, unknown>;
    };
    assert.ok(anonymous.paths['/pki-doc/ca/pem'] ?? anonymous.paths['/sys/health']);
    assert.equal(anonymous.paths['/pki-doc/issue/{role}'], undefined);
  });

  it('GET /v1/sys/internal/specs/openapi describes every path of every enabled auth method', async () => {
    const root = vaultClient(s.url, s.rootToken);
    const methods = { approle: 'doc-approle', jwt: 'doc-jwt', cert: 'doc-cert' } as const;
    for (const [type, path] of Object.entries(methods))
      assert.equal((await root('POST', `sys/auth/${path}`, { body: { type } })).status, 204);
    const res = await fetch(`${s.url}/v1/sys/internal/specs/openapi`, { headers: { 'x-vault-token': s.rootToken } });
    const doc = (await res.json()) as { paths: Record<string, Record<string, { requestBody?: unknown }>> };
    await assertValidOpenApi(doc, /^3\.0\./);
    const routes = s.deps.pki.authRoutes();
    const missing: string[] = [];
    for (const [type, path] of Object.entries(methods)) {
      const table = routes[type as keyof typeof methods];
      assert.ok(table.length > 0, `${type} has routes`);
      for (const r of table) {
        const p = `/auth/${path}/${openApiPath(r.pattern)}`;
        if (!doc.paths[p]) missing.push(p);
      }
    }
    assert.deepEqual(missing, []);
    // Logins are open to anyone and say which fields they take.
    const login = doc.paths['/auth/doc-approle/login']?.post as {
      security?: unknown[];
      requestBody?: { content: Record<string, { schema: { properties: Record<string, unknown> } }> };
    };
    assert.deepEqual(login.security, []);
    assert.deepEqual(Object.keys(login.requestBody?.content['application/json']?.schema.properties ?? {}).sort(), [
      'role_id',
      'secret_id',
    ]);
    assert.ok(doc.paths['/auth/doc-jwt/config']?.post?.requestBody, 'auth/<jwt>/config takes a body');
    assert.ok(doc.paths['/auth/doc-cert/certs/{name}']?.post?.requestBody, 'auth/<cert>/certs/{name} takes a body');

    // Without a token: the login paths, not the configuration.
    const anonymous = (await (await fetch(`${s.url}/v1/sys/internal/specs/openapi`)).json()) as {
      paths: Record<string, unknown>;
    };
    assert.ok(anonymous.paths['/auth/doc-jwt/login']);
    assert.ok(anonymous.paths['/auth/doc-cert/login']);
    assert.equal(anonymous.paths['/auth/doc-jwt/config'], undefined);
    assert.equal(anonymous.paths['/auth/doc-approle/role/{role_name}'], undefined);
  });
  return { onRoute: (r) => routes.push(r) };
});
