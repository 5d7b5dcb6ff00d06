import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDb, dbKinds } from '../../test/support/test-db.js';
import type { TestDatabase } from '../../test/support/test-db.js';
import { OneParamQuery } from './one-param-query.js';

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
      assert.equal(builds, 1);
    });

    it('builds anew every time when the query does not have exactly that one parameter', async () => {
      let builds = 0;
      const q = new OneParamQuery((hash: string) => {
        builds++;
        return t.db.kysely.selectFrom('admin_tokens').select('token_hash').where('token_hash', 'in', [hash, 'h-two']);
      });
      assert.deepEqual((await q.execute(t.db.kysely, 'h-one')).map((r) => r.token_hash).sort(), ['h-one', 'h-two']);
      assert.deepEqual((await q.execute(t.db.kysely, 'h-none')).map((r) => r.token_hash), ['h-two']);
      assert.equal(builds, 2);
    });
  });
}
