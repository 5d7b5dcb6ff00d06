import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { createTestDb, dbKinds } from '../../../test/support/test-db.js';
import type { TestDatabase } from '../../../test/support/test-db.js';
import type { UnitGroup } from '../../db/unit-of-work.js';
import { sealBuffer } from '../../secrets/content-cipher.js';
import { StateBlobRepo } from './state-blob-repo.js';
import { StateChanges } from './state-changes.js';
import { StateOutputRepo } from './state-output-repo.js';
import { StateVersionRepo } from './state-version-repo.js';
import type { Executor } from './state-version-repo.js';

function row(workspaceId: string, id: string, seq: number, status = 'finalized') {
  return {
    id,
    workspace_id: workspaceId,
    seq,
    serial: seq,
    lineage: 'L',
    md5: 'a'.repeat(32),
    status,
    size: 1,
    state_format_version: 4,
    terraform_version: '1.9.5',
    state_sha256: null,
    json_sha256: null,
    upload_token_hash: null,
    upload_token_sealed: null,
    json_upload_token_hash: null,
    json_upload_token_sealed: null,
    upload_expires_at: null,
    resources_processed: 0,
    resources: null,
    modules: null,
    providers: null,
    billable_rum_count: null,
    created_by_kind: null,
    created_by_id: null,
    run_id: null,
    rollback_of_id: null,
    delete_older_than_n_days: null,
    soft_deleted_at: null,
    purge_after: null,
    created_at: new Date(Date.UTC(2026, 0, 1, 0, 0, seq)).toISOString(),
  };
}

/** Appends a version the way the service does: next history position, then insert, then current. */
async function append(
  repo: StateVersionRepo,
  trx: Executor,
  ws: string,
  id: string,
  status = 'finalized',
): Promise<number> {
  const { seq } = await repo.advanceHead(trx, ws);
  await repo.insert(trx, row(ws, id, seq, status));
  await repo.setCurrent(trx, ws, id);
  return seq;
}

