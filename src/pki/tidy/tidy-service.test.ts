import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { createTestDb, dbKinds } from '../../../test/support/test-db.js';
import type { TestDatabase } from '../../../test/support/test-db.js';
import { JobQueue } from '../../jobs/job-queue.js';
import { SecretBox } from '../../secrets/secret-box.js';
import { ManualClock } from '../../shared/clock.js';
import { CertRepo } from '../certs/cert-repo.js';
import { CertService } from '../certs/cert-service.js';
import { MountConfigRepo } from '../config/mount-config-repo.js';
import { MountConfigService } from '../config/mount-config-service.js';
import { IssuerRepo } from '../issuers/issuer-repo.js';
import { IssuerService } from '../issuers/issuer-service.js';
import { KeyRepo } from '../keys/key-repo.js';
import { KeyService } from '../keys/key-service.js';
import { TidyRepo } from './tidy-repo.js';
import { TIDY_JOB, TidyService } from './tidy-service.js';
import type { TidyJobPayload } from './tidy-service.js';

for (const kind of dbKinds()) {
  describe(`TidyService [${kind}]`, () => {
    let t: TestDatabase;
    let certs: CertService;
    let jobs: JobQueue;
    let rebuilds: string[];
    const clock = new ManualClock('2031-01-01T00:00:00.000Z');
    const tidyService = (batchSize: number) => {
      const db = t.db.kysely;
      const config = new MountConfigService({ repo: new MountConfigRepo({ db, units: t.db.units }), clock });
      const keys = new KeyService({
        repo: new KeyRepo({ db }),
        config,
        secrets: new SecretBox(randomBytes(32)),
        clock,
      });
      const issuers = new IssuerService({ repo: new IssuerRepo({ db }), keys, config, clock });
      return new TidyService({
        repo: new TidyRepo({ db, units: t.db.units }),
        certs,
        issuers,
        jobs,
        clock,
        logger: pino({ level: 'silent' }),
        rebuildCrl: async (mountId) => void rebuilds.push(mountId),
        batchSize,
      });
    };
    /** `n` stored certificates of `mountId` that expired at `notAfter`. */
    const store = async (mountId: string, n: number, notAfter: string): Promise<string[]> => {
      const serials = Array.from({ length: n }, () => randomBytes(20).toString('hex'));
      for (const serial of serials) {
        await certs.store({
          mountId,
          serial,
          issuerId: 'i1',
          der: randomBytes(100),
          notAfter: new Date(notAfter),
          createdAt: new Date('2030-01-01T00:00:00Z'),
        });
      }
      return serials;
    };
    /** The queued job of the mount's current run (jobs are run by hand here, so older ones stay queued). */
    const queuedTidyJob = async (tidy: TidyService, mountId: string): Promise<TidyJobPayload> => {
      const runId = (await tidy.status(mountId)).status.runId;
      const rows = await t.db.kysely
        .selectFrom('jobs')
        .select('payload')
        .where('kind', '=', TIDY_JOB)
        .where('status', '=', 'queued')
        .execute();
      const payloads = rows
        .map((r) => JSON.parse(r.payload) as TidyJobPayload)
        .filter((p) => p.mountId === mountId && p.runId === runId);
      assert.equal(payloads.length, 1);
      return payloads[0]!;
    };

    before(async () => {
      t = await createTestDb(kind);
      certs = new CertService({ repo: new CertRepo({ db: t.db.kysely, units: t.db.units }), clock });
      jobs = new JobQueue({ db: t.db, clock });
      rebuilds = [];
    });
    after(async () => t?.cleanup());

    it('works in batches, and a run stopped by shutdown resumes when its job runs again', async () => {
      const tidy = tidyService(2);
      const expired = await store('m1', 5, '2030-06-01T00:00:00Z');
      const fresh = await store('m1', 1, '2031-06-01T00:00:00Z');
      assert.equal((await tidy.start('m1', { flags: { tidy_cert_store: true } })).started, true);
      const payload = await queuedTidyJob(tidy, 'm1');

      const stopping = new AbortController();
      stopping.abort();
      await assert.rejects(tidy.runJob(payload, stopping.signal), { name: 'AbortError' });
      assert.equal(
        (await tidy.status('m1')).status.state,
        'Running',
        'an interrupted run stays active for its job to resume',
      );
      assert.equal((await tidy.start('m1', { flags: { tidy_cert_store: true } })).started, false);

      await tidy.runJob(payload);
      const { status } = await tidy.status('m1');
      assert.equal(status.state, 'Finished');
      assert.equal(status.counts.cert_store_deleted_count, 5);
      assert.deepEqual(await certs.listSerials('m1'), fresh);
      assert.ok(expired.every((s) => !fresh.includes(s)));

      // The same job delivered again (a retry after the run ended) changes nothing.
      await tidy.runJob(payload);
      assert.equal((await tidy.status('m1')).status.counts.cert_store_deleted_count, 5);
    });

    it('rebuilds CRLs only when revoked certificates were removed', async () => {
      const tidy = tidyService(1000);
      rebuilds = [];
      const [a] = await store('m2', 2, '2030-06-01T00:00:00Z');
      await certs.markRevoked('m2', a!);
      await tidy.start('m2', { flags: { tidy_revoked_certs: true } });
      await tidy.runJob(await queuedTidyJob(tidy, 'm2'));
      assert.deepEqual(rebuilds, ['m2']);
      assert.equal((await tidy.status('m2')).status.counts.revoked_cert_deleted_count, 1);
      assert.equal((await certs.listSerials('m2')).length, 1, 'the expired certificate that was not revoked stays');

      await tidy.start('m2', { flags: { tidy_revoked_certs: true } });
      await tidy.runJob(await queuedTidyJob(tidy, 'm2'));
      assert.deepEqual(rebuilds, ['m2'], 'nothing removed, no rebuild');
    });
  });
}
