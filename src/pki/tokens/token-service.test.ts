import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { JobQueue } from '../../jobs/job-queue.js';
import { ManualClock } from '../../shared/clock.js';
import { dbKinds, createTestDb } from '../../../test/support/test-db.js';
import type { TestDatabase } from '../../../test/support/test-db.js';
import { LeaseRepo } from '../sys/lease-repo.js';
import { LeaseService } from '../sys/lease-service.js';
import { EXPIRY_SWEEP_JOB } from '../sys/expiry-sweep.js';
import type { CallerToken } from '../sys/system-route.js';
import { TokenRepo } from './token-repo.js';
import { ADMIN_TOKEN_INFO, TOKEN_CACHE_MS, TokenService } from './token-service.js';
import type { CreateTokenRequest } from './token.js';

const base: CreateTokenRequest = {
  noParent: false,
  noDefaultPolicy: false,
  renewable: true,
  ttl: 0,
  explicitMaxTtl: 0,
  period: 0,
  displayName: '',
  numUses: 0,
  type: '',
  orphanPath: false,
  path: 'auth/token/create',
};

for (const kind of dbKinds()) {
  describe(`token service [${kind}]`, () => {
    let tdb: TestDatabase;
    let tokens: TokenService;
    let jobs: JobQueue;
    const clock = new ManualClock('2026-05-01T00:00:00Z');
    const admin: CallerToken = { token: 'admin', info: ADMIN_TOKEN_INFO, entry: undefined };
    const asCaller = async (token: string): Promise<CallerToken> => {
      const a = await tokens.authenticate(token, { spendUse: false });
      assert.ok(a);
      return { token, info: a.info, entry: a.entry };
    };

    before(async () => {
      tdb = await createTestDb(kind);
      const db = tdb.db.kysely;
      jobs = new JobQueue({ db: tdb.db, clock });
      const leases = new LeaseService({ db, repo: new LeaseRepo({ db }), clock, jobs });
      tokens = new TokenService({
        db,
        units: tdb.db.units,
        repo: new TokenRepo({ db }),
        clock,
        jobs,
        adminTokens: { isAdmin: async (t) => t === 'admin' },
        leases,
      });
    });
    after(async () => tdb?.cleanup());

    it('stores only the hash of a token', async () => {
      const { token, entry } = await tokens.create(admin, true, { ...base, policies: ['web'] });
      const rows = await tdb.db.kysely
        .selectFrom('pki_tokens')
        .selectAll()
        .where('accessor', '=', entry.accessor)
        .execute();
      assert.equal(rows.length, 1);
      assert.ok(!JSON.stringify(rows).includes(token));
      assert.equal(rows[0]?.token_hash.length, 64);
    });

    it('resolves the admin token as root without a store entry', async () => {
      const a = await tokens.authenticate('admin');
      assert.deepEqual(a?.info.policies, ['root']);
      assert.equal(a?.entry, undefined);
      assert.equal(await tokens.authenticate('srv.nothing'), undefined);
    });

    it('lets exactly one of two concurrent requests spend the last use', async () => {
      const { token } = await tokens.create(admin, true, { ...base, policies: ['web'], numUses: 1 });
      const results = await Promise.all([tokens.authenticate(token), tokens.authenticate(token)]);
      assert.equal(results.filter((r) => r !== undefined).length, 1);
      assert.equal(await tokens.authenticate(token), undefined);
    });

    it('invalidates descendants of an expired ancestor and sweeps them', async () => {
      const parent = await tokens.create(admin, true, { ...base, policies: ['web'], ttl: 600 });
      const child = await tokens.create(await asCaller(parent.token), false, { ...base, ttl: 7200 });
      const grandchild = await tokens.create(await asCaller(child.token), false, { ...base, ttl: 7200 });
      assert.ok(await tokens.findValid(grandchild.token));
      clock.advance(601);
      assert.equal(await tokens.findValid(child.token), undefined);
      assert.equal(await tokens.findValid(grandchild.token), undefined);
      const swept = await tokens.sweepExpired();
      assert.ok(swept >= 1);
      const left = await tdb.db.kysely
        .selectFrom('pki_tokens')
        .select('accessor')
        .where('accessor', 'in', [parent.entry.accessor, child.entry.accessor, grandchild.entry.accessor])
        .execute();
      assert.deepEqual(left, []);
      // Creating a token with a TTL scheduled one sweep for the hour of its expiry.
      const queued = await tdb.db.kysely
        .selectFrom('jobs')
        .select(['kind', 'dedupe_key'])
        .where('kind', '=', EXPIRY_SWEEP_JOB)
        .execute();
      assert.ok(queued.length >= 1);
    });

    it('revoke-orphan detaches the children, revokeTree removes the subtree', async () => {
      const p = await tokens.create(admin, true, { ...base, policies: ['web'] });
      const c1 = await tokens.create(await asCaller(p.token), false, base);
      await tokens.revokeOrphan(p.entry.accessor);
      const c1Entry = await tokens.findValid(c1.token);
      assert.equal(c1Entry?.orphan, true);
      assert.equal(c1Entry?.parentAccessor, null);
      const c2 = await tokens.create(await asCaller(c1.token), false, base);
      await tokens.revokeTree(c1.entry.accessor);
      assert.equal(await tokens.findValid(c2.token), undefined);
    });

    it('remembers a check for at most TOKEN_CACHE_MS, forgets it on revocation here, never past expiry', async () => {
      const { token, entry } = await tokens.create(admin, true, { ...base, policies: ['web'], ttl: 3600 });
      assert.ok(await tokens.authenticate(token));
      // Deleted behind the service's back (as another node would): still valid within the bound...
      await tdb.db.kysely.deleteFrom('pki_tokens').where('accessor', '=', entry.accessor).execute();
      assert.ok(await tokens.authenticate(token));
      clock.advance(TOKEN_CACHE_MS / 1000);
      // ...and not after it.
      assert.equal(await tokens.authenticate(token), undefined);

      const revoked = await tokens.create(admin, true, { ...base, policies: ['web'] });
      const child = await tokens.create(await asCaller(revoked.token), false, base);
      assert.ok(await tokens.authenticate(child.token));
      await tokens.revokeTree(revoked.entry.accessor);
      assert.equal(await tokens.authenticate(revoked.token), undefined);
      assert.equal(await tokens.authenticate(child.token), undefined);

      const short = await tokens.create(admin, true, { ...base, policies: ['web'], ttl: 1 });
      assert.ok(await tokens.authenticate(short.token));
      clock.advance(1);
      assert.equal(await tokens.authenticate(short.token), undefined);
    });
  });
}
