import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Validator } from '@seriousme/openapi-schema-validator';
import type { RouteOptions } from 'fastify';
import { dbKinds } from '../support/test-db.js';
import { startTestServer } from '../support/test-server.js';
import type { TestServer } from '../support/test-server.js';

/** `:name` → `{name}`, as the descriptions spell path parameters. */
const openApiPath = (url: string) => url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

async function assertValidOpenApi(doc: unknown, version: RegExp): Promise<void> {
  assert.match(String((doc as { openapi?: unknown }).openapi), version);
  const result = await new Validator().validate(doc as Record<string, unknown>);
  assert.ok(result.valid, JSON.stringify(result.errors, null, 2)?.slice(0, 4000));
}

for (const kind of dbKinds()) {
  describe(`OpenAPI descriptions [${kind}]`, () => {
    let s: TestServer;
    const routes: RouteOptions[] = [];
    before(async () => {
      s = await startTestServer(kind, { onRoute: (r) => routes.push(r) });
    });
    after(async () => s.close());

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
  });
}
