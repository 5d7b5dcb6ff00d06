import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dbKinds } from '../../../test/support/test-db.js';
import { createTfeFixture } from '../../../test/support/tfe-fixture.js';
import type { TfeFixture } from '../../../test/support/tfe-fixture.js';
import { DomainError } from '../../shared/errors.js';
import { hashToken } from '../../shared/ids.js';

const kindOf = (kind: string) => (e: unknown) => e instanceof DomainError && e.kind === kind;

for (const kind of dbKinds()) {
  describe(`tfe identity and tokens [${kind}]`, () => {
    let f: TfeFixture;
    before(async () => {
      f = await createTfeFixture(kind);
    });
    after(async () => f.cleanup());

    it('the admin token acts as one site-admin user, created once', async () => {
      assert.equal(f.admin.kind, 'user');
      assert.ok(f.admin.kind === 'user' && f.admin.siteAdmin);
      const again = await f.identity.authenticate('fixture-admin-token');
      assert.deepEqual(again, f.admin);
      assert.equal(await f.identity.authenticate('not-a-token'), null);
      assert.equal(await f.identity.authenticate(''), null);
    });

    it('user tokens have the HCP format, authenticate, and are stored only as a hash', async () => {
      const u = await f.identity.createUser(f.admin, { username: 'alice' });
      const created = await f.tokens.createUserToken(f.admin, u.id, { description: 'ci' });
      assert.match(created.secret, /^[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9]{67}$/);
      assert.match(created.token.id, /^at-[1-9A-HJ-NP-Za-km-z]{16}$/);
      const actor = await f.identity.authenticate(created.secret);
      assert.deepEqual(actor, {
        kind: 'user',
        userId: u.id,
        username: 'alice',
        siteAdmin: false,
        tokenId: created.token.id,
      });
      const row = await f.tdb.db.kysely
        .selectFrom('tfe_tokens')
        .selectAll()
        .where('id', '=', created.token.id)
        .executeTakeFirstOrThrow();
      assert.equal(row.token_hash, hashToken(created.secret));
      assert.ok(!JSON.stringify(row).includes(created.secret));
      const listed = await f.tokens.listUserTokens(actor!, u.id);
      assert.deepEqual(
        listed.map((t) => t.id),
        [created.token.id],
      );
      assert.ok(listed[0]!.lastUsedAt, 'authentication records last use');
      await f.tokens.deleteToken(actor!, created.token.id);
      assert.equal(await f.identity.authenticate(created.secret), null);
    });

    it('expired tokens stop authenticating', async () => {
      const u = await f.identity.createUser(f.admin, { username: 'shortlived' });
      const t = await f.tokens.createUserToken(f.admin, u.id, {
        expiredAt: new Date(f.clock.now().getTime() + 60_000),
      });
      assert.ok(await f.identity.authenticate(t.secret));
      f.clock.advance(61);
      assert.equal(await f.identity.authenticate(t.secret), null);
      await assert.rejects(
        f.tokens.createUserToken(f.admin, u.id, { expiredAt: new Date(f.clock.now().getTime() - 1000) }),
        kindOf('invalid'),
      );
    });

    it('only the user (or a site admin) manages user tokens', async () => {
      const bob = await f.user('bob');
      const carol = await f.user('carol');
      await assert.rejects(f.tokens.createUserToken(carol, bob.userId, {}), kindOf('not_found'));
      await assert.rejects(f.tokens.listUserTokens(carol, bob.userId), kindOf('not_found'));
      const own = await f.tokens.listUserTokens(bob, bob.userId);
      await assert.rejects(f.tokens.getToken(carol, own[0]!.id), kindOf('not_found'));
      assert.equal((await f.tokens.getToken(bob, own[0]!.id)).id, own[0]!.id);
    });

    it('team and organization tokens act as their owner and cannot do user-only things', async () => {
      await f.org('tokorg');
      const teamId = await f.team('tokorg', 'ops');
      const teamTok = await f.tokens.createTeamToken(f.admin, teamId, {});
      const teamActor = await f.actorOf(teamTok.secret);
      assert.equal(teamActor.kind, 'team');
      assert.ok(teamActor.kind === 'team' && teamActor.organization === 'tokorg' && teamActor.teamId === teamId);

      const orgTok = await f.tokens.createOrganizationToken(f.admin, 'tokorg', {});
      const orgActor = await f.actorOf(orgTok.secret);
      assert.deepEqual(orgActor.kind, 'organization');

      const someone = await f.identity.createUser(f.admin, { username: 'dave' });
      for (const a of [teamActor, orgActor]) {
        await assert.rejects(f.tokens.createUserToken(a, someone.id, {}), kindOf('forbidden'));
        await assert.rejects(f.organizations.create(a, { name: 'nope', email: 'n@x.y' }), kindOf('forbidden'));
        await assert.rejects(f.identity.createUser(a, { username: 'eve' }), kindOf('forbidden'));
      }
      // An organization token manages its own token (reference 8.3), a team token does not.
      assert.equal((await f.tokens.getOrganizationToken(orgActor, 'tokorg')).id, orgTok.token.id);
      await assert.rejects(f.tokens.getOrganizationToken(teamActor, 'tokorg'), kindOf('forbidden'));
    });

    it('regenerating a team or organization token revokes the old one', async () => {
      await f.org('regen');
      const teamId = await f.team('regen', 'ops');
      const first = await f.tokens.createTeamToken(f.admin, teamId, {});
      const second = await f.tokens.createTeamToken(f.admin, teamId, {});
      assert.equal(await f.identity.authenticate(first.secret), null);
      assert.ok(await f.identity.authenticate(second.secret));
      assert.equal((await f.tokens.getTeamToken(f.admin, teamId)).id, second.token.id);
      await f.tokens.deleteTeamToken(f.admin, teamId);
      assert.equal(await f.identity.authenticate(second.secret), null);
      await assert.rejects(f.tokens.getTeamToken(f.admin, teamId), kindOf('not_found'));

      const o1 = await f.tokens.createOrganizationToken(f.admin, 'regen', {});
      const o2 = await f.tokens.createOrganizationToken(f.admin, 'regen', {});
      assert.equal(await f.identity.authenticate(o1.secret), null);
      assert.ok(await f.identity.authenticate(o2.secret));
    });

    it('concurrent regenerations leave exactly one organization token', async () => {
      await f.org('racetok');
      const results = await Promise.allSettled(
        Array.from({ length: 6 }, () => f.tokens.createOrganizationToken(f.admin, 'racetok', {})),
      );
      const won = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
      assert.ok(won.length >= 1);
      for (const r of results) if (r.status === 'rejected') assert.ok(kindOf('conflict')(r.reason), String(r.reason));
      const org = await f.organizations.get(f.admin, 'racetok');
      const rows = await f.tdb.db.kysely
        .selectFrom('tfe_tokens')
        .select('id')
        .where('organization_id', '=', org.organization.id)
        .execute();
      assert.equal(rows.length, 1);
      const live = await Promise.all(won.map((w) => f.identity.authenticate(w.secret)));
      assert.equal(live.filter(Boolean).length, 1);
    });

    it('usernames are unique and validated', async () => {
      await f.identity.createUser(f.admin, { username: 'frank' });
      await assert.rejects(
        f.identity.createUser(f.admin, { username: 'frank' }),
        (e: unknown) => e instanceof DomainError && e.kind === 'invalid' && e.field === '/data/attributes/username',
      );
      await assert.rejects(f.identity.createUser(f.admin, { username: 'bad name' }), kindOf('invalid'));
    });

    it('teams: owners team exists, members, rename and delete rules', async () => {
      await f.org('teamorg');
      const teams = (await f.teams.list(f.admin, 'teamorg')).map((v) => v.team);
      const owners = teams.find((t) => t.isOwners);
      assert.ok(owners && owners.name === 'owners' && owners.usersCount === 1, 'creator is the owners team member');
      const greg = await f.user('greg');
      const id = await f.team('teamorg', 'devs', ['greg']);
      assert.deepEqual(
        (await f.teams.members(f.admin, id)).map((u) => u.username),
        ['greg'],
      );
      await assert.rejects(f.teams.create(f.admin, 'teamorg', { name: 'devs' }), kindOf('invalid'));
      // A plain member can see teams but not manage them.
      assert.ok((await f.teams.list(greg, 'teamorg')).length >= 2);
      await assert.rejects(f.teams.delete(greg, id), kindOf('forbidden'));
      await assert.rejects(f.teams.delete(f.admin, owners.id), kindOf('forbidden'));
      await assert.rejects(f.teams.update(f.admin, owners.id, { name: 'bosses' }), kindOf('invalid'));
      await f.teams.removeMembers(f.admin, id, ['greg']);
      assert.equal((await f.teams.get(f.admin, id)).usersCount, 0);
      await f.teams.delete(f.admin, id);
      await assert.rejects(f.teams.get(f.admin, id), kindOf('not_found'));
    });

    it("teams keep every organization-access flag as given and read back the caller's rights", async () => {
      await f.org('flagorg');
      const { team } = await f.teams.create(f.admin, 'flagorg', {
        name: 'policy',
        organizationAccess: { 'manage-policies': true, 'manage-run-tasks': true, 'read-projects': true },
      });
      const read = await f.teams.view(f.admin, team.id);
      assert.equal(read.team.organizationAccess['manage-policies'], true);
      assert.equal(read.team.organizationAccess['manage-run-tasks'], true);
      assert.equal(read.team.organizationAccess['read-projects'], true);
      assert.equal(read.team.organizationAccess['manage-workspaces'], false);
      assert.equal(read.permissions.destroy, true);
      // An update replaces only the flags it names.
      await f.teams.update(f.admin, team.id, {
        organizationAccess: { 'manage-policies': false, 'manage-modules': true },
      });
      const after = (await f.teams.view(f.admin, team.id)).team.organizationAccess;
      assert.deepEqual(
        [after['manage-policies'], after['manage-modules'], after['manage-run-tasks'], after['read-projects']],
        [false, true, true, true],
      );
      const hank = await f.user('hank');
      const seen = await f.teams.view(hank, team.id).catch((e: unknown) => e);
      assert.ok(seen instanceof DomainError && seen.kind === 'not_found', 'a stranger does not see the team');
      await f.teams.addMembers(f.admin, team.id, ['hank']);
      assert.deepEqual(Object.values((await f.teams.view(hank, team.id)).permissions), Array<boolean>(6).fill(false));
    });

    it('the owners team is changed only by owners: an organization token cannot make itself one', async () => {
      await f.org('ownorg');
      const owners = (await f.teams.list(f.admin, 'ownorg')).find((v) => v.team.isOwners)!.team;
      const orgToken = await f.actorOf((await f.tokens.createOrganizationToken(f.admin, 'ownorg', {})).secret);
      await f.user('ivan');
      await assert.rejects(f.teams.addMembers(orgToken, owners.id, ['ivan']), kindOf('forbidden'));
      await assert.rejects(f.teams.removeMembers(orgToken, owners.id, ['site-admin']), kindOf('forbidden'));
      await assert.rejects(f.tokens.createTeamToken(orgToken, owners.id, {}), kindOf('not_found'));
      await assert.rejects(f.tokens.createDescribedTeamToken(orgToken, owners.id, {}), kindOf('not_found'));
      const ownersToken = await f.tokens.createTeamToken(f.admin, owners.id, {});
      await assert.rejects(f.tokens.getToken(orgToken, ownersToken.token.id), kindOf('not_found'));
      await assert.rejects(f.tokens.deleteTeamToken(orgToken, owners.id), kindOf('not_found'));
      assert.deepEqual(
        (await f.tokens.listTeamTokens(orgToken, 'ownorg')).map((t) => t.id),
        [],
        "the owners team's tokens are not listed to it",
      );
      // Other teams it still manages, as HCP's organization token does.
      const other = await f.team('ownorg', 'ci');
      await f.teams.addMembers(orgToken, other, ['ivan']);
      assert.ok((await f.tokens.createTeamToken(orgToken, other, {})).secret);
      // The owners team's own token and the site admin may change it.
      const asOwners = await f.actorOf(ownersToken.secret);
      await f.teams.addMembers(asOwners, owners.id, ['ivan']);
      assert.equal((await f.teams.get(f.admin, owners.id)).usersCount, 2);
      await assert.rejects(
        f.teams.update(f.admin, owners.id, { organizationAccess: { 'manage-workspaces': false } }),
        kindOf('invalid'),
      );
    });

    it('account details for users and service accounts', async () => {
      const a = await f.identity.accountDetails(f.admin);
      assert.equal(a.user.username, 'site-admin');
      assert.equal(a.serviceAccount, false);
      await f.org('acctorg');
      const teamId = await f.team('acctorg', 'svc');
      const t = await f.tokens.createTeamToken(f.admin, teamId, {});
      const d = await f.identity.accountDetails(await f.actorOf(t.secret));
      assert.equal(d.serviceAccount, true);
      assert.deepEqual(d.authenticatedResource, { type: 'teams', id: teamId });
    });
  });
}
