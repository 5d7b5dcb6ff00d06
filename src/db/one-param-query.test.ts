import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDb, dbKinds } from '../../test/support/test-db.js';
import type { TestDatabase } from '../../test/support/test-db.js';
import { OneParamQuery, ParamQuery } from './one-param-query.js';

for (const kind of dbKinds()) {
  describe(`OneParamQuery [${kind}]`, () => {
    let t: TestDatabase;
    before(async () => {
      t = await createTestDb(kind);
      const now = new Date(0).toISOString();
      await t.db.kysely.insertInto('admin_tokens').values([{ token_hash: 'h-one', created_at: now }, { token_hash: 'h-two', created_at: now }]).execute();
    });
    after(() => t.cleanup());

    it('reruns the compiled query with each new value', async () => {
      let builds = 0;
      const q = new OneParamQuery((hash: string) => {
        builds++;
        return t.db.kysely.selectFrom('admin_tokens').select('token_hash').where('token_hash', '=', hash);
      });
      assert.deepEqual(await q.first(t.db.kysely, 'h-one'), { token_hash: 'h-one' });
      assert.deepEqual(await q.first(t.db.kysely, 'h-two'), { token_hash: 'h-two' });
      assert.equal(await q.first(t.db.kysely, 'h-none'), undefined);
      // Once with the first value, once with probes; never again.
      assert.equal(builds, 2);
    });

    it('puts several values where the builder put them, whatever the order', async () => {
      let builds = 0;
      const q = new ParamQuery((a: string, b: string) => {
        builds++;
        return t.db.kysely.selectFrom('admin_tokens').select('token_hash').where('created_at', '>=', b).where('token_hash', '=', a).orderBy('token_hash');
      });
      const epoch = new Date(0).toISOString();
      assert.deepEqual(await q.execute(t.db.kysely, 'h-one', epoch), [{ token_hash: 'h-one' }]);
      assert.deepEqual(await q.execute(t.db.kysely, 'h-two', epoch), [{ token_hash: 'h-two' }]);
      assert.deepEqual(await q.execute(t.db.kysely, 'h-two', '2999-01-01'), []);
      assert.equal(builds, 2);
    });

    it('builds anew every time when the query carries a constant parameter', async () => {
      let builds = 0;
      const q = new OneParamQuery((hash: string) => {
        builds++;
        return t.db.kysely.selectFrom('admin_tokens').select('token_hash').where('token_hash', 'in', [hash, 'h-two']);
      });
      assert.deepEqual((await q.execute(t.db.kysely, 'h-one')).map((r) => r.token_hash).sort(), ['h-one', 'h-two']);
      assert.deepEqual((await q.execute(t.db.kysely, 'h-none')).map((r) => r.token_hash), ['h-two']);
      assert.equal(builds, 3);
    });
  });
}
