import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import SqliteDatabase from 'better-sqlite3';
import { sql } from 'kysely';
import type { Kysely } from 'kysely';
import { createTestDb, dbKinds } from '../../test/support/test-db.js';
import type { TestDatabase } from '../../test/support/test-db.js';
import { isUniqueViolation } from './constraint-errors.js';
import { openDatabase } from './database.js';
import type { Db } from './database.js';
import { migrateToLatest } from './migrate.js';
import type { Database } from './schema.js';
import { ParamQuery, RowInsert, RowsInsert } from './one-param-query.js';
import { WriteOnlyReadError, asOneStatement, write } from './unit-of-work.js';

/** The databases the units run on: a SQLite file, SQLite in memory, and PostgreSQL when the run has it. */
const targets: Array<{ name: string; open(): Promise<{ db: Db; url?: string; cleanup(): Promise<void> }> }> = [
  ...dbKinds().map((kind) => ({
    name: kind === 'sqlite' ? 'sqlite file' : kind,
    open: async () => {
      const t: TestDatabase = await createTestDb(kind);
      return { db: t.db, url: t.url, cleanup: () => t.cleanup() };
    },
  })),
  {
    name: 'sqlite memory',
    open: async () => {
      const db = openDatabase({ url: 'sqlite::memory:' });
      await migrateToLatest(db);
      return { db, cleanup: () => db.destroy() };
    },
  },
];

