import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { openDatabase } from '../db/database.js';
import type { Db } from '../db/database.js';
import { ManualClock } from '../shared/clock.js';
import { dbKinds, createTestDb } from '../../test/support/test-db.js';
import type { TestDatabase } from '../../test/support/test-db.js';
import { AdminTokenRepo } from './admin-token-repo.js';
import { AdminTokenService } from './admin-token-service.js';

const TOKEN = /^sr\.[1-9A-Za-z]{40}$/;

for (const kind of dbKinds()) {
  describe(`the initial admin token [${kind}]`, () => {
    let tdb: TestDatabase;
    const clock = new ManualClock(new Date('2026-01-01T00:00:00Z'));
    const service = (db: Db) =>
      new AdminTokenService({ repo: new AdminTokenRepo({ db: db.kysely, units: db.units }), clock });

    before(async () => {
      tdb = await createTestDb(kind);
    });
    after(async () => {
      await tdb.cleanup();
    });

    it('is not stored when the start dies before showing it, so the next start shows one', async () => {
      const tokens = service(tdb.db);
      await assert.rejects(
        tokens.ensureInitial(() => {
          throw new Error('stdout is gone');
        }),
        /stdout is gone/,
      );
      assert.deepEqual(await tokens.list(), [], 'nothing stored');
      const shown: Array<string | undefined> = [];
      await tokens.ensureInitial((t) => shown.push(t));
      assert.equal(shown.length, 1);
      assert.match(shown[0] ?? '', TOKEN);
      assert.equal(await tokens.isAdmin(shown[0]!), true);
      // A later start shows none.
      const later: Array<string | undefined> = [];
      await tokens.ensureInitial((t) => later.push(t));
      assert.deepEqual(later, [undefined]);
      await tokens.revoke(shown[0]!);
    });

    it('is honoured by a request made the moment it is shown, before its commit has ended', async () => {
      const tokens = service(tdb.db);
      // Open pooled connections first, so that the check below is sent at once, ahead of the commit.
      await Promise.all(Array.from({ length: 3 }, () => tokens.isAdmin('sr.warm-up')));
      let check: Promise<boolean> | undefined;
      let token = '';
      await tokens.ensureInitial((t) => {
        token = t ?? '';
        // A script that reads the banner and calls at once: the answer waits for the commit.
        check = tokens.isAdmin(token);
      });
      assert.match(token, TOKEN);
      assert.equal(await check, true);
      assert.equal(await tokens.isAdmin('sr.not-the-one'), false);
      await tokens.revoke(token);
    });

    // Several nodes share PostgreSQL only: a SQLite data directory serves one server (main.ts).
    if (kind === 'postgres')
      it('is shown by exactly one of several nodes starting at once on a fresh database', async () => {
        // Each node has its own connections, as separate processes would.
        const nodes = Array.from({ length: 8 }, () => openDatabase({ url: tdb.url, poolSize: 1 }));
        try {
          // Connected beforehand, so that their transactions overlap.
          await Promise.all(nodes.map((db) => sql`select 1`.execute(db.kysely)));
          const shown: Array<string | undefined> = [];
          await Promise.all(nodes.map((db) => service(db).ensureInitial((t) => shown.push(t))));
          assert.equal(shown.length, nodes.length, 'every node shows its banner');
          const tokens = shown.filter((t) => t !== undefined);
          assert.equal(tokens.length, 1, `tokens shown: ${tokens.length}`);
          const stored = await service(tdb.db).list();
          assert.equal(stored.length, 1, 'one token stored, the one shown');
          assert.equal(await service(tdb.db).isAdmin(tokens[0]!), true);
        } finally {
          await Promise.all(nodes.map((db) => db.destroy()));
        }
      });
  });
}
