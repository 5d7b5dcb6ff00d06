import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { sql } from 'kysely';
import type { Kysely } from 'kysely';
import type { Database } from './schema.js';
import { dbKinds, createTestDb } from '../../test/support/test-db.js';
import type { TestDatabase } from '../../test/support/test-db.js';
import { constraintViolation, isUniqueViolation } from './constraint-errors.js';
import { migrateToLatest, pendingMigrations } from './migrate.js';

for (const kind of dbKinds()) {
  describe(`storage [${kind}]`, () => {
    let tdb: TestDatabase;
    before(async () => (tdb = await createTestDb(kind)));
    after(async () => tdb.cleanup());

    it('applies every migration once; a second run is a no-op', async () => {
      assert.deepEqual(await pendingMigrations(tdb.db), []);
      assert.deepEqual(await migrateToLatest(tdb.db), []);
    });

    it('returns the same row types on both drivers', async () => {
      await tdb.db.kysely.insertInto('settings').values({ key: 'k', value: 'v' }).execute();
      const row = await tdb.db.kysely
        .selectFrom('jobs')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow();
      assert.equal(typeof row.n, 'number');
      assert.deepEqual(await tdb.db.kysely.selectFrom('settings').selectAll().execute(), [{ key: 'k', value: 'v' }]);
    });

    it('names unique violations the same way on both drivers', async () => {
      await tdb.db.kysely.insertInto('jobs').values(job('a', 'dup')).execute();
      const err = await tdb.db.kysely
        .insertInto('jobs')
        .values(job('b', 'dup'))
        .execute()
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      assert.ok(isUniqueViolation(err), String(err));
      assert.equal(constraintViolation(err)?.constraint, 'jobs_dedupe_key_key');
      assert.equal(isUniqueViolation(new Error('other')), false);
    });

    it('rolls back a failed transaction completely', async () => {
      await assert.rejects(
        tdb.db.kysely.transaction().execute(async (trx) => {
          await trx.insertInto('settings').values({ key: 'in-tx', value: '1' }).execute();
          await trx.insertInto('settings').values({ key: 'in-tx', value: '2' }).execute();
        }),
      );
      const rows = await tdb.db.kysely.selectFrom('settings').selectAll().where('key', '=', 'in-tx').execute();
      assert.deepEqual(rows, []);
    });

    it(
      'lazy-sync transactions commit, report durability, and leave every other commit synchronous=FULL',
      { skip: kind !== 'sqlite' && 'SQLite only: lazy sync is a SQLite pragma' },
      async () => {
        assert.ok(tdb.db.units.lazySync, 'read-write units on a SQLite file fsync off the event loop');
        const lazy = <T>(fn: (trx: Kysely<Database>) => Promise<T>) => tdb.db.units.readWrite(fn);
        const synchronous = async () =>
          Number((await sql<{ synchronous: number }>`pragma synchronous`.execute(tdb.db.kysely)).rows[0]?.synchronous);
        const FULL = 2;
        let inside = -1;
        const value = await lazy(async (trx) => {
          inside = Number((await sql<{ synchronous: number }>`pragma synchronous`.execute(trx)).rows[0]?.synchronous);
          await trx.insertInto('settings').values({ key: 'lazy', value: '1' }).execute();
          return 'done';
        });
        assert.equal(value, 'done');
        assert.equal(inside, 1, 'the lazy commit itself runs with synchronous=NORMAL');
        assert.equal(await synchronous(), FULL);
        assert.deepEqual(
          await tdb.db.kysely.selectFrom('settings').select('value').where('key', '=', 'lazy').execute(),
          [{ value: '1' }],
        );
        // A statement queued while the lazy transaction holds the connection runs after it, at FULL.
        let queued = -1;
        const other = synchronous().then((v) => (queued = v));
        await assert.rejects(
          lazy(async (trx) => {
            await trx.insertInto('settings').values({ key: 'lazy-fail', value: '1' }).execute();
            throw new Error('fails after writing');
          }),
          /fails after writing/,
        );
        await other;
        assert.equal(queued, FULL);
        assert.equal(await synchronous(), FULL);
        assert.deepEqual(
          await tdb.db.kysely.selectFrom('settings').select('value').where('key', '=', 'lazy-fail').execute(),
          [],
        );
      },
    );
  });
}

describe('SQLite checkpoints', () => {
  it('the event-loop connection never checkpoints; the writer thread folds the WAL back within seconds', async () => {
    const tdb = await createTestDb('sqlite');
    try {
      const autocheckpoint = (
        await sql<{ wal_autocheckpoint: number }>`pragma wal_autocheckpoint`.execute(tdb.db.kysely)
      ).rows[0]?.wal_autocheckpoint;
      assert.equal(autocheckpoint, 0);
      const value = 'x'.repeat(3000);
      await tdb.db.kysely.transaction().execute(async (trx) => {
        for (let i = 0; i < 200; i++)
          await trx
            .insertInto('settings')
            .values({ key: `wal-${i}`, value })
            .execute();
      });
      // What the event loop wrote sits in the WAL until the writer thread's checkpoint copies it.
      const walFrames = async () => {
        const r = (
          await sql<{ busy: number; log: number; checkpointed: number }>`pragma wal_checkpoint(PASSIVE)`.execute(
            tdb.db.kysely,
          )
        ).rows[0]!;
        return { log: r.log, checkpointed: r.checkpointed };
      };
      const deadline = Date.now() + 10_000;
      const dbFile = tdb.url.replace(/^sqlite:/, '');
      const before = statSync(dbFile).size;
      while (statSync(dbFile).size <= before + 200 * 3000 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 100));
      assert.ok(
        statSync(dbFile).size > before + 200 * 3000,
        'the database file grew by the rows written, without any checkpoint on this connection',
      );
      const frames = await walFrames();
      assert.equal(frames.log, frames.checkpointed);
    } finally {
      await tdb.cleanup();
    }
  });
});

function job(id: string, dedupe: string) {
  const now = new Date().toISOString();
  return {
    id,
    kind: 'k',
    payload: 'null',
    status: 'queued' as const,
    attempts: 0,
    max_attempts: 1,
    run_at: now,
    lease_until: null,
    locked_by: null,
    last_error: null,
    dedupe_key: dedupe,
    created_at: now,
    updated_at: now,
  };
}
