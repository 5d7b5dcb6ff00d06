import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dbKinds } from '../../../test/support/test-db.js';
import { createTfeFixture } from '../../../test/support/tfe-fixture.js';
import type { TfeFixture } from '../../../test/support/tfe-fixture.js';
import { DomainError } from '../../shared/errors.js';

const kindOf = (kind: string, field?: string) => (e: unknown) =>
  e instanceof DomainError && e.kind === kind && (field === undefined || e.field === field);

for (const kind of dbKinds()) {
  describe(`tfe organizations [${kind}]`, () => {
    let f: TfeFixture;
    before(async () => {
      f = await createTfeFixture(kind);
    });
    after(async () => f.cleanup());

    it('site admins create organizations and own them', async () => {
      const v = await f.organizations.create(f.admin, { name: 'acme', email: 'ops@acme.test' });
      assert.equal(v.organization.name, 'acme');
      assert.match(v.organization.id, /^org-[1-9A-HJ-NP-Za-km-z]{16}$/);
      assert.equal(v.permissions.destroy, true);
      assert.equal(v.permissions.update, true);
      assert.deepEqual(await f.organizations.get(f.admin, 'acme'), v);
    });

    it('validates name and email with pointers', async () => {
      await assert.rejects(
        f.organizations.create(f.admin, { email: 'a@b.c' }),
        kindOf('invalid', '/data/attributes/name'),
      );
      await assert.rejects(
        f.organizations.create(f.admin, { name: 'x1' }),
        kindOf('invalid', '/data/attributes/email'),
      );
      await assert.rejects(
        f.organizations.create(f.admin, { name: 'bad name', email: 'a@b.c' }),
        kindOf('invalid', '/data/attributes/name'),
      );
      await assert.rejects(
        f.organizations.create(f.admin, { name: 'x2', email: 'nope' }),
        kindOf('invalid', '/data/attributes/email'),
      );
      await f.org('dupe');
      await assert.rejects(
        f.organizations.create(f.admin, { name: 'dupe', email: 'a@b.c' }),
        kindOf('invalid', '/data/attributes/name'),
      );
    });

    it('ordinary users cannot create organizations and do not see others', async () => {
      const u = await f.user('outsider');
      await assert.rejects(f.organizations.create(u, { name: 'mine', email: 'a@b.c' }), kindOf('forbidden'));
      await f.org('hidden');
      await assert.rejects(f.organizations.get(u, 'hidden'), kindOf('not_found'));
      await assert.rejects(f.organizations.entitlements(u, 'hidden'), kindOf('not_found'));
      const page = await f.organizations.list(u, { number: 1, size: 20 });
      assert.equal(page.totalCount, 0);
    });

    it('members see their organization but only owners change it', async () => {
      await f.org('club');
      const m = await f.user('member1');
      await f.team('club', 'devs', ['member1']);
      const v = await f.organizations.get(m, 'club');
      assert.equal(v.permissions.update, false);
      assert.equal(v.permissions.destroy, false);
      await assert.rejects(f.organizations.update(m, 'club', { email: 'x@y.z' }), kindOf('forbidden'));
      await assert.rejects(f.organizations.delete(m, 'club'), kindOf('forbidden'));
      const list = await f.organizations.list(m, { number: 1, size: 20 });
      assert.deepEqual(
        list.items.map((i) => i.organization.name),
        ['club'],
      );
    });

    it('updates partially, renames, and an empty update is a no-op', async () => {
      await f.org('oldname');
      const same = await f.organizations.update(f.admin, 'oldname', {});
      assert.equal(same.organization.name, 'oldname');
      f.clock.advance(5);
      const v = await f.organizations.update(f.admin, 'oldname', {
        name: 'newname',
        email: 'new@x.y',
        sessionTimeout: 3600,
        sessionRemember: 3600,
      });
      assert.equal(v.organization.name, 'newname');
      assert.equal(v.organization.email, 'new@x.y');
      assert.equal(v.organization.sessionTimeout, 3600);
      assert.equal(v.organization.id, same.organization.id);
      await assert.rejects(f.organizations.get(f.admin, 'oldname'), kindOf('not_found'));
      await assert.rejects(
        f.organizations.update(f.admin, 'newname', { collaboratorAuthPolicy: 'sms' }),
        kindOf('invalid', '/data/attributes/collaborator-auth-policy'),
      );
    });

    it('entitlements: state storage on, remote operations off', async () => {
      await f.org('ent');
      const e = await f.organizations.entitlements(f.admin, 'ent');
      assert.equal(e.flags['state-storage'], true);
      assert.equal(e.flags.operations, false);
      assert.equal(e.id, (await f.organizations.get(f.admin, 'ent')).organization.id);
    });

    it('delete cascades to teams, tokens and workspaces, and runs the delete hooks', async () => {
      await f.org('doomed');
      const wsId = await f.workspace('doomed', 'w1');
      await f.workspaces.lock(f.admin, wsId, 'held');
      const tok = await f.tokens.createOrganizationToken(f.admin, 'doomed', {});
      const seen: string[][] = [];
      f.workspaces.setStateVersionHooks({ onWorkspacesDeleted: async (_ex, ids) => void seen.push(ids) });
      await f.organizations.delete(f.admin, 'doomed');
      assert.deepEqual(seen, [[wsId]]);
      await assert.rejects(f.organizations.get(f.admin, 'doomed'), kindOf('not_found'));
      await assert.rejects(f.workspaces.getById(f.admin, wsId), kindOf('not_found'));
      assert.equal(await f.identity.authenticate(tok.secret), null);
      f.workspaces.setStateVersionHooks({ onWorkspacesDeleted: async () => {} });
    });

    it('lists with pagination ordered by name', async () => {
      for (const n of ['p-a', 'p-b', 'p-c']) await f.org(n);
      const all = await f.organizations.list(f.admin, { number: 1, size: 100 });
      const names = all.items.map((i) => i.organization.name);
      assert.deepEqual(names, [...names].sort());
      const p2 = await f.organizations.list(f.admin, { number: 2, size: 2 });
      assert.equal(p2.totalCount, all.totalCount);
      assert.deepEqual(
        p2.items.map((i) => i.organization.name),
        names.slice(2, 4),
      );
      const far = await f.organizations.list(f.admin, { number: 999, size: 100 });
      assert.deepEqual(far.items, []);
      assert.equal(far.totalCount, all.totalCount);
    });
  });
}
