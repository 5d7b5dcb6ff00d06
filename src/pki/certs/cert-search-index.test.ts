import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { createTestDb, dbKinds } from '../../../test/support/test-db.js';
import type { TestDatabase } from '../../../test/support/test-db.js';
import { until } from '../../../test/support/wait.js';
import { pgTrigramUsable, planName } from './cert-search.js';
import type { CertSearchQuery } from './cert-search.js';
import { CertSearchIndex } from './cert-search-index.js';
import { CertSearchRepo } from './cert-search-repo.js';

describe('name plan of certificate search', () => {
  it('asks the index for the rarest trigrams only, and for none when even the rarest is common', () => {
    const common = ['exa', 'xam', 'amp', 'mpl', 'ple', 'le.', 'e.c', '.co', 'com'];
    assert.deepEqual(
      planName('example.com', (t) => (common.includes(t) ? 1 : 0.01)),
      { common: true },
    );
    const shares: Record<string, number> = { c42: 0.001, '42.': 0.002, vc4: 0.01, svc: 0.04 };
    assert.deepEqual(
      planName('svc42.example.com', (t) => shares[t] ?? 0.9),
      { trigrams: ['c42', '42.', 'vc4'] },
    );
    assert.deepEqual(
      planName('ab', () => 0),
      {},
    );
  });

  it('on PostgreSQL uses only trigrams pg_trgm indexes for a LIKE pattern', () => {
    for (const t of ['c42', '42.', '.ex', 'a-b'.slice(1) + 'c', 'ab@']) assert.ok(pgTrigramUsable(t), t);
    for (const t of ['2.e', '.e.', 'a%b', 'ab_', '_ab', 'a b', 'é42']) assert.ok(!pgTrigramUsable(t), t);
    const shares: Record<string, number> = { '2.e': 0, c42: 0.01, '42.': 0.02 };
    assert.deepEqual(
      planName('svc42.e', (t) => shares[t] ?? 0.9, pgTrigramUsable),
      { trigrams: ['c42', '42.'] },
    );
    assert.deepEqual(
      planName('2.e', () => 0, pgTrigramUsable),
      {},
    );
  });
});

for (const kind of dbKinds()) {
  describe(`certificate search index [${kind}]`, () => {
    let t: TestDatabase;
    let repo: CertSearchRepo;
    let index: CertSearchIndex;
    before(async () => {
      t = await createTestDb(kind);
      repo = new CertSearchRepo({ db: t.db.kysely, kind, units: t.db.units });
      index = new CertSearchIndex({ repo });
    });
    after(async () => {
      await index.close();
      await t?.cleanup();
    });

    const insert = async (mount: string, names: string[]) => {
      for (const n of names)
        await t.db.kysely
          .insertInto('pki_certs')
          .values({
            mount_id: mount,
            serial: randomBytes(20).toString('hex'),
            issuer_id: 'i1',
            certificate_der: randomBytes(50),
            not_after: '2031-01-01T00:00:00.000Z',
            revoked_at: null,
            revocation_issuer_id: null,
            created_at: '2030-01-01T00:00:00.000Z',
            common_name: n,
            names: n,
            role: 'r',
          })
          .execute();
    };
    const find = async (mount: string, name: string) => {
      await index.catchUp();
      const q: CertSearchQuery = { name, sort: 'not_after', descending: false, limit: 50 };
      const hits = await repo.search(mount, q, await index.plan(name));
      return hits.map((h) => h.commonName).sort();
    };
    const integrity = async () => {
      if (kind !== 'sqlite') return;
      // FTS5 compares its index with the content table row by row; it throws when they disagree.
      await sql`INSERT INTO pki_certs_names_fts (pki_certs_names_fts, rank) VALUES ('integrity-check', 1)`.execute(
        t.db.kysely,
      );
    };

    it('finds certificates stored by any path once the index catches up, and nothing that was deleted', async () => {
      await insert('m1', ['alpha-one.example', 'alpha-two.example', 'beta.example']);
      if (kind === 'sqlite') assert.equal(await repo.unindexedRows(), 3);
      assert.deepEqual(await find('m1', 'alpha-'), ['alpha-one.example', 'alpha-two.example']);
      assert.equal(await repo.unindexedRows(), 0);
      await integrity();
      // Deleting the newest row lets SQLite give its rowid again; the row that gets it must be indexed.
      await t.db.kysely
        .deleteFrom('pki_certs')
        .where('common_name', 'in', ['beta.example', 'alpha-two.example'])
        .execute();
      await insert('m1', ['gamma-new.example', 'delta-new.example']);
      assert.deepEqual(await find('m1', 'new.ex'), ['delta-new.example', 'gamma-new.example']);
      assert.deepEqual(await find('m1', 'beta.ex'), []);
      assert.deepEqual(await find('m1', 'alpha-'), ['alpha-one.example']);
      await integrity();
    });

    it('follows a change of names of an indexed row and of a row not yet indexed', async () => {
      await insert('m2', ['old-indexed.example']);
      await index.catchUp();
      await insert('m2', ['old-pending.example']);
      await t.db.kysely
        .updateTable('pki_certs')
        .set({ names: sql`replace(names, 'old', 'renamed')` })
        .where('mount_id', '=', 'm2')
        .execute();
      assert.deepEqual(await find('m2', 'old-'), []);
      assert.equal((await find('m2', 'renamed-')).length, 2);
      await integrity();
    });

    it('answers the same whichever plan asks the index, the whole substring checked on each row', async () => {
      await insert('m4', ['web-42.zone-a.example', 'web-420.zone-b.example', 'db-42.zone-a.example', 'x%y_z.example']);
      await index.catchUp();
      const q: CertSearchQuery = { name: '42.zone-a', sort: 'not_after', descending: false, limit: 50 };
      const want = ['db-42.zone-a.example', 'web-42.zone-a.example'];
      for (const plan of [{}, { common: true }, { trigrams: ['42.', 'one'] }, { trigrams: ['zon'] }]) {
        const hits = await repo.search('m4', q, plan);
        assert.deepEqual(hits.map((h) => h.commonName).sort(), want, JSON.stringify(plan));
      }
      // Pattern characters in a substring are literal.
      const odd = await repo.search('m4', { ...q, name: 'x%y_' }, { trigrams: ['x%y'] });
      assert.deepEqual(
        odd.map((h) => h.commonName),
        ['x%y_z.example'],
      );
      assert.deepEqual(await repo.search('m4', { ...q, name: 'x_y' }, {}), []);
    });

    it('indexes in the background after stored() without a search asking', async () => {
      if (kind !== 'sqlite') return;
      await insert('m3', ['background.example']);
      assert.equal(await repo.unindexedRows(), 1);
      index.stored(1);
      await until('the background batch', async () => (await repo.unindexedRows()) === 0);
    });
  });
}
