import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { describeWithServer, startTestServer } from '../support/test-server.js';
import type { TestServer } from '../support/test-server.js';
import { assertError, call, createPending, download, put, stateFile, workspace } from './tfe-state-versions-fixture.js';
import { until } from '../support/wait.js';

/**
 * Disk limits of the upload URLs: below the data directory's free-space floor an upload gets
 * 507 and nothing is stored (the floor is set above the free space, so no disk is filled);
 * past the concurrent-upload limit it gets 429. Either way the version stays pending and its
 * URL works once the condition is gone.
 */

/** An upload whose body stays open until `finish` is called. */
function openUpload(url: string, first: Buffer) {
  const u = new URL(url);
  let resolveStatus!: (s: number) => void;
  const status = new Promise<number>((r) => (resolveStatus = r));
  const req = request(
    { host: u.hostname, port: u.port, path: u.pathname, method: 'PUT', headers: { 'transfer-encoding': 'chunked' } },
    (res) => {
      res.resume();
      resolveStatus(res.statusCode ?? 0);
    },
  );
  req.write(first);
  return {
    status,
    finish(rest: Buffer) {
      req.end(rest);
      return status;
    },
  };
}

async function readiness(srv: { url: string }) {
  const r = await fetch(`${srv.url}/readyz`);
  assert.equal(r.status, 200, 'low disk space stops uploads only, not readiness');
  return ((await r.json()) as { storage: Record<string, unknown> }).storage;
}

// 2^60 bytes is more than any test machine has free: every upload is below the floor.
describeWithServer('disk limits of state uploads', { config: { minFreeSpace: 2 ** 60 } }, (full, kind) => {
  let roomy: TestServer;
  before(async () => {
    roomy = await startTestServer(kind, {
      sameDatabaseAs: full,
      config: { minFreeSpace: 0, maxConcurrentUploads: 1 },
    });
  });
  after(async () => roomy.close());

  it('refuses uploads below the free-space floor with 507, the version pending and its URL usable', async () => {
    const f = await workspace(full);
    const bytes = stateFile(1, f.lineage);
    const sv = await createPending(full, f, 1, bytes);
    const url = sv.attributes['hosted-state-upload-url'] as string;

    const refused = await put(url, bytes);
    assertError(refused, 507, undefined, /not enough free space in the data directory.*min_free_space/);
    assert.equal(refused.json.errors[0].title, 'insufficient storage');
    // Without Content-Length as well (a chunked body).
    const chunked = openUpload(url, bytes.subarray(0, 10));
    assert.equal(await chunked.finish(bytes.subarray(10)), 507);

    const shown = await call(full, 'GET', `/api/v2/state-versions/${sv.id}`);
    assert.equal(shown.json.data.attributes.status, 'pending');

    const storage = await readiness(full);
    assert.equal(storage.uploads, 'refused: free space below min_free_space');
    assert.equal(storage.min_free_bytes, 2 ** 60);
    assert.ok((storage.data_dir_free_bytes as number) > 0);
    const metrics = (await (await fetch(`${full.url}/metrics`)).text())
      .split('\n')
      .filter((l) => /^strongroom_(uploads|data_dir)_/.test(l));
    assert.ok(metrics.includes('strongroom_uploads_accepted 0'), metrics.join('\n'));
    assert.ok(metrics.includes(`strongroom_data_dir_min_free_bytes ${2 ** 60}`), metrics.join('\n'));
    assert.ok(
      metrics.some((l) => /^strongroom_data_dir_free_bytes [1-9]\d*$/.test(l)),
      metrics.join('\n'),
    );

    // The same URL on a node with room: accepted, and the version is finalized.
    const there = url.replace(full.url, roomy.url);
    assert.equal((await put(there, bytes)).status, 200);
    assert.equal((await readiness(roomy)).uploads, 'accepted');
    const after = await call(roomy, 'GET', `/api/v2/state-versions/${sv.id}`);
    assert.equal(after.json.data.attributes.status, 'finalized');
    const got = await download(roomy, after.json.data.attributes['hosted-state-download-url'] as string);
    assert.deepEqual(got.body, bytes);
  });

  it('refuses an upload past max_concurrent_uploads with 429 and Retry-After', async () => {
    const f = await workspace(roomy);
    const a = stateFile(1, f.lineage);
    const svA = await createPending(roomy, f, 1, a);
    const first = openUpload(svA.attributes['hosted-state-upload-url'] as string, a.subarray(0, 10));
    await until('the first upload to stream', async () => (await readiness(roomy)).uploads_in_progress === 1, 30_000);

    const g = await workspace(roomy);
    const b = stateFile(1, g.lineage);
    const svB = await createPending(roomy, g, 1, b);
    const urlB = svB.attributes['hosted-state-upload-url'] as string;
    const refused = await put(urlB, b);
    assertError(refused, 429, undefined, /already receives 1 uploads at once \(max_concurrent_uploads\)/);
    assert.equal(refused.headers.get('retry-after'), '1');

    assert.equal(await first.finish(a.subarray(10)), 200);
    await until('the first upload to end', async () => (await readiness(roomy)).uploads_in_progress === 0, 30_000);
    assert.equal((await put(urlB, b)).status, 200, 'the refused URL still works');
  });
});
