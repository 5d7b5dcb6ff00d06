import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
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
      const row = await tdb.db.kysely.selectFrom('jobs').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
      assert.equal(typeof row.n, 'number');
      assert.deepEqual(await tdb.db.kysely.selectFrom('settings').selectAll().execute(), [{ key: 'k', value: 'v' }]);
    });

    it('names unique violations the same way on both drivers', async () => {
      await tdb.db.kysely.insertInto('jobs').values(job('a', 'dup')).execute();
      const err = await tdb.db.kysely.insertInto('jobs').values(job('b', 'dup')).execute().then(
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
  });
}

function job(id: string, dedupe: string) {
  const now = new Date().toISOString();
  return { id, kind: 'k', payload: 'null', status: 'queued' as const, attempts: 0, max_attempts: 1, run_at: now, lease_until: null, locked_by: null, last_error: null, dedupe_key: dedupe, created_at: now, updated_at: now };
}
