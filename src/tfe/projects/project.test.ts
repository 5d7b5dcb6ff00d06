import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dbKinds } from '../../../test/support/test-db.js';
import { createTfeFixture } from '../../../test/support/tfe-fixture.js';
import type { TfeFixture } from '../../../test/support/tfe-fixture.js';
import { DomainError } from '../../shared/errors.js';
import { organizationAccess } from '../identity/permissions.js';
import type { OrganizationFacts } from '../identity/permissions.js';
import { isValidProjectName, parseNamesFilter, parseProjectSort, projectPermissions } from './project.js';

const kindOf = (kind: string) => (e: unknown) => e instanceof DomainError && e.kind === kind;

describe('project rules', () => {
  it('names: 3 to 40 letters, digits, spaces, "-" and "_", no space at either end', () => {
    for (const ok of ['abc', 'Default Project', 'a-b_c 1', 'x'.repeat(40)])
      assert.equal(isValidProjectName(ok), true, ok);
    for (const bad of ['ab', '', ' abc', 'abc ', 'x'.repeat(41), 'a/b', 'a.b', 'ä-b-c'])
      assert.equal(isValidProjectName(bad), false, bad);
  });

  it('filter[names] and sort', () => {
    assert.deepEqual(parseNamesFilter('a, b ,,c'), ['a', 'b', 'c']);
    assert.equal(parseNamesFilter(''), undefined);
    assert.equal(parseNamesFilter(' , '), undefined);
    assert.deepEqual(parseNamesFilter(['a', 'b']), ['a', 'b']);
    assert.equal(parseProjectSort(undefined), 'asc');
    assert.equal(parseProjectSort('-name'), 'desc');
    assert.throws(() => parseProjectSort('id'), kindOf('invalid'));
  });

  it('permissions follow organization access; the default project is never destroyable', () => {
    const facts: OrganizationFacts = {
      siteAdmin: false,
      isUser: true,
      organizationToken: false,
      owner: false,
      member: true,
      manageWorkspaces: false,
      readWorkspaces: false,
      manageProjects: false,
      readProjects: false,
    };
    const owner = organizationAccess({ ...facts, owner: true });
    assert.deepEqual(projectPermissions(owner, { isDefault: false }), {
      canRead: true,
      canUpdate: true,
      canDestroy: true,
      canCreateWorkspace: true,
      canMoveWorkspace: true,
    });
    assert.equal(projectPermissions(owner, { isDefault: true }).canDestroy, false);
    const member = projectPermissions(organizationAccess(facts), { isDefault: false });
    assert.deepEqual([member.canUpdate, member.canDestroy, member.canCreateWorkspace], [false, false, false]);
    const workspaces = projectPermissions(organizationAccess({ ...facts, manageWorkspaces: true }), {
      isDefault: false,
    });
    assert.deepEqual([workspaces.canUpdate, workspaces.canCreateWorkspace], [false, true]);
  });
});

for (const kind of dbKinds()) {
  describe(`projects [${kind}]`, () => {
    let f: TfeFixture;
    before(async () => {
      f = await createTfeFixture(kind);
    });
    after(async () => f.cleanup());

    it('an organization is created with its default project; its workspaces go there', async () => {
      await f.org('p1');
      const org = (await f.organizations.get(f.admin, 'p1')).organization;
      const { project } = await f.projects.get(f.admin, org.defaultProjectId);
      assert.equal(project.name, 'Default Project');
      assert.equal(project.isDefault, true);
      const wsId = await f.workspace('p1', 'w');
      assert.equal((await f.workspaces.getById(f.admin, wsId)).workspace.projectId, project.id);
      assert.equal((await f.projects.get(f.admin, project.id)).project.workspaceCount, 1);
      await assert.rejects(f.projects.delete(f.admin, project.id), kindOf('conflict'));
    });

    it('a project is deleted or gets a workspace, never both, however the two race', async () => {
      await f.org('p2');
      for (let i = 0; i < 12; i++) {
        const { project } = await f.projects.create(f.admin, 'p2', { name: `race ${i}` });
        const [deleted, created] = await Promise.allSettled([
          f.projects.delete(f.admin, project.id),
          f.workspaces.create(f.admin, 'p2', { name: `race-${i}`, projectId: project.id }),
        ]);
        if (deleted.status === 'fulfilled') {
          assert.equal(created.status, 'rejected', `round ${i}: both succeeded`);
          assert.ok(kindOf('not_found')((created as PromiseRejectedResult).reason), String(created));
        } else {
          assert.ok(kindOf('conflict')(deleted.reason), `round ${i}: ${String(deleted.reason)}`);
          assert.equal(created.status, 'fulfilled');
          assert.equal((await f.projects.get(f.admin, project.id)).project.workspaceCount, 1);
        }
      }
    });

    it('deleting an organization deletes its projects', async () => {
      await f.org('p3');
      const { project } = await f.projects.create(f.admin, 'p3', { name: 'gone soon' });
      await f.workspaces.create(f.admin, 'p3', { name: 'w', projectId: project.id });
      await f.organizations.delete(f.admin, 'p3');
      await assert.rejects(f.projects.get(f.admin, project.id), kindOf('not_found'));
    });
  });
}
