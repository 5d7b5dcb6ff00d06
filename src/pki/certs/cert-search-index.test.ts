import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { sql } from 'kysely';
import { createTestDb, dbKinds } from '../../../test/support/test-db.js';
import type { TestDatabase } from '../../../test/support/test-db.js';
import { until } from '../../../test/support/wait.js';
import { planName } from './cert-search.js';
import type { CertSearchQuery } from './cert-search.js';
import { CertSearchIndex } from './cert-search-index.js';
import { CertSearchRepo } from './cert-search-repo.js';

describe('name plan of certificate search', () => {
  it('asks the index for the rarest trigrams only, and for none when even the rarest is common', () => {
    const share = (t: string) =>
      ['exa', 'xam', 'amp', 'mpl', 'ple', 'le.', 'e.c', '.co', 'com'].includes(t) ? 1 : 0.01;
    assert.deepEqual(planName('example.com', share), {});
    const plan = planName('svc42.example.com', (t) => ({ c42: 0.001, '42.': 0.002, vc4: 0.01 })[t] ?? 0.9);
    assert.equal(plan.match, '"c42" AND "42." AND "vc4"');
    assert.deepEqual(
      planName('ab', () => 0),
      {},
    );
    assert.equal(planName('a"b', () => 0).match, '"a""b"');
  });
});

for (const kind of dbKinds()) {
  describe(`certificate search index [${kind}]`, () => {
    let t: TestDatabase;
    let repo: CertSearchRepo;
    let index: CertSearchIndex;
    before(async () => {
      t = await createTestDb(kind);
      repo = new CertSearchRepo({ db: t.db.kysely, kind, writeTransaction: t.db.writeTransaction });
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

    it('indexes in the background after stored() without a search asking', async () => {
      if (kind !== 'sqlite') return;
      await insert('m3', ['background.example']);
      assert.equal(await repo.unindexedRows(), 1);
      index.stored(1);
      await until('the background batch', async () => (await repo.unindexedRows()) === 0);
    });
  });
}
