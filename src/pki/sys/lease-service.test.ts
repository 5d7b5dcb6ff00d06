import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { JobQueue } from '../../jobs/job-queue.js';
import { ManualClock } from '../../shared/clock.js';
import { dbKinds, createTestDb } from '../../../test/support/test-db.js';
import type { TestDatabase } from '../../../test/support/test-db.js';
import type { MountInfo } from '../pki-route.js';
import { EXPIRY_SWEEP_JOB, expiryBucket } from './expiry-sweep.js';
import { LeaseRepo } from './lease-repo.js';
import { LeaseService } from './lease-service.js';

const mount: MountInfo = { id: 'm-1', path: 'pki/', type: 'pki', defaultLeaseTtlSeconds: 0, maxLeaseTtlSeconds: 0 };

for (const kind of dbKinds()) {
  describe(`lease service: expiry sweeps [${kind}]`, () => {
    let tdb: TestDatabase;
    let leases: LeaseService;
    const clock = new ManualClock('2026-05-01T00:10:00Z');

    before(async () => {
      tdb = await createTestDb(kind);
      const db = tdb.db.kysely;
      leases = new LeaseService({ db, repo: new LeaseRepo({ db }), clock, jobs: new JobQueue({ db: tdb.db, clock }) });
    });
    after(async () => tdb?.cleanup());

    const sweeps = async () =>
      (
        await tdb.db.kysely
          .selectFrom('jobs')
          .select('dedupe_key')
          .where('kind', '=', EXPIRY_SWEEP_JOB)
          .orderBy('dedupe_key')
          .execute()
      ).map((r) => r.dedupe_key);
    const keyFor = (ttlSeconds: number) =>
      `${EXPIRY_SWEEP_JOB}:${expiryBucket(new Date(clock.now().getTime() + ttlSeconds * 1000))}`;
    const lease = (ttlSeconds: number) =>
      leases.prepare({ mount, path: 'issue/web', kind: 'pki-cert', data: {}, ttlSeconds });
    /** Writes leases in a transaction of its own, as a certificate group commit does. */
    const inTransaction = async (ttls: number[], opts: { rollBack?: boolean } = {}) => {
      let committed: (() => void) | undefined;
      const write = tdb.db.units.readWrite(async (trx) => {
        committed = await leases.insertMany(trx, ttls.map(lease));
        if (opts.rollBack) throw new Error('rolled back');
      });
      if (opts.rollBack) await assert.rejects(write, /rolled back/);
      else {
        await write;
        committed!();
      }
    };
    const clearSweeps = () => tdb.db.kysely.deleteFrom('jobs').where('kind', '=', EXPIRY_SWEEP_JOB).execute();

    it('schedules one sweep per expiry hour, once per process after its commit', async () => {
      await inTransaction([60, 120, 7200]);
      assert.deepEqual(await sweeps(), [keyFor(60), keyFor(7200)].sort());
      // Taken away behind the service's back: a later commit for the same hours writes none,
      // which shows the statement is no longer made.
      await clearSweeps();
      await inTransaction([90, 7300]);
      assert.deepEqual(await sweeps(), []);
      // A new hour still gets its sweep.
      await inTransaction([90, 4 * 3600]);
      assert.deepEqual(await sweeps(), [keyFor(4 * 3600)]);
    });

    it('remembers nothing from a transaction that rolled back', async () => {
      await clearSweeps();
      await inTransaction([10 * 3600], { rollBack: true });
      assert.deepEqual(await sweeps(), [], 'rolled back with its leases');
      await inTransaction([10 * 3600]);
      assert.deepEqual(await sweeps(), [keyFor(10 * 3600)], 'written again by the next commit');
    });

    it('a single lease outside a transaction counts as committed; inside one it does not', async () => {
      await clearSweeps();
      await leases.create({ mount, path: 'issue/web', kind: 'pki-cert', data: {}, ttlSeconds: 20 * 3600 });
      assert.deepEqual(await sweeps(), [keyFor(20 * 3600)]);
      await clearSweeps();
      await leases.create({ mount, path: 'issue/web', kind: 'pki-cert', data: {}, ttlSeconds: 20 * 3600 });
      assert.deepEqual(await sweeps(), []);
      await tdb.db.units.readWrite((trx) =>
        leases.create({ mount, path: 'issue/web', kind: 'pki-cert', data: {}, ttlSeconds: 30 * 3600 }, trx),
      );
      await clearSweeps();
      await tdb.db.units.readWrite((trx) =>
        leases.create({ mount, path: 'issue/web', kind: 'pki-cert', data: {}, ttlSeconds: 30 * 3600 }, trx),
      );
      assert.deepEqual(await sweeps(), [keyFor(30 * 3600)]);
    });
  });
}
