import { it } from 'node:test';
import assert from 'node:assert/strict';
import { describeWithServer } from '../support/test-server.js';
import type { TestServer } from '../support/test-server.js';
import { call, createBody, inlineAttrs, md5, put, stateFile, workspace } from './tfe-state-versions-fixture.js';
import type { WorkspaceFixture } from './tfe-state-versions-fixture.js';

/** The history of a workspace as stored: positions must run 1..n without gaps. */
async function history(srv: TestServer, wsId: string) {
  const rows = await srv.deps.core.db.kysely
    .selectFrom('tfe_state_versions')
    .select(['id', 'seq', 'serial', 'status'])
    .where('workspace_id', '=', wsId)
    .orderBy('seq')
    .execute();
  const head = await srv.deps.core.db.kysely
    .selectFrom('tfe_state_heads')
    .selectAll()
    .where('workspace_id', '=', wsId)
    .executeTakeFirst();
  return { rows: rows.map((r) => ({ ...r, seq: Number(r.seq), serial: Number(r.serial) })), head };
}

async function current(srv: TestServer, f: WorkspaceFixture) {
  const r = await call(srv, 'GET', `/api/v2/workspaces/${f.wsId}/current-state-version`);
  assert.equal(r.status, 200, r.text);
  return r.json.data;
}

describeWithServer('state versions: concurrent creates', (srv) => {
  it('50 concurrent creates leave one current version and a gap-free history', async () => {
    const f = await workspace(srv);
    const path = `/api/v2/workspaces/${f.wsId}/state-versions`;
    // Mixed serials: some requests must lose the serial check, the rest must line up.
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => {
        const serial = (i * 7) % 50;
        return call(srv, 'POST', path, {
          body: createBody(inlineAttrs(stateFile(serial, f.lineage, `#${i}`), serial, f.lineage)),
        });
      }),
    );
    for (const r of results) assert.ok(r.status === 201 || r.status === 409, `${r.status}: ${r.text}`);
    const created = results.filter((r) => r.status === 201).map((r) => r.json.data);
    assert.ok(created.length >= 1);
    const { rows, head } = await history(srv, f.wsId);
    assert.equal(rows.length, created.length);
    assert.deepEqual(
      rows.map((r) => r.seq),
      rows.map((_, i) => i + 1),
    );
    assert.equal(Number(head?.head_seq), rows.length);
    // Without force, serials never go down along the history.
    for (let i = 1; i < rows.length; i++) assert.ok((rows[i]?.serial ?? 0) >= (rows[i - 1]?.serial ?? 0));
    const last = rows[rows.length - 1];
    assert.equal((await current(srv, f)).id, last?.id);
    assert.equal(head?.current_id, last?.id);
  });

  it('50 concurrent forced creates all succeed in one ordered history', async () => {
    const f = await workspace(srv);
    const path = `/api/v2/workspaces/${f.wsId}/state-versions`;
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        call(srv, 'POST', path, {
          body: createBody(inlineAttrs(stateFile(i, f.lineage), i, f.lineage, { force: true })),
        }),
      ),
    );
    for (const r of results) assert.equal(r.status, 201, r.text);
    const { rows } = await history(srv, f.wsId);
    assert.equal(rows.length, 50);
    assert.deepEqual(
      rows.map((r) => r.seq),
      Array.from({ length: 50 }, (_, i) => i + 1),
    );
    assert.equal(new Set(rows.map((r) => r.id)).size, 50);
    assert.equal((await current(srv, f)).id, rows[49]?.id);
  });

  it('50 concurrent pending creates leave exactly one pending version, the others discarded', async () => {
    const f = await workspace(srv);
    const path = `/api/v2/workspaces/${f.wsId}/state-versions`;
    const bytes = stateFile(1, f.lineage);
    const results = await Promise.all(
      Array.from({ length: 50 }, () =>
        call(srv, 'POST', path, { body: createBody({ serial: 1, md5: md5(bytes), lineage: f.lineage }) }),
      ),
    );
    for (const r of results) assert.equal(r.status, 201, r.text);
    const { rows } = await history(srv, f.wsId);
    assert.equal(rows.length, 50);
    assert.deepEqual(
      rows.map((r) => r.status),
      [...Array<string>(49).fill('discarded'), 'pending'],
    );
    // Nothing is finalized yet, so nothing is current; the upload of the survivor makes it current.
    assert.equal((await call(srv, 'GET', `/api/v2/workspaces/${f.wsId}/current-state-version`)).status, 404);
    const urls = results.map((r) => r.json.data.attributes['hosted-state-upload-url'] as string);
    const uploads = await Promise.all(urls.map((u) => put(u, bytes)));
    assert.deepEqual(
      uploads.map((u) => u.status).sort(),
      [200, ...Array<number>(49).fill(409)],
      'only the surviving pending version takes its upload',
    );
    assert.equal((await current(srv, f)).id, rows[49]?.id);
  });

  it('uploads racing newer creates: the current version is always the newest finalized one', async () => {
    const f = await workspace(srv);
    const path = `/api/v2/workspaces/${f.wsId}/state-versions`;
    for (let serial = 1; serial <= 20; serial += 2) {
      const bytes = stateFile(serial, f.lineage);
      const pending = await call(srv, 'POST', path, {
        body: createBody({ serial, md5: md5(bytes), lineage: f.lineage }),
      });
      assert.equal(pending.status, 201, pending.text);
      // The upload of `serial` and the inline create of `serial + 1` race: whichever commits
      // first, the newer create must end up current and the pending version either finalized
      // (upload first) or discarded (create first, the upload then answers 409).
      const next = stateFile(serial + 1, f.lineage);
      const [up, created] = await Promise.all([
        put(pending.json.data.attributes['hosted-state-upload-url'] as string, bytes),
        call(srv, 'POST', path, { body: createBody(inlineAttrs(next, serial + 1, f.lineage)) }),
      ]);
      assert.equal(created.status, 201, created.text);
      assert.ok(up.status === 200 || up.status === 409, `${up.status} ${up.text}`);
      const { rows, head } = await history(srv, f.wsId);
      const byId = new Map(rows.map((r) => [r.id, r]));
      assert.equal(byId.get(pending.json.data.id)?.status, up.status === 200 ? 'finalized' : 'discarded');
      const newestFinalized = rows.filter((r) => r.status === 'finalized').at(-1);
      assert.equal(head?.current_id, newestFinalized?.id);
      assert.equal(head?.current_id, created.json.data.id);
      assert.equal((await current(srv, f)).id, created.json.data.id);
    }
  });
});
