import { afterEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../src/config.js';
import type { Config } from '../../src/config.js';
import type { DatabaseKind } from '../../src/db/database.js';
import { ManualClock } from '../../src/shared/clock.js';
import { dbKinds } from '../support/test-db.js';
import { startTestServer } from '../support/test-server.js';
import type { TestServer } from '../support/test-server.js';
import {
  assertError,
  call,
  count,
  createInline,
  createPending,
  download,
  stateFile,
  workspace,
} from './tfe-state-versions-fixture.js';
import type { Res, WorkspaceFixture } from './tfe-state-versions-fixture.js';

const DAY = 86_400;

const action = (srv: TestServer, id: string, name: string) =>
  call(srv, 'POST', `/api/v2/state-versions/${id}/actions/${name}`);

async function status(srv: TestServer, id: string): Promise<number> {
  return (await call(srv, 'GET', `/api/v2/state-versions/${id}`)).status;
}

/** Output rows stored for a version, read from the database: what no answer may show is also gone. */
async function storedOutputs(srv: TestServer, id: string): Promise<number> {
  const r = await srv.deps.core.db.kysely
    .selectFrom('tfe_state_version_outputs')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('state_version_id', '=', id)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

function listQuery(f: WorkspaceFixture, include?: string): string {
  const q = new URLSearchParams({ 'filter[workspace][name]': f.wsName, 'filter[organization][name]': f.org });
  if (include) q.set('include', include);
  return `/api/v2/state-versions?${q}`;
}

function includedOutputIds(r: Res): string[] {
  return ((r.json.included ?? []) as Array<{ type: string; id: string }>)
    .filter((i) => i.type === 'state-version-outputs')
    .map((i) => i.id);
}

for (const kind of dbKinds()) {
  describe(`state versions: retention and deleted backing data [${kind}]`, () => {
    let srv: TestServer | undefined;
    afterEach(async () => {
      await srv?.close();
      srv = undefined;
    });

    /** A server of its own (retention looks at every workspace) whose jobs run only through `maintain`. */
    async function start(clock: ManualClock, config: Partial<Config> = {}): Promise<TestServer> {
      srv = await startTestServer(kind as DatabaseKind, { clock, config });
      return srv;
    }

    /** Moves the clock and lets the job worker run what is due (the scheduled maintenance job among it). */
    async function maintain(s: TestServer, clock: ManualClock, seconds: number): Promise<void> {
      clock.advance(seconds);
      assert.ok((await s.deps.worker.runUntilIdle()) > 0, 'the maintenance job ran');
    }

    /** An inline version, one second after the previous write (so creation times order the versions). */
    async function inline(s: TestServer, clock: ManualClock, f: WorkspaceFixture, serial: number) {
      clock.advance(1);
      return (await createInline(s, f, serial)).data as { id: string; attributes: Record<string, unknown> };
    }

    async function pending(s: TestServer, clock: ManualClock, f: WorkspaceFixture, serial: number) {
      clock.advance(1);
      return (await createPending(s, f, serial, stateFile(serial, f.lineage))) as { id: string };
    }

    it('keeps the newest state of a workspace whose newest version is a pending upload, which may go', async () => {
      const clock = new ManualClock('2026-01-01T00:00:00.000Z');
      const s = await start(clock, { stateRetentionKeepLatest: 1, stateRetentionMaxAgeDays: 180 });
      const p = await workspace(s);
      const p1 = await inline(s, clock, p, 1);
      const p2 = await inline(s, clock, p, 2);
      const p3 = await pending(s, clock, p, 3);
      const p4 = await pending(s, clock, p, 4);
      // The newest state overall is in another workspace, so nothing of `p` is among the newest kept.
      const q = await workspace(s);
      const q1 = await inline(s, clock, q, 1);
      await s.deps.worker.runUntilIdle();

      // Just inside the age limit nothing goes.
      await maintain(s, clock, 180 * DAY - 60);
      assert.equal(await count(s, p), 4);

      await maintain(s, clock, 2 * DAY);
      assertError(await call(s, 'GET', `/api/v2/state-versions/${p1.id}`), 404);
      assertError(await call(s, 'GET', `/api/v2/state-versions/${p3.id}`), 404, undefined, /not found/);
      // p2 holds the last state the workspace has: it stays readable, outputs included.
      const kept = await call(s, 'GET', `/api/v2/state-versions/${p2.id}`);
      assert.equal(kept.status, 200, kept.text);
      assert.equal(kept.json.data.attributes.status, 'finalized');
      const dl = await download(s, kept.json.data.attributes['hosted-state-download-url'] as string);
      assert.equal(dl.status, 200);
      assert.deepEqual(dl.body, stateFile(2, p.lineage));
      const outs = await call(s, 'GET', `/api/v2/state-versions/${p2.id}/outputs`);
      assert.equal(outs.status, 200, outs.text);
      assert.equal(outs.json.data.length, 2);
      // p2 is also the current version (the newest finalized one). The pending p4 was never
      // current, holds nothing and its upload URLs expired long ago: retention removes it.
      const cur = await call(s, 'GET', `/api/v2/workspaces/${p.wsId}/current-state-version`);
      assert.equal(cur.status, 200, cur.text);
      assert.equal(cur.json.data.id, p2.id);
      assertError(await call(s, 'GET', `/api/v2/state-versions/${p4.id}`), 404);
      assert.equal(await count(s, p), 1);
      // Nothing pending is left, so a normal unlock works again.
      assert.equal((await call(s, 'POST', `/api/v2/workspaces/${p.wsId}/actions/unlock`)).status, 200);
      assert.equal(await status(s, q1.id), 200);
    });

    it('counts only versions holding state toward the newest kept, not discarded, pending or purged ones', async () => {
      const clock = new ManualClock('2026-01-01T00:00:00.000Z');
      const s = await start(clock, { stateRetentionKeepLatest: 3, stateRetentionMaxAgeDays: 180 });
      const a = await workspace(s);
      const a1 = await inline(s, clock, a, 1);
      const a2 = await inline(s, clock, a, 2);
      const a3 = await inline(s, clock, a, 3);
      const b = await workspace(s);
      const b1 = await inline(s, clock, b, 1);
      const b2 = await inline(s, clock, b, 2);
      assert.equal((await action(s, b1.id, 'soft_delete_backing_data')).status, 200);
      assert.equal((await action(s, b1.id, 'permanently_delete_backing_data')).status, 200);
      const b3 = await pending(s, clock, b, 3);
      const b4 = await pending(s, clock, b, 4);
      const b5 = await inline(s, clock, b, 5);
      assert.equal(await count(s, b, 'discarded'), 2);
      await s.deps.worker.runUntilIdle();

      // The newest three states are b5, b2 and a3: everything created before a3 is beyond them.
      // Counting every row, b5, b4 and b3 would have been the newest three and b2 would have gone.
      await maintain(s, clock, 181 * DAY);
      for (const v of [a1, a2]) assertError(await call(s, 'GET', `/api/v2/state-versions/${v.id}`), 404);
      for (const v of [a3, b1, b2, b3, b4, b5]) assert.equal(await status(s, v.id), 200, v.id);
      assert.equal(await count(s, a), 1);
      assert.equal(await count(s, b), 5);
      // The history of `a` lists what is left.
      const list = await call(s, 'GET', listQuery(a));
      assert.deepEqual(
        list.json.data.map((d: { id: string }) => d.id),
        [a3.id],
      );
    });

    it('never deletes current versions, nor the only state of a workspace', async () => {
      const clock = new ManualClock('2026-01-01T00:00:00.000Z');
      const s = await start(clock, { stateRetentionKeepLatest: 1, stateRetentionMaxAgeDays: 30 });
      const lone = await workspace(s);
      const only = await inline(s, clock, lone, 1);
      const r = await workspace(s);
      const r1 = await inline(s, clock, r, 1);
      const r2 = await inline(s, clock, r, 2);
      // Rolled back to r1: the copy is current and the newest state; r1 and r2 are neither.
      const rb = await call(s, 'PATCH', `/api/v2/workspaces/${r.wsId}/state-versions`, {
        body: {
          data: {
            type: 'state-versions',
            relationships: { 'rollback-state-version': { data: { type: 'state-versions', id: r1.id } } },
          },
        },
      });
      assert.equal(rb.status, 201, rb.text);
      const newer = await workspace(s);
      await inline(s, clock, newer, 1);
      await s.deps.worker.runUntilIdle();

      await maintain(s, clock, 365 * DAY);
      assert.equal(await status(s, only.id), 200);
      const cur = await call(s, 'GET', `/api/v2/workspaces/${r.wsId}/current-state-version`);
      assert.equal(cur.json.data.id, rb.json.data.id);
      for (const v of [r1, r2]) assertError(await call(s, 'GET', `/api/v2/state-versions/${v.id}`), 404);
      const dl = await download(s, cur.json.data.attributes['hosted-state-download-url'] as string);
      assert.deepEqual(dl.body, stateFile(1, r.lineage));
    });

    it('by default keeps the newest 100 states and deletes the others after 180 days', async () => {
      const defaults = loadConfig({});
      assert.equal(defaults.stateRetentionKeepLatest, 100);
      assert.equal(defaults.stateRetentionMaxAgeDays, 180);
      const clock = new ManualClock('2026-01-01T00:00:00.000Z');
      const s = await start(clock);
      assert.equal(s.config.stateRetentionKeepLatest, 100);
      assert.equal(s.config.stateRetentionMaxAgeDays, 180);
      const f = await workspace(s);
      const versions: Array<{ id: string }> = [];
      for (let serial = 1; serial <= 102; serial++) versions.push(await inline(s, clock, f, serial));
      await s.deps.worker.runUntilIdle();

      await maintain(s, clock, 179 * DAY);
      assert.equal(await count(s, f), 102);
      await maintain(s, clock, 2 * DAY);
      assert.equal(await count(s, f), 100);
      for (const v of versions.slice(0, 2)) assertError(await call(s, 'GET', `/api/v2/state-versions/${v.id}`), 404);
      assert.equal(await status(s, versions[2]!.id), 200);
    });

    it('hides outputs of soft-deleted versions, restores them, and removes them on permanent delete', async () => {
      const clock = new ManualClock('2026-01-01T00:00:00.000Z');
      const s = await start(clock, { stateSoftDeletePurgeDays: 30 });
      const f = await workspace(s);
      const v1 = await inline(s, clock, f, 1);
      const v2 = await inline(s, clock, f, 2);
      await s.deps.worker.runUntilIdle();
      const before = await call(s, 'GET', `/api/v2/state-versions/${v1.id}/outputs`);
      assert.equal(before.status, 200, before.text);
      const secret = (before.json.data as Array<{ id: string; attributes: { name: string; value: unknown } }>).find(
        (o) => o.attributes.name === 'secret',
      );
      assert.ok(secret);
      assert.equal(secret.attributes.value, 's3cr3t');
      const v1OutputIds = (before.json.data as Array<{ id: string }>).map((o) => o.id);

      // The current version cannot be soft deleted, so its outputs stay readable.
      assertError(await action(s, v2.id, 'soft_delete_backing_data'), 400, undefined, /transition not allowed/);
      const soft = await action(s, v1.id, 'soft_delete_backing_data');
      assert.equal(soft.status, 200, soft.text);
      assert.deepEqual(soft.json.data.relationships.outputs.data, []);

      // Reads fail with the answer the state download gives.
      const dl = await call(s, 'GET', new URL(v1.attributes['hosted-state-download-url'] as string).pathname);
      assertError(dl, 404, undefined, /soft deleted; restore it/);
      const list = await call(s, 'GET', `/api/v2/state-versions/${v1.id}/outputs`);
      assertError(list, 404, undefined, /soft deleted; restore it/);
      assert.equal(list.json.errors[0].detail, dl.json.errors[0].detail);
      const one = await call(s, 'GET', `/api/v2/state-version-outputs/${secret.id}`);
      assertError(one, 404, undefined, /soft deleted; restore it/);
      assert.equal(one.json.errors[0].detail, dl.json.errors[0].detail);
      assert.doesNotMatch(one.text + list.text, /s3cr3t/);

      // include=outputs leaves them out, on a single version and in a listing.
      const shown = await call(s, 'GET', `/api/v2/state-versions/${v1.id}?include=outputs`);
      assert.equal(shown.status, 200, shown.text);
      assert.deepEqual(shown.json.data.relationships.outputs.data, []);
      assert.deepEqual(includedOutputIds(shown), []);
      const listed = await call(s, 'GET', listQuery(f, 'outputs'));
      assert.equal(listed.status, 200, listed.text);
      const ids = includedOutputIds(listed);
      assert.equal(ids.length, 2, 'the outputs of v2 only');
      for (const id of v1OutputIds) assert.ok(!ids.includes(id), id);

      const current = await call(s, 'GET', `/api/v2/workspaces/${f.wsId}/current-state-version-outputs`);
      assert.equal(current.status, 200, current.text);
      assert.equal(current.json.data.length, 2);
      assert.equal(
        current.json.data.find((o: { attributes: { name: string } }) => o.attributes.name === 'secret').attributes
          .value,
        null,
      );

      // Restore brings them back.
      assert.equal((await action(s, v1.id, 'restore_backing_data')).status, 200);
      const back = await call(s, 'GET', `/api/v2/state-version-outputs/${secret.id}`);
      assert.equal(back.status, 200, back.text);
      assert.equal(back.json.data.attributes.value, 's3cr3t');
      const again = await call(s, 'GET', `/api/v2/state-versions/${v1.id}?include=outputs`);
      assert.deepEqual(includedOutputIds(again).sort(), [...v1OutputIds].sort());
      assert.equal((await call(s, 'GET', `/api/v2/state-versions/${v1.id}/outputs`)).json.data.length, 2);

      // Permanent delete removes the rows; nothing can bring them back.
      assert.equal((await action(s, v1.id, 'soft_delete_backing_data')).status, 200);
      const purged = await action(s, v1.id, 'permanently_delete_backing_data');
      assert.equal(purged.status, 200, purged.text);
      assert.equal(purged.json.data.attributes.status, 'backing_data_permanently_deleted');
      assert.equal(await storedOutputs(s, v1.id), 0);
      assertError(
        await call(s, 'GET', `/api/v2/state-versions/${v1.id}/outputs`),
        404,
        undefined,
        /permanently deleted/,
      );
      assertError(await call(s, 'GET', `/api/v2/state-version-outputs/${secret.id}`), 404);
      const gone = await call(s, 'GET', `/api/v2/state-versions/${v1.id}?include=outputs`);
      assert.deepEqual(gone.json.data.relationships.outputs.data, []);
      assert.deepEqual(includedOutputIds(gone), []);
      assertError(await action(s, v1.id, 'restore_backing_data'), 400, undefined, /transition not allowed/);
      assert.equal(await storedOutputs(s, v2.id), 2, 'other versions keep theirs');
    });

    it('removes the outputs of versions the maintenance job purges', async () => {
      const clock = new ManualClock('2026-01-01T00:00:00.000Z');
      const s = await start(clock, { stateSoftDeletePurgeDays: 30 });
      const f = await workspace(s);
      const v1 = await inline(s, clock, f, 1);
      await inline(s, clock, f, 2);
      await s.deps.worker.runUntilIdle();
      assert.equal(await storedOutputs(s, v1.id), 2);
      assert.equal((await action(s, v1.id, 'soft_delete_backing_data')).status, 200);
      await maintain(s, clock, 31 * DAY);
      const after = await call(s, 'GET', `/api/v2/state-versions/${v1.id}`);
      assert.equal(after.json.data.attributes.status, 'backing_data_permanently_deleted');
      assert.equal(await storedOutputs(s, v1.id), 0);
      assertError(
        await call(s, 'GET', `/api/v2/state-versions/${v1.id}/outputs`),
        404,
        undefined,
        /permanently deleted/,
      );
    });
  });
}
