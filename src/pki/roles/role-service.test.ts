import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDb, dbKinds } from '../../../test/support/test-db.js';
import type { TestDatabase } from '../../../test/support/test-db.js';
import { ROOT_LIMITS, pkiCore, rootRequest } from '../../../test/support/pki-core.js';
import type { PkiCore } from '../../../test/support/pki-core.js';
import { ManualClock } from '../../shared/clock.js';
import { ROLE_FIELDS, ROLE_FIELD_NAMES } from './role.js';
import { RoleRepo } from './role-repo.js';
import { ROLE_CACHE_MS, RoleService } from './role-service.js';

/** Role fields as the roles/:name route parses and hands them over. */
function input(body: Record<string, unknown>): Parameters<RoleService['write']>[2] {
  const { values } = ROLE_FIELDS.parse(body);
  return Object.fromEntries(ROLE_FIELD_NAMES.map((k) => [k, values[k]])) as Parameters<RoleService['write']>[2];
}

for (const kind of dbKinds()) {
  describe(`RoleService [${kind}]`, () => {
    let t: TestDatabase;
    let core: PkiCore;
    let roles: RoleService;
    const clock = new ManualClock(new Date('2030-01-01T00:00:00Z'));
    let n = 0;
    const mountId = () => `roles-${++n}`;
    /** Another node on the same database, with its own role cache. */
    const otherNode = () =>
      new RoleService({ repo: new RoleRepo({ db: t.db.kysely, units: t.db.units }), issuers: core.issuers, clock });
    before(async () => {
      t = await createTestDb(kind);
      core = pkiCore(t.db, clock);
      roles = otherNode();
    });
    after(async () => t?.cleanup());

    it('writes a role with defaults for omitted fields and reads it back', async () => {
      const m = mountId();
      await core.ca.generateRoot(m, ROOT_LIMITS, rootRequest());
      const { role, warnings } = await roles.write(m, 'web', input({ allowed_domains: 'example.com', ttl: '1h' }));
      assert.deepEqual(warnings, []);
      assert.deepEqual(role.allowed_domains, ['example.com']);
      assert.equal(role.ttl, 3600);
      const read = await roles.read(m, 'web');
      assert.deepEqual(read, role);
      assert.equal(read.key_type, 'rsa');
      assert.equal(read.key_bits, 2048);
      assert.equal(read.issuer_ref, 'default');
      // A full write replaces: what is omitted goes back to its default.
      await roles.write(m, 'web', input({ ttl: '2h' }));
      assert.deepEqual((await roles.read(m, 'web')).allowed_domains, []);
    });

    it('warns when the issuer it names does not exist, and stores the role anyway', async () => {
      const m = mountId();
      const { warnings } = await roles.write(m, 'orphan', input({ issuer_ref: 'nope' }));
      assert.match(warnings.join('\n'), /Issuing Certificate was set to nope but no issuing certificate/);
      assert.equal((await roles.read(m, 'orphan')).issuer_ref, 'nope');
    });

    it('patches only the supplied fields, and refuses to patch a missing role', async () => {
      const m = mountId();
      await roles.write(m, 'p', input({ allowed_domains: ['a.example'], max_ttl: '10h', ttl: '1h' }));
      const { role } = await roles.patch(m, 'p', { ttl: 7200 });
      assert.deepEqual([role.ttl, role.max_ttl, role.allowed_domains], [7200, 36000, ['a.example']]);
      await assert.rejects(roles.patch(m, 'p', { ttl: 72000 }), { kind: 'invalid', message: /ttl/ });
      assert.equal((await roles.read(m, 'p')).ttl, 7200, 'a refused patch changes nothing');
      await assert.rejects(roles.patch(m, 'missing', { ttl: 1 }), { kind: 'invalid', message: /Unable to fetch/ });
    });

    it('lists names in order with paging, per mount, and deletes', async () => {
      const m = mountId();
      for (const name of ['c', 'a', 'b']) await roles.write(m, name, input({}));
      await roles.write(mountId(), 'elsewhere', input({}));
      assert.deepEqual(await roles.list(m), ['a', 'b', 'c']);
      assert.deepEqual(await roles.list(m, { after: 'a', limit: 1 }), ['b']);
      await roles.delete(m, 'b');
      await roles.delete(m, 'never-there');
      assert.deepEqual(await roles.list(m), ['a', 'c']);
      await assert.rejects(roles.read(m, 'b'), { kind: 'not_found' });
      await roles.purgeMount(m);
      assert.deepEqual(await roles.list(m), []);
    });

    it('refuses names Vault would not route', async () => {
      for (const bad of ['', 'a b', '-x', 'x-', 'a/b'])
        await assert.rejects(roles.write(mountId(), bad, input({})), { kind: 'invalid' }, bad);
    });

    it('serves issuance from a short cache: local writes apply at once, other nodes within ROLE_CACHE_MS', async () => {
      const m = mountId();
      const a = otherNode();
      const b = otherNode();
      await a.write(m, 'hot', input({ ttl: '1h' }));
      assert.equal((await a.forIssuance(m, 'hot')).ttl, 3600);
      assert.equal((await b.forIssuance(m, 'hot')).ttl, 3600);

      await a.write(m, 'hot', input({ ttl: '2h' }));
      assert.equal((await a.forIssuance(m, 'hot')).ttl, 7200, 'the writing node sees its change at once');
      assert.equal((await b.forIssuance(m, 'hot')).ttl, 3600, 'another node answers from its cache');
      clock.advance(ROLE_CACHE_MS / 1000);
      assert.equal((await b.forIssuance(m, 'hot')).ttl, 7200, 'and sees the change once the entry is old');

      await a.delete(m, 'hot');
      await assert.rejects(a.forIssuance(m, 'hot'), { kind: 'invalid', message: 'unknown role: hot' });
      clock.advance(ROLE_CACHE_MS / 1000);
      await assert.rejects(b.forIssuance(m, 'hot'), { kind: 'invalid', message: 'unknown role: hot' });
    });
  });
}