for (const target of targets) {
  describe(`units of work [${target.name}]`, () => {
    let db: Db;
    let url: string | undefined;
    let cleanup: () => Promise<void>;
    before(async () => ({ db, url, cleanup } = await target.open()));
    after(async () => cleanup());

    const value = async (key: string) =>
      (await db.kysely.selectFrom('settings').select('value').where('key', '=', key).executeTakeFirst())?.value;
    /** The error a unit failed with (undefined when it succeeded). */
    const failure = (unit: Promise<unknown>) =>
      unit.then(
        () => undefined,
        (e: unknown) => e,
      );
    const put = (tx: Kysely<Database>, key: string, v = '1') =>
      write(tx, tx.insertInto('settings').values({ key, value: v }));

    it('a read-write unit reads its own writes and resolves with its value once committed', async () => {
      const got = await db.units.readWrite(async (tx) => {
        await tx.insertInto('settings').values({ key: 'rw', value: 'a' }).execute();
        const r = await tx.updateTable('settings').set({ value: 'b' }).where('key', '=', 'rw').executeTakeFirst();
        const row = await tx.selectFrom('settings').select('value').where('key', '=', 'rw').executeTakeFirstOrThrow();
        return { updated: Number(r.numUpdatedRows), value: row.value };
      });
      assert.deepEqual(got, { updated: 1, value: 'b' });
      assert.equal(await value('rw'), 'b');
    });

    it('a read in a write-only unit throws at once, and the unit commits nothing', async () => {
      const reads: Array<[string, (tx: Kysely<Database>) => Promise<unknown>]> = [
        ['select', (tx) => tx.selectFrom('settings').selectAll().execute()],
        ['returning', (tx) => tx.insertInto('settings').values({ key: 'wo-r', value: '1' }).returning('key').execute()],
        ['raw select', (tx) => sql`select 1 as one`.execute(tx)],
        [
          'a compiled read',
          (tx) =>
            new ParamQuery((k: string) => tx.selectFrom('settings').selectAll().where('key', '=', k)).first(tx, 'x'),
        ],
        // A builder's execute() reads the affected row count, which a write-only unit cannot know.
        [
          'affected rows',
          (tx) => tx.updateTable('settings').set({ value: '2' }).where('key', '=', 'rw').executeTakeFirst(),
        ],
        [
          "a compiled write's result",
          async (tx) =>
            (await new ParamQuery((k: string) => tx.deleteFrom('settings').where('key', '=', k)).run(tx, 'rw'))
              .numAffectedRows,
        ],
      ];
      for (const [what, read] of reads) {
        let after = false;
        await assert.rejects(
          db.units.writeOnly(async (tx) => {
            await put(tx, `wo-${what}`);
            await read(tx);
            after = true;
          }),
          WriteOnlyReadError,
          what,
        );
        assert.equal(after, false, `${what}: the read threw where it was made`);
        assert.equal(await value(`wo-${what}`), undefined, `${what}: nothing of the unit was committed`);
      }
      assert.equal(await value('rw'), 'b');
    });

    it('a write-only unit runs every kind of statement and is committed when it resolves', async () => {
      const insertOne = new RowInsert((row: { key: string; value: string }) =>
        db.kysely.insertInto('settings').values(row),
      );
      const insertMany = new RowsInsert<{ key: string; value: string }>(
        ['key', 'value'],
        (rows) => db.kysely.insertInto('settings').values(rows),
        () => db.kind !== 'sqlite',
      );
      await db.units.writeOnly(async (tx) => {
        await put(tx, 'wo-builder');
        await insertOne.run(tx, { key: 'wo-row', value: '1' });
        await insertMany.run(tx, [
          { key: 'wo-rows-1', value: '1' },
          { key: 'wo-rows-2', value: '1' },
        ]);
        await sql`update settings set value = ${'2'} where key = ${'wo-builder'}`.execute(tx);
      });
      // Committed before the promise resolved: another connection sees it at once.
      if (url?.startsWith('sqlite:')) {
        const other = new SqliteDatabase(url.replace(/^sqlite:/, ''), { readonly: true });
        try {
          const rows = other.prepare(`select key, value from settings where key like 'wo-%' order by key`).all();
          assert.deepEqual(rows, [
            { key: 'wo-builder', value: '2' },
            { key: 'wo-row', value: '1' },
            { key: 'wo-rows-1', value: '1' },
            { key: 'wo-rows-2', value: '1' },
          ]);
        } finally {
          other.close();
        }
      }
      assert.equal(await value('wo-builder'), '2');
      assert.equal(await value('wo-rows-2'), '1');
    });

    it('a failing statement fails the whole write-only unit with the driver error', async () => {
      await db.units.writeOnly((tx) => put(tx, 'wo-dup'));
      const err = await failure(
        db.units.writeOnly(async (tx) => {
          await put(tx, 'wo-dup-other');
          await put(tx, 'wo-dup');
        }),
      );
      assert.ok(isUniqueViolation(err), String(err));
      assert.equal(await value('wo-dup-other'), undefined);
    });

    it('a write-only unit of inserts into two tables: all or nothing, and one statement on PostgreSQL', async () => {
      const copy = (tx: Kysely<Database>, key: string) =>
        sql`insert into pki_settings (mount_id, name, value, updated_at)
            select ${'m-wo'}, ${key}, value, ${'2026-01-01T00:00:00Z'} from settings where key = ${key}`.execute(tx);
      const copied = async (key: string) =>
        (
          await db.kysely
            .selectFrom('pki_settings')
            .select('value')
            .where('mount_id', '=', 'm-wo')
            .where('name', '=', key)
            .executeTakeFirst()
        )?.value;
      await db.units.writeOnly(async (tx) => {
        await put(tx, 'wo-two', 'x');
        await copy(tx, 'wo-two');
      });
      assert.equal(await value('wo-two'), 'x');
      // In a transaction the copy sees the row inserted before it; as one statement on
      // PostgreSQL both run in one snapshot, so it does not.
      assert.equal(await copied('wo-two'), db.kind === 'postgres' ? undefined : 'x');
      if (db.kind === 'postgres')
        await db.units.writeOnly(async (tx) => {
          await copy(tx, 'wo-two');
        });
      assert.equal(await copied('wo-two'), 'x');
      const err = await failure(
        db.units.writeOnly(async (tx) => {
          await put(tx, 'wo-two-other');
          await copy(tx, 'wo-two');
        }),
      );
      assert.ok(isUniqueViolation(err), String(err));
      assert.equal(await value('wo-two-other'), undefined, 'the first insert was undone with the second');
    });

    it('a read-write unit is committed when it resolves', async () => {
      await db.units.readWrite((tx) => put(tx, 'rw-durable'));
      if (url?.startsWith('sqlite:')) {
        const other = new SqliteDatabase(url.replace(/^sqlite:/, ''), { readonly: true });
        try {
          assert.deepEqual(other.prepare(`select value from settings where key = 'rw-durable'`).all(), [
            { value: '1' },
          ]);
        } finally {
          other.close();
        }
      }
      assert.equal(await value('rw-durable'), '1');
    });

    it('a group commit merges concurrent units into one commit; a failing unit loses only its own writes', async () => {
      const group = db.units.group({ maxBatch: 100 });
      const units = db.units;
      const readWrite = units.readWrite.bind(units);
      let commits = 0;
      units.readWrite = (fn) => {
        commits++;
        return readWrite(fn);
      };
      try {
        const txids: unknown[] = [];
        const results = await Promise.allSettled(
          ['a', 'b', 'c', 'd', 'e'].map((name) =>
            group.readWrite(async (tx) => {
              await put(tx, `g-${name}`);
              if (db.kind === 'postgres')
                txids.push((await sql<{ id: string }>`select txid_current()::text as id`.execute(tx)).rows[0]?.id);
              if (name === 'c') throw new Error('unit c fails');
              // Reads work in a grouped read-write unit, and see the unit's own write.
              return (await tx.selectFrom('settings').select('value').where('key', '=', `g-${name}`).executeTakeFirst())
                ?.value;
            }),
          ),
        );
        assert.deepEqual(
          results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message)),
          ['1', '1', 'unit c fails', '1', '1'],
        );
        assert.equal(commits, 1, 'the five units shared one commit');
        if (db.kind === 'postgres') assert.equal(new Set(txids).size, 1);
        for (const name of ['a', 'b', 'd', 'e']) assert.equal(await value(`g-${name}`), '1');
        assert.equal(await value('g-c'), undefined, 'the failing unit left nothing');
        await group.drain();
      } finally {
        units.readWrite = readWrite;
      }
    });

    it('an ungrouped group commits each unit on its own', async () => {
      const group = db.units.group({ maxBatch: 100, grouped: false });
      const results = await Promise.allSettled([
        group.readWrite((tx) => put(tx, 'u-a')),
        group.readWrite(async (tx) => {
          await put(tx, 'u-b');
          throw new Error('unit b fails');
        }),
      ]);
      assert.deepEqual(
        results.map((r) => r.status),
        ['fulfilled', 'rejected'],
      );
      assert.equal(await value('u-a'), '1');
      assert.equal(await value('u-b'), undefined);
    });
  });
}

