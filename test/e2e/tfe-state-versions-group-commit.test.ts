import { it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import { describeWithServer } from '../support/test-server.js';
import type { TestServer } from '../support/test-server.js';
import {
  b64,
  call,
  createBody,
  createInline,
  inlineAttrs,
  lock,
  stateFile,
  unlock,
  workspace,
} from './tfe-state-versions-fixture.js';
import type { Res, WorkspaceFixture } from './tfe-state-versions-fixture.js';

/**
 * Creates that arrive together share a transaction (savepoints on SQLite, one group of
 * statements on PostgreSQL). Each must still stand alone: one that fails, by its checks or
 * in the database, answers its own error and writes nothing, and the others are created.
 */

const OUTPUTS = b64(JSON.stringify({ greeting: { sensitive: false, type: 'string', value: 'hi' } }));

async function snapshot(srv: TestServer, f: WorkspaceFixture) {
  const db = srv.deps.core.db.kysely;
  const head = await db.selectFrom('tfe_state_heads').selectAll().where('workspace_id', '=', f.wsId).executeTakeFirst();
  const versions = await db
    .selectFrom('tfe_state_versions')
    .select(['id', 'md5'])
    .where('workspace_id', '=', f.wsId)
    .orderBy('seq')
    .execute();
  return {
    head: head && { seq: Number(head.head_seq), count: Number(head.version_count), current: head.current_id },
    versions,
  };
}

/** What a created version must have: current in its workspace, its content, its outputs and its extraction job. */
async function assertCreated(srv: TestServer, f: WorkspaceFixture, r: Res, bytes: Buffer): Promise<void> {
  assert.equal(r.status, 201, r.text);
  const id = r.json.data.id as string;
  const db = srv.deps.core.db.kysely;
  const { head, versions } = await snapshot(srv, f);
  assert.equal(head?.current, id);
  assert.equal(head?.seq, versions.length);
  assert.equal(head?.count, versions.length);
  assert.equal(versions.at(-1)?.id, id);
  const blob = await db
    .selectFrom('tfe_state_blobs')
    .select('size')
    .where('sha256', '=', sha256(bytes))
    .executeTakeFirst();
  assert.equal(Number(blob?.size), bytes.length);
  const outputs = await db
    .selectFrom('tfe_state_version_outputs')
    .select('name')
    .where('state_version_id', '=', id)
    .execute();
  assert.deepEqual(
    outputs.map((o) => o.name),
    ['greeting'],
  );
  const job = await db
    .selectFrom('jobs')
    .select('status')
    .where('dedupe_key', '=', `tfe.extract-state:${id}`)
    .executeTakeFirst();
  assert.equal(job?.status, 'queued');
  const current = await call(srv, 'GET', `/api/v2/workspaces/${f.wsId}/current-state-version`);
  assert.equal(current.json.data.id, id);
}

/** A refused create left its workspace as it was, and its content is stored nowhere. */
async function assertUntouched(
  srv: TestServer,
  f: WorkspaceFixture,
  before: Awaited<ReturnType<typeof snapshot>>,
  bytes: Buffer,
): Promise<void> {
  assert.deepEqual(await snapshot(srv, f), before);
  const db = srv.deps.core.db.kysely;
  const blob = await db
    .selectFrom('tfe_state_blobs')
    .select('sha256')
    .where('sha256', '=', sha256(bytes))
    .executeTakeFirst();
  assert.equal(blob, undefined);
  // Every version has its extraction job, and no job names a version that does not exist.
  const jobs = await db.selectFrom('jobs').select('payload').where('kind', '=', 'tfe.extract-state').execute();
  const all = await db.selectFrom('tfe_state_versions').select('id').execute();
  assert.deepEqual(
    jobs.map((j) => (JSON.parse(j.payload) as { stateVersionId: string }).stateVersionId).sort(),
    all.map((v) => v.id).sort(),
  );
}

function sha256(b: Buffer): string {
  return createHash('sha256').update(b).digest('hex');
}

function post(srv: TestServer, f: WorkspaceFixture, bytes: Buffer, serial: number): Promise<Res> {
  return call(srv, 'POST', `/api/v2/workspaces/${f.wsId}/state-versions`, {
    body: createBody(inlineAttrs(bytes, serial, f.lineage, { 'json-state-outputs': OUTPUTS })),
  });
}

/** PostgreSQL: whether the current transaction wrote the head of more than one workspace (creates grouped). */
const GROUPED = '(select count(*) from tfe_state_heads where xmin::text::bigint = txid_current() % 4294967296) > 1';

/**
 * PostgreSQL: counts the groups that inserted versions, by a sequence (which a rollback does
 * not undo). Returns the count's reader and the trigger's removal.
 */
async function countGroups(srv: TestServer): Promise<{ read: () => Promise<number>; drop: () => Promise<void> }> {
  const db = srv.deps.core.db.kysely;
  await sql`create sequence if not exists test_grouped`.execute(db);
  await sql`create or replace function test_count_groups() returns trigger language plpgsql as $$
    begin
      if ${sql.raw(GROUPED)} then perform nextval('test_grouped'); end if;
      return null;
    end $$`.execute(db);
  await sql`create or replace trigger test_count_groups after insert on tfe_state_versions
    for each statement execute function test_count_groups()`.execute(db);
  return {
    read: () => groupCount(srv),
    drop: async () => {
      await sql`drop trigger test_count_groups on tfe_state_versions`.execute(db);
    },
  };
}

async function groupCount(srv: TestServer): Promise<number> {
  const r = await sql<{
    n: string;
  }>`select case when is_called then last_value else 0 end as n from test_grouped`.execute(srv.deps.core.db.kysely);
  return Number(r.rows[0]?.n);
}

describeWithServer('state versions: creates that share a commit', (srv, kind) => {
  it('one create losing its serial check among concurrent ones answers 409 alone and writes nothing', async () => {
    const good = await Promise.all(Array.from({ length: 8 }, () => workspace(srv)));
    const bad = await workspace(srv);
    for (const f of [...good, bad]) await createInline(srv, f, 5);
    const groups = kind === 'postgres' ? await countGroups(srv) : undefined;
    const before = (await groups?.read()) ?? 0;
    // Grouping depends on arrival; the creates are repeated until they shared a transaction.
    try {
      for (let round = 1; round <= 10; round++) {
        const goodBytes = good.map((f) => stateFile(5 + round, f.lineage));
        const badBytes = stateFile(3, bad.lineage, `round ${round}`);
        const badBefore = await snapshot(srv, bad);
        const results = await Promise.all([
          ...good.slice(0, 4).map((f, i) => post(srv, f, goodBytes[i]!, 5 + round)),
          post(srv, bad, badBytes, 3),
          ...good.slice(4).map((f, i) => post(srv, f, goodBytes[i + 4]!, 5 + round)),
        ]);
        const badRes = results[4]!;
        assert.equal(badRes.status, 409, badRes.text);
        assert.equal(badRes.json.errors[0].source?.pointer, '/data/attributes/serial');
        await assertUntouched(srv, bad, badBefore, badBytes);
        for (const [i, f] of good.entries()) await assertCreated(srv, f, results[i < 4 ? i : i + 1]!, goodBytes[i]!);
        if (!groups || (await groups.read()) > before) return;
      }
      assert.fail('the creates never shared a transaction');
    } finally {
      await groups?.drop();
    }
  });

  it('one create the database refuses among concurrent ones fails alone and leaves nothing', async () => {
    const db = srv.deps.core.db.kysely;
    const good = await Promise.all(Array.from({ length: 8 }, () => workspace(srv)));
    const bad = await workspace(srv);
    for (const f of [...good, bad]) await createInline(srv, f, 1);
    if (kind === 'postgres') await sql`create sequence if not exists test_grouped`.execute(db);
    const before = kind === 'postgres' ? await groupCount(srv) : 0;
    // The database refuses versions carrying one md5 (as a constraint or a full disk would);
    // on PostgreSQL it counts the refusals that came inside a group.
    const refuse = async (md5: string) => {
      if (kind === 'postgres') {
        await sql`create or replace function test_refuse() returns trigger language plpgsql as $$
          begin
            if new.md5 = ${sql.lit(md5)} then
              if ${sql.raw(GROUPED)} then perform nextval('test_grouped'); end if;
              raise exception 'refused by the test';
            end if;
            return new;
          end $$`.execute(db);
        await sql`create or replace trigger test_refuse before insert on tfe_state_versions
          for each row execute function test_refuse()`.execute(db);
      } else {
        await sql`drop trigger if exists test_refuse`.execute(db);
        await sql`create trigger test_refuse before insert on tfe_state_versions when new.md5 = ${sql.lit(md5)}
          begin select raise(abort, 'refused by the test'); end`.execute(db);
      }
    };
    try {
      for (let round = 1; round <= 10; round++) {
        const goodBytes = good.map((f) => stateFile(1 + round, f.lineage));
        const badBytes = stateFile(1 + round, bad.lineage, 'refused');
        await refuse(createHash('md5').update(badBytes).digest('hex'));
        const badBefore = await snapshot(srv, bad);
        const results = await Promise.all([
          ...good.slice(0, 4).map((f, i) => post(srv, f, goodBytes[i]!, 1 + round)),
          post(srv, bad, badBytes, 1 + round),
          ...good.slice(4).map((f, i) => post(srv, f, goodBytes[i + 4]!, 1 + round)),
        ]);
        const badRes = results[4]!;
        assert.equal(badRes.status, 500, badRes.text);
        await assertUntouched(srv, bad, badBefore, badBytes);
        for (const [i, f] of good.entries()) await assertCreated(srv, f, results[i < 4 ? i : i + 1]!, goodBytes[i]!);
        if (kind !== 'postgres' || (await groupCount(srv)) > before) return;
      }
      assert.fail('the creates never shared a transaction');
    } finally {
      const on = kind === 'postgres' ? ' on tfe_state_versions' : '';
      await sql`drop trigger if exists test_refuse${sql.raw(on)}`.execute(db);
    }
  });

  it('a create checks its lock in its own transaction, whatever the server remembers of earlier requests', async () => {
    const db = srv.deps.core.db.kysely;
    const f = await workspace(srv);
    // After this create the actor's permission on the workspace is answered from memory.
    await createInline(srv, f, 1);
    const bytes = stateFile(2, f.lineage);
    const refused = async (detail: RegExp) => {
      const before = await snapshot(srv, f);
      const r = await post(srv, f, bytes, 2);
      assert.equal(r.status, 409, r.text);
      assert.match(r.json.errors[0].detail, detail);
      await assertUntouched(srv, f, before, bytes);
    };

    assert.equal((await unlock(srv, f.wsId)).status, 200);
    await refused(/is not locked/);
    // Taken by someone else behind this server's back, as by another node.
    await db
      .updateTable('workspaces')
      .set({ locked_by_kind: 'user', locked_by_id: 'user-elsewhere', locked_at: new Date().toISOString() })
      .where('id', '=', f.wsId)
      .execute();
    await refused(/locked by someone else/);
    await db
      .updateTable('workspaces')
      .set({ locked_by_kind: null, locked_by_id: null, locked_at: null })
      .where('id', '=', f.wsId)
      .execute();
    await lock(srv, f.wsId);
    await assertCreated(srv, f, await post(srv, f, bytes, 2), bytes);

    // A workspace deleted behind this server's back after its permission was answered.
    const gone = await workspace(srv);
    assert.equal((await call(srv, 'GET', `/api/v2/workspaces/${gone.wsId}`)).status, 200);
    await db.deleteFrom('workspaces').where('id', '=', gone.wsId).execute();
    const r = await post(srv, gone, stateFile(1, gone.lineage), 1);
    assert.equal(r.status, 404, r.text);
    assert.equal(
      await db
        .selectFrom('tfe_state_heads')
        .select('workspace_id')
        .where('workspace_id', '=', gone.wsId)
        .executeTakeFirst(),
      undefined,
    );
  });
});
