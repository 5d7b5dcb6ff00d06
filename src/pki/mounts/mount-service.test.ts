import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDb, dbKinds } from '../../../test/support/test-db.js';
import type { TestDatabase } from '../../../test/support/test-db.js';
import { JobQueue } from '../../jobs/job-queue.js';
import { ManualClock } from '../../shared/clock.js';
import type { MountInfo } from '../pki-route.js';
import { MountRepo } from './mount-repo.js';
import { MOUNT_PURGE_JOB, MountService } from './mount-service.js';

for (const kind of dbKinds()) {
  describe(`MountService [${kind}]`, () => {
    let t: TestDatabase;
    let mounts: MountService;
    const clock = new ManualClock(new Date('2030-01-01T00:00:00Z'));
    /** A node on the test database with its own mount-table cache. */
    const node = () =>
      new MountService({
        db: t.db.kysely,
        units: t.db.units,
        repo: new MountRepo({ db: t.db.kysely }),
        clock,
        jobs: new JobQueue({ db: t.db, clock }),
      });
    before(async () => {
      t = await createTestDb(kind);
      mounts = node();
    });
    after(async () => t?.cleanup());

    it('enables a mount with its settings, lists it and resolves paths below it to the deepest mount', async () => {
      const m = await mounts.enable('/pki/', {
        type: 'pki',
        description: 'root CA',
        defaultLeaseTtl: 3600,
        maxLeaseTtl: 7200,
        config: { listing_visibility: 'unauth' },
        options: { a: 'b' },
      });
      assert.equal(m.path, 'pki');
      const stored = await node().get('pki/');
      assert.deepEqual(
        [stored.id, stored.type, stored.description, stored.defaultLeaseTtl, stored.maxLeaseTtl, stored.options],
        [m.id, 'pki', 'root CA', 3600, 7200, { a: 'b' }],
      );
      assert.equal(stored.config.listing_visibility, 'unauth');
      await mounts.enable('pki-int', { type: 'pki' });
      assert.deepEqual(
        (await mounts.list()).map((x) => x.path),
        ['pki', 'pki-int'],
      );
      const hit = await mounts.resolve('pki-int/issue/web');
      assert.deepEqual([hit?.mount.path, hit?.rest], ['pki-int', 'issue/web']);
      assert.equal(await mounts.resolve('nothing/here'), undefined);
      await assert.rejects(mounts.get('nothing'), { kind: 'not_found' });
    });

    it('refuses conflicting, reserved and malformed paths, unknown types and inconsistent TTLs', async () => {
      await mounts.enable('conflict/a', { type: 'pki' });
      for (const path of ['conflict/a', 'conflict', 'conflict/a/b'])
        await assert.rejects(mounts.enable(path, { type: 'pki' }), { kind: 'conflict', message: /in use/ }, path);
      for (const path of ['sys', 'auth/x', 'a//b', ''])
        await assert.rejects(mounts.enable(path, { type: 'pki' }), { kind: 'invalid' }, path);
      await assert.rejects(mounts.enable('kv-like', { type: 'kv' }), { kind: 'invalid' });
      await assert.rejects(mounts.enable('ttl', { type: 'pki', defaultLeaseTtl: 10, maxLeaseTtl: 5 }), {
        kind: 'invalid',
      });
      assert.equal(await mounts.resolve('kv-like/x'), undefined, 'nothing refused was stored');
    });

    it('tunes only what is given and keeps TTLs consistent', async () => {
      await mounts.enable('tuned', { type: 'pki', description: 'before', maxLeaseTtl: 600, options: { x: '1' } });
      const next = await mounts.tune('tuned', { defaultLeaseTtl: 300, options: { y: '2' } });
      assert.deepEqual(
        [next.description, next.defaultLeaseTtl, next.maxLeaseTtl, next.options],
        ['before', 300, 600, { x: '1', y: '2' }],
      );
      assert.equal((await node().get('tuned')).defaultLeaseTtl, 300);
      await assert.rejects(mounts.tune('tuned', { defaultLeaseTtl: 900 }), { kind: 'invalid' });
      await assert.rejects(mounts.tune('absent', { description: 'x' }), { kind: 'not_found' });
    });

    it('disables: the path is free at once, the hooks run, and a purge job is queued for a crash', async () => {
      const removed: MountInfo[] = [];
      const local = node();
      local.onDisable(async (m) => {
        removed.push(m);
      });
      const m = await local.enable('gone', { type: 'pki' });
      await local.disable('gone/');
      assert.deepEqual(
        removed.map((r) => [r.id, r.path]),
        [[m.id, 'gone/']],
      );
      assert.equal(await local.resolve('gone/issue/x'), undefined);
      const jobs = await t.db.kysely
        .selectFrom('jobs')
        .select(['kind', 'payload', 'run_at'])
        .where('kind', '=', MOUNT_PURGE_JOB)
        .execute();
      const job = jobs.find((j) => (JSON.parse(j.payload) as { mount: MountInfo }).mount.id === m.id);
      assert.ok(job, 'the purge job is queued');
      assert.equal(new Date(job.run_at).toISOString(), '2030-01-01T00:01:00.000Z');
      // The same path can be mounted again, as a new mount.
      const again = await local.enable('gone', { type: 'pki' });
      assert.notEqual(again.id, m.id);
      // Disabling what is not there succeeds and runs nothing.
      await local.disable('never');
      assert.equal(removed.length, 1);
      await local.purge(removed[0]!);
      assert.equal(removed.length, 2, 'the purge job runs the same hooks');
    });

    it('another node finds a new mount at once and sees a removal within its cache window', async () => {
      const a = node();
      const b = node();
      assert.equal(await b.resolve('fresh/x'), undefined);
      await a.enable('fresh', { type: 'pki' });
      assert.equal(b.resolveNow('fresh/x'), null, 'a miss in the cached table is not trusted');
      assert.equal((await b.resolve('fresh/x'))?.mount.path, 'fresh', 'a miss re-reads the table');
      assert.equal(b.resolveNow('fresh/x')?.rest, 'x');

      await a.disable('fresh');
      assert.equal((await b.resolve('fresh/x'))?.mount.path, 'fresh', 'still cached on the other node');
      clock.advance(1);
      assert.equal(b.resolveNow('fresh/x'), null);
      assert.equal(await b.resolve('fresh/x'), undefined);
    });
  });
}
