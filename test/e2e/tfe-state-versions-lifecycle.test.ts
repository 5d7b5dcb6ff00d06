import { it } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../src/shared/clock.js';
import { describeWithServer } from '../support/test-server.js';
import type { TestServer } from '../support/test-server.js';
import {
  assertError,
  call,
  count,
  createBody,
  createInline,
  createPending,
  download,
  inlineAttrs,
  put,
  stateFile,
  toRes,
  workspace,
} from './tfe-state-versions-fixture.js';

const action = (srv: TestServer, id: string, name: string, body?: unknown, token?: string) =>
  call(srv, 'POST', `/api/v2/state-versions/${id}/actions/${name}`, body === undefined ? { token } : { body, token });

async function blobCount(srv: TestServer): Promise<number> {
  const r = await srv.deps.core.db.kysely
    .selectFrom('tfe_state_blobs')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('deleting', '=', 0)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

describeWithServer('state versions: backing data, limits, maintenance', (srv) => {
  const clock = new ManualClock('2026-01-01T00:00:00.000Z');

  it('soft delete, restore and permanent delete follow the transition table', async () => {
    const f = await workspace(srv);
    const { data: v1, bytes: b1 } = await createInline(srv, f, 1);
    const { data: v2 } = await createInline(srv, f, 2);
    const url1 = v1.attributes['hosted-state-download-url'];

    // The current version cannot be soft deleted; a pending one neither.
    assertError(await action(srv, v2.id, 'soft_delete_backing_data'), 400, undefined, /transition not allowed/);
    const soft = await action(srv, v1.id, 'soft_delete_backing_data', {
      data: { type: 'state-versions', attributes: { 'delete-older-than-n-days': 5 } },
    });
    assert.equal(soft.status, 200, soft.text);
    assert.equal(soft.json.data.attributes.status, 'backing_data_soft_deleted');
    assert.equal(soft.json.data.attributes['delete-older-than-n-days'], 5);
    // Reads of the backing data fail clearly; the record stays readable.
    const dl = await call(srv, 'GET', new URL(url1).pathname);
    assertError(dl, 404, undefined, /soft deleted/);
    assert.equal(
      (await call(srv, 'GET', `/api/v2/state-versions/${v1.id}`)).json.data.attributes.status,
      'backing_data_soft_deleted',
    );
    assertError(await action(srv, v1.id, 'soft_delete_backing_data'), 400);

    const restored = await action(srv, v1.id, 'restore_backing_data');
    assert.equal(restored.status, 200);
    assert.equal(restored.json.data.attributes.status, 'finalized');
    assert.ok((await download(srv, url1)).body.equals(b1));
    // Restore of data that is present changes nothing.
    assert.equal((await action(srv, v1.id, 'restore_backing_data')).json.data.attributes.status, 'finalized');

    assertError(await action(srv, v1.id, 'permanently_delete_backing_data'), 400, undefined, /transition not allowed/);
    assert.equal((await action(srv, v1.id, 'soft_delete_backing_data')).status, 200);
    const perm = await action(srv, v1.id, 'permanently_delete_backing_data');
    assert.equal(perm.status, 200);
    assert.equal(perm.json.data.attributes.status, 'backing_data_permanently_deleted');
    assert.equal(perm.json.data.attributes['hosted-state-download-url'], null);
    assertError(await action(srv, v1.id, 'restore_backing_data'), 400, undefined, /transition not allowed/);
    assertError(await action(srv, v1.id, 'permanently_delete_backing_data'), 400);
    assertError(await call(srv, 'GET', new URL(url1).pathname), 404);

    const pending = await createPending(srv, f, 7, stateFile(7, f.lineage));
    assertError(await action(srv, pending.id, 'soft_delete_backing_data'), 400);
    assertError(await action(srv, 'sv-nonexisting', 'restore_backing_data'), 404);
    assertError(await action(srv, v2.id, 'explode_backing_data'), 404);
  });

  it('deletes a blob only when no version references it', async () => {
    const f = await workspace(srv);
    const { data: a } = await createInline(srv, f, 1);
    // Same bytes again (identical re-upload): a second version shares the blob.
    const { data: b } = await createInline(srv, f, 1);
    await createInline(srv, f, 2);
    // Let earlier tests' collections finish first.
    await srv.deps.worker.runUntilIdle();
    const before = await blobCount(srv);
    for (const id of [a.id]) {
      assert.equal((await action(srv, id, 'soft_delete_backing_data')).status, 200);
      assert.equal((await action(srv, id, 'permanently_delete_backing_data')).status, 200);
    }
    await srv.deps.worker.runUntilIdle();
    assert.equal(await blobCount(srv), before, 'still referenced by the second version');
    assert.equal((await download(srv, b.attributes['hosted-state-download-url'])).status, 200);
    assert.equal((await action(srv, b.id, 'soft_delete_backing_data')).status, 200);
    assert.equal((await action(srv, b.id, 'permanently_delete_backing_data')).status, 200);
    await srv.deps.worker.runUntilIdle();
    assert.equal(await blobCount(srv), before - 1);
    // The same content stored again after collection is readable.
    const again = await call(srv, 'POST', `/api/v2/workspaces/${f.wsId}/state-versions`, {
      body: createBody(inlineAttrs(stateFile(1, f.lineage), 1, f.lineage, { force: true })),
    });
    assert.equal(again.status, 201);
    assert.equal((await download(srv, again.json.data.attributes['hosted-state-download-url'])).status, 200);
  });

  it('deleting a workspace deletes its state versions and, once unreferenced, their files', async () => {
    await srv.deps.worker.runUntilIdle();
    const before = await blobCount(srv);
    const f = await workspace(srv);
    const { data: v1 } = await createInline(srv, f, 1, { extra: 'only-here' });
    assert.equal(await blobCount(srv), before + 1);
    const del = await call(srv, 'DELETE', `/api/v2/workspaces/${f.wsId}`);
    assert.equal(del.status, 204, del.text);
    assertError(await call(srv, 'GET', `/api/v2/state-versions/${v1.id}`), 404);
    await srv.deps.worker.runUntilIdle();
    assert.equal(await blobCount(srv), before);
  });

  it('upload URLs: unknown → 404, too large → 413, bad content → 422 and stay pending, expired → 404', async () => {
    const f = await workspace(srv);
    const bytes = stateFile(1, f.lineage);
    const sv = await createPending(srv, f, 1, bytes);
    const up = sv.attributes['hosted-state-upload-url'] as string;
    await srv.deps.worker.runUntilIdle();
    const blobsBefore = await blobCount(srv);
    assertError(await put(`${srv.url}/v1/object/not-a-real-token`, bytes), 404);
    const overLimit = new RegExp(
      String.raw`^upload is larger than the limit of 4096 bytes; raise it with --max-upload-size ` +
        String.raw`\(STRONGROOM_MAX_UPLOAD_SIZE, config key max_upload_size\)$`,
    );
    assertError(await put(up, Buffer.alloc(5000, 0x20)), 413, undefined, overLimit);
    // Without a Content-Length the body is counted as it streams: the same answer.
    const chunked = new ReadableStream<Uint8Array>({
      start(c) {
        for (let i = 0; i < 5; i++) c.enqueue(new Uint8Array(1000).fill(0x20));
        c.close();
      },
    });
    const streamed = await fetch(up, { method: 'PUT', body: chunked, duplex: 'half' } as RequestInit);
    assertError(await toRes(streamed), 413, undefined, overLimit);
    assertError(await put(up, stateFile(1, f.lineage, 'other')), 422, undefined, /MD5/);
    assertError(await put(up, '{"not":"a state"'), 422);
    const show = await call(srv, 'GET', `/api/v2/state-versions/${sv.id}`);
    assert.equal(show.json.data.attributes.status, 'pending');
    assert.equal(show.json.data.attributes['hosted-state-upload-url'], up);
    // Refused content is collected: nothing stays stored.
    await srv.deps.worker.runUntilIdle();
    assert.equal(await blobCount(srv), blobsBefore);
    clock.advance(3601);
    assertError(await put(up, bytes), 404, undefined, /expired/);
    assert.equal(
      (await call(srv, 'GET', `/api/v2/state-versions/${sv.id}`)).json.data.attributes['hosted-state-upload-url'],
      null,
    );
    clock.advance(-3601);
    assert.equal(await count(srv, f), 1);
  });

  it('purges soft-deleted data after the configured days and applies retention', async () => {
    const f = await workspace(srv);
    const { data: v1 } = await createInline(srv, f, 1);
    const { data: v2 } = await createInline(srv, f, 2);
    const { data: v3 } = await createInline(srv, f, 3);
    const { data: v4 } = await createInline(srv, f, 4);
    assert.equal((await action(srv, v1.id, 'soft_delete_backing_data')).status, 200);
    const days2 = { data: { type: 'state-versions', attributes: { 'delete-older-than-n-days': 2 } } };
    assert.equal((await action(srv, v2.id, 'soft_delete_backing_data', days2)).status, 200);
    const maintenance = srv.deps.tfe.jobHandlers['tfe.state-maintenance'];
    assert.ok(maintenance, 'maintenance job handler registered');
    const signal = new AbortController().signal;
    clock.advance(29 * 86400);
    await maintenance(null, { jobId: 'manual', attempt: 1, signal });
    assert.equal(
      (await call(srv, 'GET', `/api/v2/state-versions/${v1.id}`)).json.data.attributes.status,
      'backing_data_soft_deleted',
    );
    assert.equal(
      (await call(srv, 'GET', `/api/v2/state-versions/${v2.id}`)).json.data.attributes.status,
      'backing_data_permanently_deleted',
    );
    clock.advance(2 * 86400);
    await maintenance(null, { jobId: 'manual', attempt: 1, signal });
    assert.equal(
      (await call(srv, 'GET', `/api/v2/state-versions/${v1.id}`)).json.data.attributes.status,
      'backing_data_permanently_deleted',
    );

    // Retention: keep the newest 3 overall (config) and the newest of each workspace; the rest go after 180 days.
    const g = await workspace(srv);
    const { data: other } = await createInline(srv, g, 1);
    clock.advance(181 * 86400);
    const h = await workspace(srv);
    for (let s = 1; s <= 3; s++) await createInline(srv, h, s);
    await maintenance(null, { jobId: 'manual', attempt: 1, signal });
    for (const id of [v1.id, v2.id, v3.id]) assertError(await call(srv, 'GET', `/api/v2/state-versions/${id}`), 404);
    assert.equal(
      (await call(srv, 'GET', `/api/v2/state-versions/${v4.id}`)).status,
      200,
      'newest and current of its workspace',
    );
    assert.equal((await call(srv, 'GET', `/api/v2/state-versions/${other.id}`)).status, 200, 'newest of its workspace');
    assert.equal(await count(srv, h), 3, 'among the newest 3 overall');
    // The listing stays right once retention left holes in the history.
    const list = await call(
      srv,
      'GET',
      `/api/v2/state-versions?filter%5Bworkspace%5D%5Bname%5D=${f.wsName}&filter%5Borganization%5D%5Bname%5D=${f.org}`,
    );
    assert.deepEqual(
      list.json.data.map((d: { id: string }) => d.id),
      [v4.id],
    );
    assert.equal(list.json.meta.pagination['total-count'], 1);
    clock.set('2026-01-01T00:00:00.000Z');
  });
  return {
    clock,
    config: {
      maxUploadSize: 4096,
      stateUploadUrlTtlSeconds: 3600,
      stateSoftDeletePurgeDays: 30,
      stateRetentionKeepLatest: 3,
      stateRetentionMaxAgeDays: 180,
    },
  };
});