for (const kind of dbKinds()) {
  for (const batchCommits of [false, true]) {
    describe(`state repositories (${batchCommits ? 'group commits' : 'one transaction each'}) [${kind}]`, () => {
      let t: TestDatabase;
      let repo: StateVersionRepo;
      let outputs: StateOutputRepo;
      let blobs: StateBlobRepo;
      let changes: StateChanges;
      let commits: UnitGroup;
      const transaction = <T>(fn: (trx: Executor) => Promise<T>) =>
        changes.reportingAfter(() => t.db.units.readWrite(fn));
      before(async () => {
        t = await createTestDb(kind);
        changes = new StateChanges();
        outputs = new StateOutputRepo({ db: t.db.kysely, changes });
        repo = new StateVersionRepo({ db: t.db.kysely, outputs, changes });
        blobs = new StateBlobRepo({ db: t.db.kysely });
        commits = t.db.units.group({ maxBatch: 256, grouped: batchCommits });
      });
      after(async () => t.cleanup());

      it('a failing write undoes only its own changes, concurrent ones commit', async () => {
        const ws = 'ws-batch';
        const results = await Promise.allSettled(
          ['a', 'b', 'c', 'd'].map((name) =>
            commits.readWrite(async (trx) => {
              const seq = await append(repo, trx, ws, `sv-${name}`);
              if (name === 'b') throw new Error('refused');
              return seq;
            }),
          ),
        );
        assert.deepEqual(
          results.map((r) => r.status),
          ['fulfilled', 'rejected', 'fulfilled', 'fulfilled'],
        );
        // Positions run 1..3 without a gap whatever order the writers got the head in.
        const seqOf = new Map(
          ['a', 'c', 'd'].map((n, i) => [
            `sv-${n}`,
            (results[[0, 2, 3][i] as number] as PromiseFulfilledResult<number>).value,
          ]),
        );
        assert.deepEqual([...seqOf.values()].sort(), [1, 2, 3]);
        const page = await repo.list(repo.db, ws, undefined, 20, 0);
        assert.deepEqual(
          page.items.map((v) => v.id),
          [...seqOf.keys()].sort((x, y) => (seqOf.get(y) ?? 0) - (seqOf.get(x) ?? 0)),
        );
        assert.equal(page.total, 3);
        assert.equal(await repo.currentId(repo.db, ws), page.items[0]?.id);
        assert.equal(await repo.findById(repo.db, 'sv-b'), undefined);
      });

      it('reads the current version with its output ids in position order', async () => {
        const ws = 'ws-current-outputs';
        assert.equal(await repo.findCurrentWithOutputIds(repo.db, ws), undefined);
        await commits.readWrite((trx) => append(repo, trx, ws, 'sv-co1'));
        const none = await repo.findCurrentWithOutputIds(repo.db, ws);
        assert.equal(none?.version.id, 'sv-co1');
        assert.deepEqual(none?.outputIds, []);
        const out = (id: string, name: string) => ({
          id,
          name,
          sensitive: false,
          type: 'string',
          detailedType: 'string',
          value: name,
        });
        await commits.readWrite((trx) =>
          outputs.replace(trx, { id: 'sv-co1', workspaceId: ws }, [
            out('wsout-z', 'first'),
            out('wsout-a', 'second'),
            out('wsout-m', 'third'),
          ]),
        );
        const found = await repo.findCurrentWithOutputIds(repo.db, ws);
        assert.deepEqual(found?.outputIds, ['wsout-z', 'wsout-a', 'wsout-m']);
        assert.deepEqual(found?.version, await repo.findCurrent(repo.db, ws));
        assert.deepEqual(found?.outputIds, (await outputs.outputIds(repo.db, ['sv-co1'])).get('sv-co1'));
      });

      it('lists by position ranges, and by index after retention left holes', async () => {
        const ws = 'ws-list';
        for (let i = 1; i <= 7; i++)
          await commits.readWrite((trx) => append(repo, trx, ws, `sv-l${i}`, i % 2 === 0 ? 'discarded' : 'finalized'));
        const ids = async (statuses?: Array<'finalized' | 'discarded'>, limit = 3, offset = 0) =>
          (await repo.list(repo.db, ws, statuses, limit, offset)).items.map((v) => v.id);
        assert.deepEqual(await ids(undefined, 3, 0), ['sv-l7', 'sv-l6', 'sv-l5']);
        assert.deepEqual(await ids(undefined, 3, 6), ['sv-l1']);
        assert.deepEqual(await ids(undefined, 3, 9), []);
        assert.deepEqual(await ids(['discarded'], 2, 1), ['sv-l4', 'sv-l2']);
        assert.equal((await repo.list(repo.db, ws, ['finalized'], 20, 0)).total, 4);
        assert.equal(
          await transaction((trx) => repo.deleteVersions(trx, ['sv-l2', 'sv-l5', 'sv-l7'])),
          2,
          'the current version stays',
        );
        const after = await repo.list(repo.db, ws, undefined, 3, 0);
        assert.equal(after.total, 5);
        assert.deepEqual(
          after.items.map((v) => v.id),
          ['sv-l7', 'sv-l6', 'sv-l4'],
        );
        assert.deepEqual(await ids(undefined, 3, 3), ['sv-l3', 'sv-l1']);
        assert.equal((await repo.list(repo.db, 'ws-none', undefined, 20, 0)).total, 0);
      });

      it('a tombstoned blob is reported to writers until it is revived', async () => {
        const sha = (kind === 'sqlite' ? 'a' : 'b').repeat(63) + (batchCommits ? '1' : '0');
        const now = new Date('2026-01-01T00:00:00Z');
        assert.equal(await transaction((trx) => blobs.touchBlob(trx, sha, 5, now)), true);
        assert.deepEqual(await blobs.unreferencedBlobs(repo.db, 1000).then((l) => l.includes(sha)), true);
        assert.equal(await transaction((trx) => blobs.markBlobDeleting(trx, sha, now)), true);
        assert.equal(
          await transaction((trx) => blobs.markBlobDeleting(trx, sha, now)),
          false,
          'only one collector wins',
        );
        assert.equal(await transaction((trx) => blobs.touchBlob(trx, sha, 5, now)), false);
        await transaction((trx) => blobs.reviveBlob(trx, sha, 5, now));
        assert.equal(await transaction((trx) => blobs.touchBlob(trx, sha, 5, now)), true);
      });

      it('keeps inline bytes until the collector marks the blob, and revives a tombstone with new bytes', async () => {
        const sha = (kind === 'sqlite' ? 'c' : 'd').repeat(63) + (batchCommits ? '1' : '0');
        const now = new Date('2026-01-01T00:00:00Z');
        const bytes = Buffer.from('{"version":4}');
        assert.equal(await blobs.inlineBlob(repo.db, sha), undefined);
        await commits.readWrite((trx) => blobs.putInlineBlob(trx, sha, bytes.length, bytes, now));
        assert.ok((await blobs.inlineBlob(repo.db, sha))?.equals(bytes));
        assert.equal(
          await transaction((trx) => blobs.touchBlob(trx, sha, bytes.length, now)),
          true,
          'a live inline blob is shared',
        );
        assert.equal(await transaction((trx) => blobs.markBlobDeleting(trx, sha, now)), true);
        assert.equal(await blobs.inlineBlob(repo.db, sha), undefined);
        assert.equal(
          await transaction((trx) => blobs.touchBlob(trx, sha, bytes.length, now)),
          false,
          'a tombstone is reported',
        );
        await commits.readWrite((trx) => blobs.putInlineBlob(trx, sha, bytes.length, bytes, now));
        assert.ok((await blobs.inlineBlob(repo.db, sha))?.equals(bytes));
        assert.equal(await transaction((trx) => blobs.touchBlob(trx, sha, bytes.length, now)), true);
      });

      it('keeps sealed inline bytes when the same content is stored again, and seals plain ones', async () => {
        const sha = (kind === 'sqlite' ? 'e' : 'f').repeat(63) + (batchCommits ? '1' : '0');
        const now = new Date('2026-01-01T00:00:00Z');
        const key = { id: randomBytes(16), key: randomBytes(32) };
        const sealed = new StateBlobRepo({
          db: t.db.kysely,
          sealing: { encrypt: true, current: () => key, lookup: () => Promise.resolve(key.key) },
        });
        const stored = async () =>
          Buffer.from(
            (
              await t.db.kysely
                .selectFrom('tfe_state_blobs')
                .select('data')
                .where('sha256', '=', sha)
                .executeTakeFirstOrThrow()
            ).data as Buffer,
          );
        const plain = Buffer.from('{"version":4,"serial":7}');
        const put = (data: Buffer) =>
          commits.readWrite((trx) => sealed.putInlineBlob(trx, sha, plain.length, data, now));
        await put(plain);
        const first = sealBuffer(key, plain);
        await put(first);
        assert.deepEqual(await stored(), first, 'plain bytes are replaced by sealed ones');
        await put(sealBuffer(key, plain));
        assert.deepEqual(await stored(), first, 'sealed bytes stay: the same content, sealed again, is not rewritten');
        assert.deepEqual(await sealed.inlineBlob(repo.db, sha), plain);
        await transaction((trx) => sealed.markBlobDeleting(trx, sha, now));
        const again = sealBuffer(key, plain);
        await put(again);
        assert.deepEqual(await stored(), again, 'a tombstone takes the new bytes');
        await put(plain);
        assert.deepEqual(await stored(), plain, 'plain bytes (encryption off) replace sealed ones, as before');
      });

      it('reports the workspaces each write touches', async () => {
        const seen: string[] = [];
        changes.onChange((ids) => seen.push(...ids));
        const ws = `ws-changes-${batchCommits ? 'b' : 't'}`;
        await commits.readWrite((trx) => append(repo, trx, ws, `sv-ch1-${batchCommits}`));
        assert.ok(seen.length > 0 && seen.every((id) => id === ws));
        const writes: Array<(trx: Executor) => Promise<unknown>> = [
          (trx: Executor) => repo.markProcessed(trx, `sv-ch1-${batchCommits}`),
          (trx: Executor) => outputs.replace(trx, { id: `sv-ch1-${batchCommits}`, workspaceId: ws }, []),
          (trx: Executor) => repo.transition(trx, `sv-ch1-${batchCommits}`, 'finalized', 'backing_data_soft_deleted'),
          (trx: Executor) => repo.deleteWorkspaces(trx, [ws]),
        ];
        // Once as the write is made (before the commit), and once more after the transaction ended.
        let inside = false;
        const when: string[] = [];
        changes.onChange(() => when.push(inside ? 'before commit' : 'after'));
        for (const write of writes) {
          seen.length = 0;
          when.length = 0;
          await transaction(async (trx) => {
            inside = true;
            await write(trx);
            inside = false;
          });
          assert.deepEqual(seen, [ws, ws]);
          assert.deepEqual(when, ['before commit', 'after']);
        }
      });

      it('indexes upload tokens, JSON state hashes and purge times only for the versions that have them', async () => {
        const r =
          kind === 'sqlite'
            ? await sql<{ name: string; def: string | null }>`select name, sql as def from sqlite_master
                where type = 'index' and tbl_name = 'tfe_state_versions'`.execute(t.db.kysely)
            : await sql<{ name: string; def: string }>`select indexname as name, indexdef as def from pg_indexes
                where tablename = 'tfe_state_versions'`.execute(t.db.kysely);
        const defs = new Map(r.rows.map((x) => [x.name, x.def ?? '']));
        const partial: Record<string, RegExp> = {
          tfe_state_versions_upload_token_hash_key: /WHERE \(?upload_token_hash IS NOT NULL/i,
          tfe_state_versions_json_upload_token_hash_key: /WHERE \(?json_upload_token_hash IS NOT NULL/i,
          tfe_state_versions_json_sha256_idx: /WHERE \(?json_sha256 IS NOT NULL/i,
          tfe_state_versions_soft_deleted_idx: /WHERE \(?status = 'backing_data_soft_deleted'/i,
        };
        for (const [name, where] of Object.entries(partial)) assert.match(defs.get(name) ?? '', where, name);
        assert.equal(defs.has('tfe_state_versions_status_purge_after_idx'), false);
      });
    });
  }
}