describe('asOneStatement: a write-only unit as one PostgreSQL statement', () => {
  const st = (sqlText: string, n: number) => ({ sql: sqlText, parameters: Array.from({ length: n }, (_, i) => i) });

  it('joins inserts into different tables as WITH clauses, numbering the parameters on', () => {
    const one = st('insert into "a" ("x") values ($1)', 1);
    assert.equal(asOneStatement([one]), one, 'one statement alone');
    const ten = st(
      `insert into "a" (${'x,'.repeat(9)}x) values (${[...Array(10).keys()].map((i) => `$${i + 1}`)})`,
      10,
    );
    const joined = asOneStatement([ten, st('insert into b select * from f($1::json) on conflict (k) do nothing', 1)]);
    assert.ok(joined);
    assert.match(joined.sql, /^with w0 as \(insert into "a" .*\$10\)\) insert into b select \* from f\(\$11::json\)/);
    assert.doesNotMatch(joined.sql, /\$1::json/);
    assert.equal(joined.parameters.length, 11);
  });

  it('leaves to a transaction what one snapshot could change, or what it cannot read safely', () => {
    const ins = st('insert into "a" ("x") values ($1)', 1);
    const cases: Array<[string, string]> = [
      ['the same table twice', 'insert into a ("x") values ($1)'],
      ['an update', 'update "b" set "x" = $1'],
      ['a delete', 'delete from "b" where "x" = $1'],
      ['a string literal', `insert into "b" ("x") values ('y')`],
      ['dollar quoting', 'insert into "b" ("x") values ($$y$$)'],
      ['several commands', 'insert into "b" ("x") values ($1); delete from "a"'],
      ['a schema-qualified table', 'insert into "public"."b" ("x") values ($1)'],
    ];
    for (const [what, text] of cases) assert.equal(asOneStatement([ins, st(text, 1)]), undefined, what);
    assert.equal(asOneStatement([st('insert into "b" ("x") values ($1)', 65_535), ins]), undefined, 'too many');
  });
});
