import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Actor } from '../identity/actor.js';
import { heldByOtherMessage, isHeldBy, lockHolderOf, unlockCheck } from './workspace-lock.js';
import { checkWorkspaceInput, isValidTerraformVersion, isValidWorkspaceName } from './workspace.js';
import { resolveTeamAccess } from './team-access.js';
import { DomainError } from '../../shared/errors.js';

const alice: Actor = { kind: 'user', userId: 'user-a', username: 'alice', siteAdmin: false, tokenId: null };
const admin: Actor = { kind: 'user', userId: 'user-x', username: 'site-admin', siteAdmin: true, tokenId: null };
const team: Actor = {
  kind: 'team',
  teamId: 'team-t',
  teamName: 'ops',
  organization: 'acme',
  organizationId: 'org-1',
  tokenId: 'at-1',
};
const orgToken: Actor = { kind: 'organization', organization: 'acme', organizationId: 'org-1', tokenId: 'at-2' };

describe('lock rules', () => {
  it('users and teams hold locks, organization tokens cannot', () => {
    assert.deepEqual(lockHolderOf(alice), { kind: 'user', id: 'user-a' });
    assert.deepEqual(lockHolderOf(team), { kind: 'team', id: 'team-t' });
    assert.equal(lockHolderOf(orgToken), null);
  });

  const cases: Array<{
    name: string;
    lockedBy: { kind: 'user' | 'team'; id: string } | null;
    actor: Actor;
    expect: string;
  }> = [
    { name: 'unlocked', lockedBy: null, actor: alice, expect: 'not-locked' },
    { name: 'own user lock', lockedBy: { kind: 'user', id: 'user-a' }, actor: alice, expect: 'ok' },
    {
      name: 'other user lock, even for a site admin',
      lockedBy: { kind: 'user', id: 'user-a' },
      actor: admin,
      expect: 'held-by-other',
    },
    { name: 'own team lock', lockedBy: { kind: 'team', id: 'team-t' }, actor: team, expect: 'ok' },
    {
      name: 'same id, different kind',
      lockedBy: { kind: 'team', id: 'user-a' },
      actor: alice,
      expect: 'held-by-other',
    },
    { name: 'organization token', lockedBy: { kind: 'user', id: 'user-a' }, actor: orgToken, expect: 'held-by-other' },
  ];
  for (const c of cases) {
    it(`unlock check: ${c.name}`, () => {
      assert.equal(unlockCheck({ lockedBy: c.lockedBy }, c.actor), c.expect);
      assert.equal(isHeldBy({ lockedBy: c.lockedBy }, c.actor), c.expect === 'ok');
    });
  }

  it('names the holder the way clients match it', () => {
    assert.match(heldByOtherMessage({ kind: 'user', id: 'u' }, 'bob'), /is locked by User bob/);
    assert.match(heldByOtherMessage({ kind: 'team', id: 't' }, 'ops'), /is locked by Team ops/);
  });
});

describe('workspace input rules', () => {
  const pointerOf = (fn: () => void): string | undefined => {
    try {
      fn();
      return undefined;
    } catch (err) {
      assert.ok(err instanceof DomainError && err.kind === 'invalid');
      return err.field;
    }
  };
  const cases: Array<{ name: string; input: Parameters<typeof checkWorkspaceInput>[0]; pointer: string | undefined }> =
    [
      { name: 'defaults', input: {}, pointer: undefined },
      { name: 'local mode', input: { executionMode: 'local' }, pointer: undefined },
      { name: 'operations false', input: { operations: false }, pointer: undefined },
      { name: 'remote mode', input: { executionMode: 'remote' }, pointer: '/data/attributes/execution-mode' },
      { name: 'agent mode', input: { executionMode: 'agent' }, pointer: '/data/attributes/execution-mode' },
      { name: 'operations true', input: { operations: true }, pointer: '/data/attributes/operations' },
      { name: 'both', input: { operations: false, executionMode: 'local' }, pointer: '/data/attributes/operations' },
      { name: 'bad name', input: { name: 'a/b' }, pointer: '/data/attributes/name' },
      {
        name: 'bad version',
        input: { terraformVersion: 'nonexisting' },
        pointer: '/data/attributes/terraform-version',
      },
    ];
  for (const c of cases)
    it(c.name, () =>
      assert.equal(
        pointerOf(() => checkWorkspaceInput(c.input)),
        c.pointer,
      ),
    );

  it('names and versions', () => {
    assert.equal(isValidWorkspaceName('9f1c2d3e-aaaa-bbbb-cccc-0123456789ab'), true);
    assert.equal(isValidWorkspaceName(''), false);
    assert.equal(isValidWorkspaceName('has space'), false);
    for (const v of ['latest', '1.6.0', '~> 1.5', '>= 1.0, < 2.0', '0.11.0'])
      assert.equal(isValidTerraformVersion(v), true, v);
  });
});

describe('team access levels', () => {
  it('fixed levels imply their state-version and locking rights', () => {
    assert.deepEqual(resolveTeamAccess({ access: 'read' }), {
      access: 'read',
      stateVersions: 'read',
      workspaceLocking: false,
    });
    assert.deepEqual(resolveTeamAccess({ access: 'write' }), {
      access: 'write',
      stateVersions: 'write',
      workspaceLocking: true,
    });
    assert.deepEqual(resolveTeamAccess({ access: 'admin' }), {
      access: 'admin',
      stateVersions: 'write',
      workspaceLocking: true,
    });
  });
  it('custom takes its fields, defaulting to nothing', () => {
    assert.deepEqual(resolveTeamAccess({ access: 'custom' }), {
      access: 'custom',
      stateVersions: 'none',
      workspaceLocking: false,
    });
    assert.deepEqual(resolveTeamAccess({ access: 'custom', stateVersions: 'write', workspaceLocking: true }), {
      access: 'custom',
      stateVersions: 'write',
      workspaceLocking: true,
    });
    assert.deepEqual(
      resolveTeamAccess(
        { workspaceLocking: true },
        { access: 'custom', stateVersions: 'read', workspaceLocking: false },
      ),
      { access: 'custom', stateVersions: 'read', workspaceLocking: true },
    );
  });
  it('rejects unknown levels and custom fields on fixed levels', () => {
    assert.throws(
      () => resolveTeamAccess({ access: 'owner' }),
      (e: unknown) => e instanceof DomainError && e.field === '/data/attributes/access',
    );
    assert.throws(
      () => resolveTeamAccess({ access: 'custom', stateVersions: 'all' }),
      (e: unknown) => e instanceof DomainError && e.field === '/data/attributes/state-versions',
    );
    assert.throws(
      () => resolveTeamAccess({ access: 'read', stateVersions: 'write' }),
      (e: unknown) => e instanceof DomainError && e.kind === 'invalid',
    );
    assert.throws(
      () => resolveTeamAccess({}),
      (e: unknown) => e instanceof DomainError && e.field === '/data/attributes/access',
    );
  });
});
