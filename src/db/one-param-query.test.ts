import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { CompiledQuery } from 'kysely';
import { createTestDb, dbKinds } from '../../test/support/test-db.js';
import type { TestDatabase } from '../../test/support/test-db.js';
import { OneParamQuery, ParamQuery, RowsInsert } from './one-param-query.js';

for (const kind of dbKinds()) {
  describe(`OneParamQuery [${kind}]`, () => {
    let t: TestDatabase;
    before(async () => {
      t = await createTestDb(kind);
      const now = new Date(0).toISOString();
      await t.db.kysely
        .insertInto('admin_tokens')
        .values([
          { token_hash: 'h-one', created_at: now },
          { token_hash: 'h-two', created_at: now },
        ])
        .execute();
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
        return t.db.kysely
          .selectFrom('admin_tokens')
          .select('token_hash')
          .where('created_at', '>=', b)
          .where('token_hash', '=', a)
          .orderBy('token_hash');
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
      assert.deepEqual(
        (await q.execute(t.db.kysely, 'h-none')).map((r) => r.token_hash),
        ['h-two'],
      );
      assert.equal(builds, 3);
    });
  });

  describe(`RowsInsert [${kind}]`, () => {
    let t: TestDatabase;
    before(async () => {
      t = await createTestDb(kind);
    });
    after(() => t.cleanup());

    for (const multiRow of [true, false]) {
      it(`writes each row's own values, ${multiRow ? 'multi-row statements' : 'a statement per row'}`, async () => {
        let builds = 0;
        const statements: number[] = [];
        const ins = new RowsInsert<{ key: string; value: string }>(
          ['key', 'value'],
          (rows) => {
            builds++;
            return t.db.kysely.insertInto('settings').values(rows);
          },
          () => multiRow,
        );
        const runner = {
          executeQuery: <R>(q: CompiledQuery<R>) => {
            statements.push(q.parameters.length / 2);
            return t.db.kysely.executeQuery<R>(q);
          },
        };
        const rows = Array.from({ length: 21 }, (_, i) => ({
          value: `v${i}-${multiRow}`,
          key: `rows-${multiRow}-${String(i).padStart(2, '0')}`,
        }));
        await ins.run(runner, rows);
        await ins.run(
          runner,
          rows.slice(0, 5).map((r) => ({ ...r, key: `${r.key}-again` })),
        );
        const stored = await t.db.kysely
          .selectFrom('settings')
          .selectAll()
          .where('key', 'like', `rows-${multiRow}-%`)
          .orderBy('key')
          .execute();
        assert.equal(stored.length, 26);
        for (const r of rows) assert.equal(stored.find((x) => x.key === r.key)?.value, r.value);
        assert.equal(stored.find((x) => x.key === `rows-${multiRow}-03-again`)?.value, `v3-${multiRow}`);
        // 21 = 16 + 4 + 1 and 5 = 4 + 1 in multi-row statements; each size is compiled once.
        assert.deepEqual(statements, multiRow ? [16, 4, 1, 4, 1] : Array(26).fill(1));
        assert.equal(builds, multiRow ? 3 : 1);
      });
    }
  });
}
