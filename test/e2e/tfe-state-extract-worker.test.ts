import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { INLINE_EXTRACT_MAX_BYTES } from '../../src/tfe/state-versions/extract-state-job.js';
import { extractState } from '../../src/tfe/state-versions/state-extract.js';
import { dbKinds } from '../support/test-db.js';
import { startTestServer } from '../support/test-server.js';
import type { TestServer } from '../support/test-server.js';
import { call, createBody, inlineAttrs, workspace } from './tfe-state-versions-fixture.js';

// A state above INLINE_EXTRACT_MAX_BYTES is extracted in a worker thread, whose lists come
// back as JSON text and are stored as they are; what the API then serves must be exactly
// what the extraction on the event loop gives for the same bytes.

const COUNT = 3000;

function bigState(lineage: string): Buffer {
  const resources = Array.from({ length: COUNT }, (_, i) => ({
    mode: i % 10 === 0 ? 'data' : 'managed',
    type: `aws_thing_${i % 7}`,
    name: `r${i}`,
    ...(i % 3 === 0 ? { module: `module.app["k${i % 5}"].module.sg[${i % 2}]` } : {}),
    provider: `provider["registry.terraform.io/hashicorp/aws${i % 2 ? '' : 'cc'}"]`,
    instances: Array.from({ length: 1 + (i % 3) }, (_, k) => ({ index_key: k, attributes: { id: `id-${i}-${k}` } })),
  }));
  return Buffer.from(JSON.stringify({ version: 4, terraform_version: '1.9.5', serial: 1, lineage, outputs: {}, resources }));
}

for (const kind of dbKinds()) {
  describe(`state versions: extraction of a large state in a worker thread [${kind}]`, () => {
    let srv: TestServer;
    before(async () => {
      srv = await startTestServer(kind);
    });
    after(async () => srv.close());

    it('stores and serves the same resources, modules and providers as the extraction on the event loop', async () => {
      const f = await workspace(srv);
      const bytes = bigState(f.lineage);
      assert.ok(bytes.length > INLINE_EXTRACT_MAX_BYTES, `${bytes.length} bytes`);
      const r = await call(srv, 'POST', `/api/v2/workspaces/${f.wsId}/state-versions`, { body: createBody(inlineAttrs(bytes, 1, f.lineage)) });
      assert.equal(r.status, 201, r.text);
      await srv.deps.worker.runUntilIdle();
      const got = await call(srv, 'GET', `/api/v2/state-versions/${r.json.data.id}`);
      const a = got.json.data.attributes;
      assert.equal(a['resources-processed'], true);
      assert.equal(a['resources-processing-error'], null);
      const expected = await extractState((async function* () {
        yield bytes;
      })());
      assert.ok(expected.ok);
      assert.equal(a.resources.length, COUNT);
      assert.deepEqual(a.resources, expected.value.resources);
      assert.deepEqual(a.modules, expected.value.modules);
      assert.deepEqual(a.providers, expected.value.providers);
      assert.equal(a['billable-rum-count'], expected.value.billableRumCount);
      assert.ok(Object.keys(a.modules).includes('root.app.sg'), JSON.stringify(Object.keys(a.modules)));
    });
  });
}
