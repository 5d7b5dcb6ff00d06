import { openBuffer } from '../../src/secrets/content-cipher.js';
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describeWithServer } from '../support/test-server.js';
import type { TestServer } from '../support/test-server.js';
import { INLINE_EXTRACT_MAX_BYTES } from '../../src/tfe/state-versions/extract-state-job.js';
import { extractState } from '../../src/tfe/state-versions/state-extract.js';
import {
  b64,
  call,
  createBody,
  createInline,
  download,
  inlineAttrs,
  stateFile,
  workspace,
} from './tfe-state-versions-fixture.js';

// States sent inline at creation up to state_inline_max_size are kept in tfe_state_blobs.data,
// in the version's own commit; larger ones go to the blob store (decision 0015).

const LIMIT = 4096;

const sha256 = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

async function blobRow(srv: TestServer, sha: string) {
  return srv.deps.core.db.kysely
    .selectFrom('tfe_state_blobs')
    .select(['deleting', 'data', 'size'])
    .where('sha256', '=', sha)
    .executeTakeFirst();
}

// A state above INLINE_EXTRACT_MAX_BYTES is extracted in a worker thread, whose lists come back as JSON text and are
// stored as they are (decision 0020); the API must then serve exactly what the event-loop extraction gives.
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
  return Buffer.from(
    JSON.stringify({ version: 4, terraform_version: '1.9.5', serial: 1, lineage, outputs: {}, resources }),
  );
}

describeWithServer(
  'state versions: small states stored with their version',
  { config: { stateInlineMaxSize: LIMIT } },
  (srv) => {
    it('keeps a small state and JSON state in the database, a large one in the blob store; reads both', async () => {
      const f = await workspace(srv);
      const small = stateFile(1, f.lineage);
      assert.ok(small.length <= LIMIT);
      const json = Buffer.from(JSON.stringify({ format_version: '1.0', values: { outputs: {} } }));
      const r = await call(srv, 'POST', `/api/v2/workspaces/${f.wsId}/state-versions`, {
        body: createBody(inlineAttrs(small, 1, f.lineage, { 'json-state': b64(json) })),
      });
      assert.equal(r.status, 201, r.text);
      for (const bytes of [small, json]) {
        const row = await blobRow(srv, sha256(bytes));
        assert.ok(row?.data, 'bytes are in the row');
        const stored = Buffer.from(row.data);
        assert.ok(!stored.includes(bytes.subarray(0, 32)), 'sealed, not in plain text');
        assert.ok((await openBuffer(stored, srv.deps.core.sealing.lookup)).equals(bytes), 'they open to the state');
        assert.equal(Number(row?.size), bytes.length);
        assert.equal(await srv.deps.core.blobs.stat(sha256(bytes)), undefined, 'and not in the blob store');
      }
      assert.ok((await download(srv, r.json.data.attributes['hosted-state-download-url'])).body.equals(small));
      assert.ok((await download(srv, r.json.data.attributes['hosted-json-state-download-url'])).body.equals(json));
      await srv.deps.worker.runUntilIdle();
      const extracted = await call(srv, 'GET', `/api/v2/state-versions/${r.json.data.id}?include=outputs`);
      assert.equal(extracted.json.data.attributes['resources-processed'], true);
      assert.equal(extracted.json.data.attributes.resources.length, 2, 'extraction read the inline bytes');

      const { data: big, bytes: bigBytes } = await createInline(srv, f, 2, { extra: 'x'.repeat(LIMIT) });
      assert.ok(bigBytes.length > LIMIT);
      const bigRow = await blobRow(srv, sha256(bigBytes));
      assert.equal(bigRow?.data ?? null, null, 'no bytes in the row');
      assert.equal((await srv.deps.core.blobs.stat(sha256(bigBytes)))?.size, bigBytes.length);
      assert.ok((await download(srv, big.attributes['hosted-state-download-url'])).body.equals(bigBytes));

      const diff = await call(srv, 'GET', `/api/v2/state-versions/${big.id}/diff?against=${r.json.data.id}`);
      assert.equal(diff.status, 200, diff.text);
    });

    it('collects unreferenced inline bytes and takes the same content again', async () => {
      const f = await workspace(srv);
      const { data: v1, bytes } = await createInline(srv, f, 1, { extra: 'collect-me' });
      await createInline(srv, f, 2, { extra: 'collect-me' });
      for (const a of ['soft_delete_backing_data', 'permanently_delete_backing_data']) {
        assert.equal((await call(srv, 'POST', `/api/v2/state-versions/${v1.id}/actions/${a}`)).status, 200);
      }
      await srv.deps.worker.runUntilIdle();
      const gone = await blobRow(srv, sha256(bytes));
      assert.equal(gone?.deleting, 1);
      assert.equal(gone?.data ?? null, null, 'the bytes went with the collection');

      const again = await call(srv, 'POST', `/api/v2/workspaces/${f.wsId}/state-versions`, {
        body: createBody(inlineAttrs(bytes, 1, f.lineage, { force: true })),
      });
      assert.equal(again.status, 201, again.text);
      assert.equal((await blobRow(srv, sha256(bytes)))?.deleting, 0);
      assert.ok((await download(srv, again.json.data.attributes['hosted-state-download-url'])).body.equals(bytes));
    });

    it('extracts a large state in a worker thread, storing what the event-loop extraction gives', async () => {
      const f = await workspace(srv);
      const bytes = bigState(f.lineage);
      assert.ok(bytes.length > INLINE_EXTRACT_MAX_BYTES, `${bytes.length} bytes`);
      const r = await call(srv, 'POST', `/api/v2/workspaces/${f.wsId}/state-versions`, {
        body: createBody(inlineAttrs(bytes, 1, f.lineage)),
      });
      assert.equal(r.status, 201, r.text);
      await srv.deps.worker.runUntilIdle();
      const got = await call(srv, 'GET', `/api/v2/state-versions/${r.json.data.id}`);
      const a = got.json.data.attributes;
      assert.equal(a['resources-processed'], true);
      assert.equal(a['resources-processing-error'], null);
      const expected = await extractState(
        (async function* () {
          yield bytes;
        })(),
      );
      assert.ok(expected.ok);
      assert.equal(a.resources.length, COUNT);
      assert.deepEqual(a.resources, expected.value.resources);
      assert.deepEqual(a.modules, expected.value.modules);
      assert.deepEqual(a.providers, expected.value.providers);
      assert.equal(a['billable-rum-count'], expected.value.billableRumCount);
      assert.ok(Object.keys(a.modules).includes('root.app.sg'), JSON.stringify(Object.keys(a.modules)));
    });
  },
);
