import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dbKinds } from '../../../test/support/test-db.js';
import { createTfeFixture } from '../../../test/support/tfe-fixture.js';
import type { TfeFixture } from '../../../test/support/tfe-fixture.js';
import { ManualClock } from '../../shared/clock.js';
import { PeerChanges } from '../../shared/peer-changes.js';
import type { Actor } from './actor.js';
import { AdminTokenRepo } from '../../admin/admin-token-repo.js';
import { AdminTokenService } from '../../admin/admin-token-service.js';
import { IdentityRepo } from './identity-repo.js';
import { IdentityService } from './identity-service.js';
import { TOKEN_ACTOR_TTL_MS, TokenActorCache } from './token-actor-cache.js';

const alice: Actor = { kind: 'user', userId: 'user-a', username: 'alice', siteAdmin: false, tokenId: 'at-a' };

describe('token actor cache', () => {
  it('answers within the TTL and forgets at its end', () => {
    const clock = new ManualClock('2026-03-01T10:00:00.000Z');
    const cache = new TokenActorCache({ clock });
    cache.set('h1', alice, cache.epoch());
    assert.deepEqual(cache.get('h1'), alice);
    clock.advance((TOKEN_ACTOR_TTL_MS - 1) / 1000);
    assert.deepEqual(cache.get('h1'), alice);
    clock.advance(0.001);
    assert.equal(cache.get('h1'), undefined);
  });

  it('never keeps an entry past the token expiry', () => {
    const clock = new ManualClock('2026-03-01T10:00:00.000Z');
    const cache = new TokenActorCache({ clock });
    cache.set('h1', alice, cache.epoch(), new Date(clock.now().getTime() + 500));
    clock.advance(0.5);
    assert.equal(cache.get('h1'), undefined);
  });

  it('is bounded and clears on demand', () => {
    const clock = new ManualClock('2026-03-01T10:00:00.000Z');
    const cache = new TokenActorCache({ clock, max: 2 });
    cache.set('h1', alice, cache.epoch());
    cache.set('h2', alice, cache.epoch());
    cache.set('h3', alice, cache.epoch());
    assert.equal(cache.get('h1'), undefined);
    assert.deepEqual(cache.get('h3'), alice);
    cache.clear();
    assert.equal(cache.get('h2'), undefined);
    assert.equal(cache.get('h3'), undefined);
  });

  it('drops everything, and refuses what was read before, once another worker reports a change', () => {
    const clock = new ManualClock('2026-03-01T10:00:00.000Z');
    const peers = new PeerChanges();
    const cache = new TokenActorCache({ clock, peers });
    let cleared = 0;
    cache.onClear(() => cleared++);
    cache.set('h1', alice, cache.epoch());
    const since = cache.epoch();
    peers.peerChanged();
    assert.equal(cache.get('h1'), undefined);
    assert.equal(cleared, 1, 'permission caches are told');
    cache.set('h2', alice, since);
    assert.equal(cache.get('h2'), undefined, 'read before the change: not kept');
    cache.set('h2', alice, cache.epoch());
    assert.deepEqual(cache.get('h2'), alice);
  });

  it('refuses what was read before a clear made through this process', () => {
    const cache = new TokenActorCache({ clock: new ManualClock('2026-03-01T10:00:00.000Z') });
    const since = cache.epoch();
    cache.clear();
    cache.set('h1', alice, since);
    assert.equal(cache.get('h1'), undefined, 'a lookup that began before a revocation here is not kept');
    cache.set('h1', alice, cache.epoch());
    assert.deepEqual(cache.get('h1'), alice);
  });

  it('reports its own clear to the other workers', async () => {
    const peers = new PeerChanges();
    let reported = 0;
    peers.connect(async () => {
      reported++;
    });
    const cache = new TokenActorCache({ clock: new ManualClock('2026-03-01T10:00:00.000Z'), peers });
    cache.clear();
    await peers.settled();
    assert.equal(reported, 1);
  });
});

for (const kind of dbKinds()) {
  describe(`token revocation through the cache [${kind}]`, () => {
    let f: TfeFixture;
    before(async () => {
      f = await createTfeFixture(kind);
    });
    after(() => f.cleanup());

    it('a token deleted on this node stops working at once', async () => {
      const u = await f.identity.createUser(f.admin, { username: 'revoked-here' });
      const t = await f.tokens.createUserToken(f.admin, u.id, {});
      assert.ok(await f.identity.authenticate(t.secret));
      await f.tokens.deleteToken(f.admin, t.token.id);
      assert.equal(await f.identity.authenticate(t.secret), null);
    });

    it('a regenerated organization token revokes the old one at once', async () => {
      await f.org('cache-org');
      const first = await f.tokens.createOrganizationToken(f.admin, 'cache-org', {});
      assert.ok(await f.identity.authenticate(first.secret));
      await f.tokens.createOrganizationToken(f.admin, 'cache-org', {});
      assert.equal(await f.identity.authenticate(first.secret), null);
    });

    it('requests that arrive during a lookup of their token share it; refusals are not shared', async () => {
      const u = await f.identity.createUser(f.admin, { username: 'shared-lookup' });
      const t = await f.tokens.createUserToken(f.admin, u.id, {});
      const repo = new IdentityRepo({ db: f.tdb.db.kysely });
      let lookups = 0;
      const tokenByHash = repo.tokenByHash.bind(repo);
      repo.tokenByHash = (hash) => {
        lookups++;
        return tokenByHash(hash);
      };
      const identity = new IdentityService({
        repo,
        adminTokens: new AdminTokenService({
          repo: new AdminTokenRepo({ db: f.tdb.db.kysely, units: f.tdb.db.units }),
          clock: f.clock,
        }),
        clock: f.clock,
        tokenCache: new TokenActorCache({ clock: f.clock }),
      });
      const actors = await Promise.all(Array.from({ length: 20 }, () => identity.authenticate(t.secret)));
      assert.ok(actors.every((a) => a?.kind === 'user' && a.userId === u.id));
      assert.equal(lookups, 1, 'one lookup for twenty requests');
      const unknown = `${t.secret.slice(0, -4)}zzzz`;
      const refused = await Promise.all(Array.from({ length: 5 }, () => identity.authenticate(unknown)));
      assert.deepEqual(refused, [null, null, null, null, null]);
      assert.equal(lookups, 1 + 5, 'each refused request looked for itself');
    });

    it('a token deleted elsewhere stops working once the TTL has passed', async () => {
      const u = await f.identity.createUser(f.admin, { username: 'revoked-elsewhere' });
      const t = await f.tokens.createUserToken(f.admin, u.id, {});
      assert.ok(await f.identity.authenticate(t.secret));
      // Another node (or the CLI) deletes the row; this node's cache does not hear of it.
      await f.tdb.db.kysely.deleteFrom('tfe_tokens').where('id', '=', t.token.id).execute();
      assert.ok(await f.identity.authenticate(t.secret), 'still cached within the TTL');
      f.clock.advance(TOKEN_ACTOR_TTL_MS / 1000);
      assert.equal(await f.identity.authenticate(t.secret), null);
    });
  });
}
