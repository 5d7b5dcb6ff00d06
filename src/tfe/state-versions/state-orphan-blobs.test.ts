import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createTestDb, dbKinds } from '../../../test/support/test-db.js';
import type { TestDatabase } from '../../../test/support/test-db.js';
import type { BlobStore } from '../../blob/blob-store.js';
import { DbBlobStore } from '../../blob/db-blob-store.js';
import { FsBlobStore } from '../../blob/fs-blob-store.js';
import { JobQueue } from '../../jobs/job-queue.js';
import { ManualClock } from '../../shared/clock.js';
import { createLogger } from '../../shared/log.js';
import { StateMaintenance } from './state-maintenance.js';
import { stateRepos } from './state-repos.js';
import type { StateRepos } from './state-repos.js';

/** ManualClock.advance takes seconds. */
const MINUTE = 60;

/**
 * The sweep of stored blobs nothing refers to (what a crash between writing a blob and
 * committing its version leaves), with the blob store each database uses in production:
 * files with SQLite, rows with PostgreSQL. The crash itself is in test/e2e/crash-orphan-blob.
 */
for (const kind of dbKinds()) {
  describe(`orphaned state blobs [${kind}]`, () => {
    let tdb: TestDatabase;
    let clock: ManualClock;
    let blobs: BlobStore;
    let repos: StateRepos;
    let maintenance: StateMaintenance;
    before(async () => {
      tdb = await createTestDb(kind);
      clock = new ManualClock('2026-05-01T00:00:00.000Z');
      blobs =
        kind === 'sqlite'
          ? await FsBlobStore.open(join(tdb.dir, 'blobs'), clock)
          : new DbBlobStore({ db: tdb.db.kysely, units: tdb.db.units, clock });
      repos = stateRepos(tdb.db);
      maintenance = new StateMaintenance({
        repos,
        blobs,
        jobs: new JobQueue({ db: tdb.db, clock }),
        clock,
        logger: createLogger('silent'),
        settings: {
          softDeletePurgeDays: 30,
          retentionKeepLatest: 100,
          retentionMaxAgeDays: 0,
          maintenanceIntervalSeconds: 3600,
        },
      });
    });
    after(async () => tdb.cleanup());

    const put = (text: string) => blobs.put([Buffer.from(text)]);

    it('removes blobs without a live row once older than an hour, and nothing else', async () => {
      const orphan = await put('orphan: its version never committed');
      const registered = await put('registered: its version committed');
      await repos.units.readWrite((trx) => repos.blobs.touchBlob(trx, registered.sha256, registered.size, clock.now()));

      clock.advance(59 * MINUTE);
      assert.equal(await maintenance.collectOrphanBlobs(), 0, 'younger than an hour: kept');
      assert.deepEqual(await blobs.stat(orphan.sha256), { size: orphan.size });

      clock.advance(2 * MINUTE);
      assert.equal(await maintenance.collectOrphanBlobs(), 1);
      assert.equal(await blobs.stat(orphan.sha256), undefined);
      assert.deepEqual(await blobs.stat(registered.sha256), { size: registered.size });
      // The removal left a tombstone: a writer that now registers the same content stores it again.
      assert.equal(
        await repos.units.readWrite((trx) => repos.blobs.touchBlob(trx, orphan.sha256, orphan.size, clock.now())),
        false,
      );
      assert.equal(await maintenance.collectOrphanBlobs(), 0, 'a second pass finds nothing');
    });

    it('a write of content already stored makes the blob young again, so its commit is not raced', async () => {
      const first = await put('written long ago, written again now');
      clock.advance(3 * 60 * MINUTE);
      const again = await put('written long ago, written again now');
      assert.equal(again.sha256, first.sha256);
      assert.equal(await maintenance.collectOrphanBlobs(), 0);
      assert.deepEqual(await blobs.stat(first.sha256), { size: first.size });
      clock.advance(61 * MINUTE);
      assert.equal(await maintenance.collectOrphanBlobs(), 1);
    });

    it('removes the temporary files of writes that stopped over an hour ago, not those still written', async () => {
      if (!(blobs instanceof FsBlobStore)) {
        // Database blobs are written in one transaction: a stopped write leaves nothing.
        assert.equal(await blobs.removePartialWrites(clock.now()), 0);
        return;
      }
      // What a cluster worker killed mid-write leaves: the temporary file, never renamed into place.
      const tmp = join(tdb.dir, 'blobs', 'tmp');
      const at = (name: string, minutesAgo: number) => {
        writeFileSync(join(tmp, name), 'part of a state');
        const t = new Date(clock.now().getTime() - minutesAgo * MINUTE * 1000);
        utimesSync(join(tmp, name), t, t);
      };
      at('stopped.part', 61);
      at('in-flight.part', 59);
      assert.equal(await maintenance.collectOrphanBlobs(), 0, 'the temporary files are not counted as blobs');
      assert.deepEqual(readdirSync(tmp), ['in-flight.part']);
      clock.advance(2 * MINUTE);
      await maintenance.collectOrphanBlobs();
      assert.deepEqual(readdirSync(tmp), []);
    });

    it('never removes a blob a version refers to, even without a live row', async () => {
      const held = await put('referenced by a version');
      await tdb.db.kysely
        .insertInto('tfe_state_versions')
        .values({
          id: 'sv-held',
          workspace_id: 'ws-held',
          seq: 1,
          serial: 1,
          md5: '0'.repeat(32),
          status: 'finalized',
          state_sha256: held.sha256,
          resources_processed: 0,
          created_at: clock.now().toISOString(),
        })
        .execute();
      clock.advance(2 * 60 * MINUTE);
      assert.equal(await maintenance.collectOrphanBlobs(), 0);
      assert.deepEqual(await blobs.stat(held.sha256), { size: held.size });
    });
  });
}
