import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dbKinds } from '../../../test/support/test-db.js';
import { createTfeFixture } from '../../../test/support/tfe-fixture.js';
import type { TfeFixture } from '../../../test/support/tfe-fixture.js';
import { DomainError } from '../../shared/errors.js';
import { ACCESS_TTL_MS, WorkspaceService, isPendingUnlockError } from './workspace-service.js';
import { WorkspaceRepo } from './workspace-repo.js';
import { AdminTokenRepo } from '../../admin/admin-token-repo.js';
import { AdminTokenService } from '../../admin/admin-token-service.js';
import { openDatabase } from '../../db/database.js';
import { buildTfeIdentityLayer } from '../tfe-services.js';

const kindOf = (kind: string, field?: string) => (e: unknown) =>
  e instanceof DomainError && e.kind === kind && (field === undefined || e.field === field);

for (const kind of dbKinds()) {
  describe(`tfe workspaces [${kind}]`, () => {
    let f: TfeFixture;
    before(async () => {
      f = await createTfeFixture(kind);
      await f.org('acme');
    });
    after(async () => f.cleanup());

    it('creates with local execution defaults and echoes the attributes it was given', async () => {
      const v = await f.workspaces.create(f.admin, 'acme', {
        name: 'net',
        autoApply: true,
        allowDestroyPlan: false,
        terraformVersion: '0.11.0',
        triggerPrefixes: ['/modules', '/shared'],
        workingDirectory: 'bar/',
      });
      const w = v.workspace;
      assert.match(w.id, /^ws-[1-9A-HJ-NP-Za-km-z]{16}$/);
      assert.equal(w.executionMode, 'local');
      assert.equal(w.autoApply, true);
      assert.equal(w.allowDestroyPlan, false);
      assert.equal(w.terraformVersion, '0.11.0');
      assert.deepEqual(w.triggerPrefixes, ['/modules', '/shared']);
      assert.equal(w.workingDirectory, 'bar/');
      assert.equal(w.locked, false);
      assert.equal(v.permissions.canDestroy, true);
      assert.equal(v.permissions.canQueueRun, false);
      assert.deepEqual(await f.workspaces.getById(f.admin, w.id), v);
      assert.deepEqual(await f.workspaces.getByName(f.admin, 'acme', 'net'), v);
      const dflt = await f.workspaces.create(f.admin, 'acme', { name: 'plain' });
      assert.equal(dflt.workspace.terraformVersion, 'latest');
      assert.equal(dflt.workspace.allowDestroyPlan, true);
    });

    it('refuses remote execution, bad names and duplicates with pointers', async () => {
      await assert.rejects(
        f.workspaces.create(f.admin, 'acme', { name: 'r', executionMode: 'remote' }),
        kindOf('invalid', '/data/attributes/execution-mode'),
      );
      await assert.rejects(
        f.workspaces.create(f.admin, 'acme', { name: 'r', operations: true }),
        kindOf('invalid', '/data/attributes/operations'),
      );
      await assert.rejects(f.workspaces.create(f.admin, 'acme', {}), kindOf('invalid', '/data/attributes/name'));
      await f.workspace('acme', 'twice');
      await assert.rejects(
        f.workspaces.create(f.admin, 'acme', { name: 'twice' }),
        kindOf('invalid', '/data/attributes/name'),
      );
      await assert.rejects(f.workspaces.create(f.admin, 'nosuchorg', { name: 'x' }), kindOf('not_found'));
    });

    it('updates, renames and deletes by id or by name', async () => {
      const id = await f.workspace('acme', 'before');
      const v = await f.workspaces.update(
        f.admin,
        { organization: 'acme', name: 'before' },
        { name: 'after', terraformVersion: '1.6.0' },
      );
      assert.equal(v.workspace.id, id);
      assert.equal(v.workspace.name, 'after');
      assert.equal(v.workspace.terraformVersion, '1.6.0');
      await assert.rejects(
        f.workspaces.update(f.admin, { id }, { executionMode: 'agent' }),
        kindOf('invalid', '/data/attributes/execution-mode'),
      );
      const deleted: string[][] = [];
      f.workspaces.setStateVersionHooks({ onWorkspacesDeleted: async (_ex, ids) => void deleted.push(ids) });
      await f.workspaces.delete(f.admin, { organization: 'acme', name: 'after' });
      assert.deepEqual(deleted, [[id]]);
      await assert.rejects(f.workspaces.getById(f.admin, id), kindOf('not_found'));
      f.workspaces.setStateVersionHooks({ onWorkspacesDeleted: async () => {} });
    });

    it('lists with search and pagination; outsiders see nothing', async () => {
      await f.org('listorg');
      for (const n of ['alpha-1', 'alpha-2', 'beta_1', 'gamma']) await f.workspace('listorg', n);
      const all = await f.workspaces.list(f.admin, 'listorg', { page: { number: 1, size: 20 } });
      assert.deepEqual(
        all.items.map((v) => v.workspace.name),
        ['alpha-1', 'alpha-2', 'beta_1', 'gamma'],
      );
      const alpha = await f.workspaces.list(f.admin, 'listorg', { search: 'ALPHA', page: { number: 1, size: 20 } });
      assert.equal(alpha.totalCount, 2);
      // `_` is literal, not a LIKE wildcard.
      const underscore = await f.workspaces.list(f.admin, 'listorg', { search: '_', page: { number: 1, size: 20 } });
      assert.deepEqual(
        underscore.items.map((v) => v.workspace.name),
        ['beta_1'],
      );
      const p2 = await f.workspaces.list(f.admin, 'listorg', { page: { number: 2, size: 3 } });
      assert.deepEqual(
        p2.items.map((v) => v.workspace.name),
        ['gamma'],
      );
      assert.equal(p2.totalCount, 4);
      const u = await f.user('lister');
      await assert.rejects(f.workspaces.list(u, 'listorg', { page: { number: 1, size: 20 } }), kindOf('not_found'));
    });

    it('filters by tags, excluded tags and wildcard names; tags can be added and removed', async () => {
      await f.org('tagorg');
      const mk = async (name: string, tagNames: string[]) =>
        (await f.workspaces.create(f.admin, 'tagorg', { name, tagNames })).workspace.id;
      await mk('app-prod', ['app', 'prod']);
      await mk('app-dev', ['app', 'dev']);
      const dbId = await mk('db-prod', ['db', 'prod']);
      await mk('app_x', ['application']);
      const names = async (filter: object) =>
        (await f.workspaces.list(f.admin, 'tagorg', { ...filter, page: { number: 1, size: 20 } })).items.map(
          (v) => v.workspace.name,
        );
      assert.deepEqual(await names({ tags: ['app'] }), ['app-dev', 'app-prod']);
      assert.deepEqual(await names({ tags: ['APP', 'prod'] }), ['app-prod']);
      assert.deepEqual(await names({ tags: ['prod'], excludeTags: ['db'] }), ['app-prod']);
      assert.deepEqual(await names({ wildcardName: 'app-*' }), ['app-dev', 'app-prod']);
      assert.deepEqual(await names({ wildcardName: '*-prod' }), ['app-prod', 'db-prod']);
      assert.deepEqual(await names({ wildcardName: 'db-prod' }), ['db-prod']);
      assert.deepEqual(await names({ wildcardName: 'app_*' }), ['app_x']);
      await f.workspaces.addTags(f.admin, dbId, ['app', 'prod']);
      assert.deepEqual(await f.workspaces.tags(f.admin, dbId), ['db', 'prod', 'app']);
      await f.workspaces.removeTags(f.admin, dbId, ['db']);
      assert.deepEqual(await names({ tags: ['app', 'prod'] }), ['app-prod', 'db-prod']);
      await assert.rejects(
        f.workspaces.addTags(f.admin, dbId, ['bad tag']),
        kindOf('invalid', '/data/attributes/tag-names'),
      );
    });

    it('team grants decide visibility and what a member may do', async () => {
      await f.org('grants');
      const wsA = await f.workspace('grants', 'a');
      const wsB = await f.workspace('grants', 'b');
      const reader = await f.user('reader');
      const writer = await f.user('writer');
      const readers = await f.team('grants', 'readers', ['reader']);
      const writers = await f.team('grants', 'writers', ['writer']);
      await f.teamAccess.create(f.admin, readers, wsA, { access: 'read' });
      const g = await f.teamAccess.create(f.admin, writers, wsA, {
        access: 'custom',
        stateVersions: 'write',
        workspaceLocking: true,
      });

      const list = await f.workspaces.list(reader, 'grants', { page: { number: 1, size: 20 } });
      assert.deepEqual(
        list.items.map((v) => v.workspace.id),
        [wsA],
      );
      await assert.rejects(f.workspaces.getById(reader, wsB), kindOf('not_found'));
      const rv = await f.workspaces.getById(reader, wsA);
      assert.equal(rv.permissions.canReadStateVersions, true);
      assert.equal(rv.permissions.canCreateStateVersions, false);
      assert.equal(rv.permissions.canLock, false);

      assert.equal((await f.workspaces.authorize(reader, wsA, 'read-state-versions')).id, wsA);
      await assert.rejects(f.workspaces.authorize(reader, wsA, 'read-and-write-state-versions'), kindOf('forbidden'));
      await assert.rejects(f.workspaces.lock(reader, wsA, null), kindOf('forbidden'));
      await assert.rejects(f.workspaces.authorize(reader, wsB, 'read'), kindOf('not_found'));
      await assert.rejects(f.workspaces.authorize(reader, 'ws-doesnotexist0000', 'read'), kindOf('not_found'));

      assert.equal((await f.workspaces.authorize(writer, wsA, 'read-and-write-state-versions')).id, wsA);
      await assert.rejects(f.workspaces.authorize(writer, wsA, 'admin'), kindOf('forbidden'));
      await assert.rejects(f.workspaces.forceUnlock(writer, wsA), kindOf('forbidden'));
      await assert.rejects(f.workspaces.delete(writer, { id: wsA }), kindOf('forbidden'));
      const locked = await f.workspaces.lock(writer, wsA, 'mine');
      assert.deepEqual(locked.workspace.lockedBy, { kind: 'user', id: writer.userId });
      f.workspaces.assertWritable(writer, locked.workspace);
      assert.throws(() => f.workspaces.assertWritable(reader, locked.workspace), kindOf('conflict'));
      await f.workspaces.unlock(writer, wsA);

      // Team access management needs admin on the workspace.
      await assert.rejects(f.teamAccess.listForWorkspace(writer, wsA), kindOf('forbidden'));
      assert.equal((await f.teamAccess.listForWorkspace(f.admin, wsA)).length, 2);
      await f.teamAccess.update(f.admin, g.id, { access: 'read' });
      await assert.rejects(f.workspaces.lock(writer, wsA, null), kindOf('forbidden'));
      await f.teamAccess.delete(f.admin, g.id);
      await assert.rejects(f.workspaces.getById(writer, wsA), kindOf('not_found'));
    });

    it('organization tokens read and manage workspaces but never write state or lock', async () => {
      await f.org('orgtok');
      const ws = await f.workspace('orgtok', 'w');
      const tok = await f.tokens.createOrganizationToken(f.admin, 'orgtok', {});
      const actor = await f.actorOf(tok.secret);
      assert.equal((await f.workspaces.getById(actor, ws)).workspace.id, ws);
      assert.equal(
        (await f.workspaces.create(actor, 'orgtok', { name: 'made-by-token' })).workspace.name,
        'made-by-token',
      );
      assert.equal((await f.workspaces.authorize(actor, ws, 'read-state-versions')).id, ws);
      await assert.rejects(f.workspaces.authorize(actor, ws, 'read-and-write-state-versions'), kindOf('forbidden'));
      await assert.rejects(f.workspaces.lock(actor, ws, null), kindOf('forbidden'));
      // Not across organizations.
      const other = await f.workspace('acme', 'not-yours');
      await assert.rejects(f.workspaces.getById(actor, other), kindOf('not_found'));
    });

    it('lock, unlock and force-unlock follow the reference semantics', async () => {
      const id = await f.workspace('acme', 'locky');
      const bob = await f.user('lockbob');
      await f.team('acme', 'lockers', ['lockbob'], { manageWorkspaces: true });
      const v = await f.workspaces.lock(bob, id, 'Locked by Terraform');
      assert.equal(v.workspace.locked, true);
      assert.equal(v.workspace.lockedReason, 'Locked by Terraform');
      assert.deepEqual(v.workspace.lockedBy, { kind: 'user', id: bob.userId });
      await assert.rejects(f.workspaces.lock(bob, id, null), kindOf('conflict'));
      await assert.rejects(f.workspaces.lock(f.admin, id, null), kindOf('conflict'));
      await assert.rejects(
        f.workspaces.unlock(f.admin, id),
        (e: unknown) =>
          e instanceof DomainError && e.kind === 'conflict' && /is locked by User lockbob/.test(e.message),
      );
      const u = await f.workspaces.unlock(bob, id);
      assert.equal(u.workspace.locked, false);
      assert.equal(u.workspace.lockedBy, null);
      assert.equal(u.workspace.lockedReason, null);
      await assert.rejects(f.workspaces.unlock(bob, id), kindOf('conflict'));
      await f.workspaces.lock(bob, id, null);
      const fu = await f.workspaces.forceUnlock(f.admin, id);
      assert.equal(fu.workspace.locked, false);
      await assert.rejects(f.workspaces.forceUnlock(f.admin, id), kindOf('conflict'));
    });

    it('team tokens hold locks as the team', async () => {
      await f.org('teamlock');
      const ws = await f.workspace('teamlock', 'w');
      const teamId = await f.team('teamlock', 'deployers');
      await f.teamAccess.create(f.admin, teamId, ws, { access: 'write' });
      const actor = await f.actorOf((await f.tokens.createTeamToken(f.admin, teamId, {})).secret);
      const v = await f.workspaces.lock(actor, ws, null);
      assert.deepEqual(v.workspace.lockedBy, { kind: 'team', id: teamId });
      await assert.rejects(
        f.workspaces.unlock(f.admin, ws),
        (e: unknown) => e instanceof DomainError && /is locked by Team deployers/.test(e.message),
      );
      await f.workspaces.unlock(actor, ws);
    });

    it('only one of many concurrent lock attempts wins', async () => {
      const id = await f.workspace('acme', 'race');
      const results = await Promise.allSettled(Array.from({ length: 8 }, () => f.workspaces.lock(f.admin, id, 'race')));
      assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
      for (const r of results) if (r.status === 'rejected') assert.ok(kindOf('conflict')(r.reason));
      await f.workspaces.unlock(f.admin, id);
    });

    it('two nodes on one database: exactly one lock wins, and only the holder unlocks', async () => {
      const id = await f.workspace('acme', 'two-nodes');
      const db2 = openDatabase({ url: f.tdb.url, poolSize: 5 });
      try {
        const node2 = buildTfeIdentityLayer({
          db: db2,
          clock: f.clock,
          adminTokens: new AdminTokenService({
            repo: new AdminTokenRepo({ db: db2.kysely, units: db2.units }),
            clock: f.clock,
          }),
        });
        const results = await Promise.allSettled([
          ...Array.from({ length: 6 }, () => f.workspaces.lock(f.admin, id, 'node1')),
          ...Array.from({ length: 6 }, () => node2.workspaces.lock(f.admin, id, 'node2')),
        ]);
        const won = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
        assert.equal(won.length, 1);
        for (const r of results) if (r.status === 'rejected') assert.ok(kindOf('conflict')(r.reason), String(r.reason));
        const holder = await f.user('two-node-other');
        await f.team('acme', 'two-node-team', ['two-node-other'], { manageWorkspaces: true });
        await assert.rejects(node2.workspaces.unlock(holder, id), kindOf('conflict'));
        assert.equal((await node2.workspaces.unlock(f.admin, id)).workspace.locked, false);
        assert.equal((await f.workspaces.getById(f.admin, id)).workspace.locked, false);
      } finally {
        await db2.destroy();
      }
    });

    it('unlock is refused while the latest state version is pending; force-unlock is not', async () => {
      const id = await f.workspace('acme', 'pending');
      let pending = true;
      f.workspaces.setStateVersionHooks({ latestIsPending: async (wsId) => wsId === id && pending });
      await f.workspaces.lock(f.admin, id, null);
      await assert.rejects(
        f.workspaces.unlock(f.admin, id),
        (e: unknown) => isPendingUnlockError(e) && /latest state version is still pending/.test((e as Error).message),
      );
      assert.equal((await f.workspaces.getById(f.admin, id)).workspace.locked, true);
      pending = false;
      await f.workspaces.unlock(f.admin, id);
      pending = true;
      await f.workspaces.lock(f.admin, id, null);
      assert.equal((await f.workspaces.forceUnlock(f.admin, id)).workspace.locked, false);
      f.workspaces.setStateVersionHooks({ latestIsPending: async () => false });
    });

    it('permission reads in flight are shared; refusals and reads begun before a change are not', async () => {
      await f.org('herd');
      const ws = await f.workspace('herd', 'w');
      const reader = await f.user('herd-reader');
      const outsider = await f.user('herd-outsider');
      await f.teamAccess.create(f.admin, await f.team('herd', 'readers', ['herd-reader']), ws, { access: 'read' });
      const repo = new WorkspaceRepo({ db: f.tdb.db.kysely });
      let reads = 0;
      const byId = repo.byId.bind(repo);
      repo.byId = (id) => {
        reads++;
        return byId(id);
      };
      const { db } = f.tdb;
      const deps = { db, repo, organizations: f.organizations, identity: f.identity, projects: f.projects };
      const workspaces = new WorkspaceService({ ...deps, clock: f.clock });
      const need = 'read-state-versions';

      const ids = await Promise.all(Array.from({ length: 20 }, () => workspaces.authorizedId(reader, ws, need)));
      assert.deepEqual(new Set(ids), new Set([ws]));
      assert.equal(reads, 1, 'one workspace read for twenty requests');
      assert.equal(await workspaces.authorizedId(reader, ws, need), ws);
      assert.equal(reads, 1, 'then answered from the permission cache');

      f.clock.advance(ACCESS_TTL_MS / 1000);
      const many = Array.from({ length: 5 }, () =>
        workspaces.authorizedId(reader, ws, 'read-and-write-state-versions'),
      );
      for (const r of await Promise.allSettled(many))
        assert.ok(r.status === 'rejected' && kindOf('forbidden')(r.reason));
      assert.equal(reads, 2, 'a shared read still checks what each caller needs');

      const refused = Array.from({ length: 5 }, () => workspaces.authorizedId(outsider, ws, need));
      for (const r of await Promise.allSettled(refused))
        assert.ok(r.status === 'rejected' && kindOf('not_found')(r.reason));
      assert.equal(reads, 2 + 5, 'each refused request read for itself');

      f.clock.advance(ACCESS_TTL_MS / 1000);
      const before = workspaces.authorizedId(reader, ws, need);
      workspaces.forgetAccess();
      const after = workspaces.authorizedId(reader, ws, need);
      assert.deepEqual(await Promise.all([before, after]), [ws, ws]);
      assert.equal(reads, 2 + 5 + 2, 'a request after a change of access does not join a read begun before it');
    });

    it('the current state version comes from the state versions hook', async () => {
      const id = await f.workspace('acme', 'withstate');
      f.workspaces.setStateVersionHooks({
        currentIds: async (ids) => new Map(ids.filter((x) => x === id).map((x) => [x, 'sv-current0000000'])),
      });
      assert.equal((await f.workspaces.getById(f.admin, id)).workspace.currentStateVersionId, 'sv-current0000000');
      const list = await f.workspaces.list(f.admin, 'acme', { search: 'withstate', page: { number: 1, size: 20 } });
      assert.equal(list.items[0]!.workspace.currentStateVersionId, 'sv-current0000000');
      f.workspaces.setStateVersionHooks({ currentIds: async () => new Map() });
    });
  });
}
