import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { dbKinds, createTestDb } from '../../test/support/test-db.js';
import type { TestDatabase } from '../../test/support/test-db.js';
import { openDatabase } from '../db/database.js';
import { ManualClock } from '../shared/clock.js';
import { JobQueue } from './job-queue.js';
import { JobWorker, PermanentJobError } from './job-worker.js';

const silent = pino({ level: 'silent' });

for (const kind of dbKinds()) {
  describe(`job queue [${kind}]`, () => {
    let tdb: TestDatabase;
    let clock: ManualClock;
    let queue: JobQueue;
    before(async () => {
      tdb = await createTestDb(kind);
    });
    after(async () => tdb.cleanup());

    const fresh = async () => {
      await tdb.db.kysely.deleteFrom('jobs').execute();
      clock = new ManualClock('2026-03-01T00:00:00.000Z');
      queue = new JobQueue({ db: tdb.db, clock });
    };
    const worker = (concurrency = 2) =>
      new JobWorker({ queue, logger: silent, concurrency, pollIntervalMs: 10, leaseSeconds: 30 });

    it('enqueues inside the caller transaction: a rollback leaves no job', async () => {
      await fresh();
      await assert.rejects(
        tdb.db.kysely.transaction().execute(async (trx) => {
          await queue.enqueue(trx, { kind: 'k', payload: { a: 1 } });
          throw new Error('rollback');
        }),
      );
      assert.equal((await queue.depth()).queued, 0);
      await tdb.db.kysely.transaction().execute(async (trx) => {
        await queue.enqueue(trx, { kind: 'k', payload: { a: 1 } });
      });
      assert.equal((await queue.depth()).queued, 1);
    });

    it('claims with a lease, and a second claim finds nothing until the lease runs out', async () => {
      await fresh();
      const id = await queue.enqueue(tdb.db.kysely, { kind: 'k' });
      const [job] = await queue.claim('w1', 5, 30);
      assert.equal(job?.id, id);
      assert.equal(job?.attempts, 1);
      assert.deepEqual(await queue.claim('w2', 5, 30), []);
      clock.advance(31);
      const [again] = await queue.claim('w2', 5, 30);
      assert.equal(again?.id, id, 'an expired lease (a crashed node) is reclaimed');
      assert.equal(again?.attempts, 2);
      // The first worker's late completion must not clobber the new owner.
      await queue.complete(id as string, 'w1');
      assert.equal((await queue.find(id as string))?.status, 'running');
      await queue.complete(id as string, 'w2');
      assert.equal((await queue.find(id as string))?.status, 'done');
    });

    it('does not run a job before run_at', async () => {
      await fresh();
      await queue.enqueue(tdb.db.kysely, { kind: 'k', runAt: new Date('2026-03-01T01:00:00.000Z') });
      assert.deepEqual(await queue.claim('w', 5, 30), []);
      clock.advance(3600);
      assert.equal((await queue.claim('w', 5, 30)).length, 1);
    });

    it('retries with backoff, then gives up', async () => {
      await fresh();
      const w = worker();
      let calls = 0;
      w.register('flaky', async () => {
        calls++;
        throw new Error(`boom ${calls}`);
      });
      const id = (await queue.enqueue(tdb.db.kysely, { kind: 'flaky', maxAttempts: 3 })) as string;
      await w.runUntilIdle();
      assert.equal(calls, 1);
      let job = await queue.find(id);
      assert.equal(job?.status, 'queued');
      assert.ok((job?.runAt.getTime() ?? 0) >= clock.now().getTime() + 2000, 'the retry waits');
      await w.runUntilIdle();
      assert.equal(calls, 1, 'not before the backoff');
      clock.advance(3600);
      await w.runUntilIdle();
      clock.advance(3600);
      await w.runUntilIdle();
      assert.equal(calls, 3);
      job = await queue.find(id);
      assert.equal(job?.status, 'dead');
      assert.equal(job?.lastError, 'boom 3');
    });

    it('stops at once on a permanent error', async () => {
      await fresh();
      const w = worker();
      w.register('bad', async () => {
        throw new PermanentJobError('cannot ever work');
      });
      const id = (await queue.enqueue(tdb.db.kysely, { kind: 'bad' })) as string;
      await w.runUntilIdle();
      assert.equal((await queue.find(id))?.status, 'dead');
    });

    it('deduplicates queued jobs by key; a running job can schedule its successor', async () => {
      await fresh();
      assert.ok(await queue.enqueue(tdb.db.kysely, { kind: 'k', dedupeKey: 'x' }));
      assert.equal(await queue.enqueue(tdb.db.kysely, { kind: 'k', dedupeKey: 'x' }), undefined);
      const w = worker();
      let successor: string | undefined;
      w.register('k', async () => {
        successor = await queue.enqueue(tdb.db.kysely, {
          kind: 'later',
          dedupeKey: 'x',
          runAt: new Date('2030-01-01T00:00:00.000Z'),
        });
      });
      await w.runUntilIdle();
      assert.ok(successor, 'the successor was enqueued while its predecessor ran');
      assert.deepEqual(await queue.depth(), { queued: 1, running: 0, done: 1, dead: 0 });
    });

    it('enqueues many in one statement: payloads kept, a key already queued left out', async () => {
      await fresh();
      await queue.enqueue(tdb.db.kysely, { kind: 'k', dedupeKey: 'taken' });
      await tdb.db.kysely.transaction().execute(async (trx) => {
        await queue.enqueueMany(trx, [
          { kind: 'many', payload: { n: 1, text: 'caf\u00e9 \ud800' } },
          { kind: 'many', payload: { n: 2 }, dedupeKey: 'taken' },
          { kind: 'many', payload: { n: 3 }, maxAttempts: 2, runAt: new Date('2026-03-01T00:00:00.000Z') },
        ]);
      });
      const rows = await tdb.db.kysely
        .selectFrom('jobs')
        .selectAll()
        .where('kind', '=', 'many')
        .orderBy('payload')
        .execute();
      assert.deepEqual(
        rows.map((r) => [JSON.parse(r.payload), r.status, r.attempts, r.max_attempts, r.dedupe_key]),
        [
          // The payload is JSON text, so even a lone surrogate comes back as it went in.
          [{ n: 1, text: 'caf\u00e9 \ud800' }, 'queued', 0, 8, null],
          [{ n: 3 }, 'queued', 0, 2, null],
        ],
      );
      assert.equal((await queue.depth()).queued, 3);
    });

    it('runs each job once when several workers on separate connections race', async () => {
      await fresh();
      const n = 60;
      for (let i = 0; i < n; i++) await queue.enqueue(tdb.db.kysely, { kind: 'count', payload: i });
      const runs = new Map<number, number>();
      // Separate pools stand in for separate server processes sharing one database.
      const dbs = [
        openDatabase({ url: tdb.url, poolSize: 3 }),
        openDatabase({ url: tdb.url, poolSize: 3 }),
        openDatabase({ url: tdb.url, poolSize: 3 }),
      ];
      try {
        const workers = dbs.map((db) => {
          const w = new JobWorker({
            queue: new JobQueue({ db, clock }),
            logger: silent,
            concurrency: 4,
            pollIntervalMs: 5,
            leaseSeconds: 30,
          });
          w.register('count', async (payload) => {
            runs.set(payload as number, (runs.get(payload as number) ?? 0) + 1);
            await new Promise((r) => setTimeout(r, 1));
          });
          return w;
        });
        await Promise.all(workers.map((w) => w.runUntilIdle()));
      } finally {
        await Promise.all(dbs.map((db) => db.destroy()));
      }
      assert.equal(runs.size, n);
      assert.ok(
        [...runs.values()].every((c) => c === 1),
        'no job ran twice',
      );
      assert.equal((await queue.depth()).done, n);
    });

    it('lets running jobs finish on stop and polls by itself when started', async () => {
      await fresh();
      const w = new JobWorker({ queue, logger: silent, concurrency: 1, pollIntervalMs: 5, leaseSeconds: 30 });
      let finished = false;
      let started!: () => void;
      const startedP = new Promise<void>((r) => (started = r));
      w.register('slow', async () => {
        started();
        await new Promise((r) => setTimeout(r, 100));
        finished = true;
      });
      await queue.enqueue(tdb.db.kysely, { kind: 'slow' });
      // The worker's timers do not hold the process open (the HTTP server does); this test must.
      const keepAlive = setInterval(() => {}, 1000);
      w.start();
      await startedP;
      await w.stop(5000);
      clearInterval(keepAlive);
      assert.equal(finished, true);
      assert.equal((await queue.depth()).done, 1);
    });
  });
}
