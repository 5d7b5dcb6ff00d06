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
  const full = {
    runs: 'apply',
    variables: 'write',
    stateVersions: 'write',
    sentinelMocks: 'read',
    workspaceLocking: true,
    runTasks: true,
  } as const;
  it('fixed levels imply their fields; admin shows every field at its full value', () => {
    const none = { sentinelMocks: 'none', workspaceLocking: false, runTasks: false } as const;
    assert.deepEqual(resolveTeamAccess({ access: 'read' }), {
      access: 'read',
      runs: 'read',
      variables: 'read',
      stateVersions: 'read',
      ...none,
    });
    assert.deepEqual(resolveTeamAccess({ access: 'plan' }), {
      access: 'plan',
      runs: 'plan',
      variables: 'read',
      stateVersions: 'read',
      ...none,
    });
    assert.deepEqual(resolveTeamAccess({ access: 'write' }), { access: 'write', ...full, runTasks: false });
    assert.deepEqual(resolveTeamAccess({ access: 'admin' }), { access: 'admin', ...full });
  });
  it('custom keeps each field as given, HCP defaults for the rest, the previous values on update', () => {
    assert.deepEqual(resolveTeamAccess({ access: 'custom' }), {
      access: 'custom',
      runs: 'read',
      variables: 'none',
      stateVersions: 'none',
      sentinelMocks: 'none',
      workspaceLocking: false,
      runTasks: false,
    });
    assert.deepEqual(resolveTeamAccess({ access: 'custom', ...full }), { access: 'custom', ...full });
    const given = { runs: 'plan', stateVersions: 'read-outputs', runTasks: true } as const;
    const created = resolveTeamAccess({ access: 'custom', ...given });
    assert.deepEqual(created, {
      access: 'custom',
      runs: 'plan',
      variables: 'none',
      stateVersions: 'read-outputs',
      sentinelMocks: 'none',
      workspaceLocking: false,
      runTasks: true,
    });
    assert.deepEqual(resolveTeamAccess({ workspaceLocking: true }, created), { ...created, workspaceLocking: true });
    // Leaving custom for a fixed level takes that level's fields; coming back starts from the defaults.
    const fixed = resolveTeamAccess({ access: 'write' }, created);
    assert.equal(fixed.runTasks, false);
    assert.equal(resolveTeamAccess({ access: 'custom' }, fixed).runs, 'read');
  });
  it('refuses unknown levels, unknown field values and any field on a fixed level, naming it', () => {
    const refused: Array<[Parameters<typeof resolveTeamAccess>[0], string]> = [
      [{ access: 'owner' }, '/data/attributes/access'],
      [{}, '/data/attributes/access'],
      [{ access: 'custom', stateVersions: 'all' }, '/data/attributes/state-versions'],
      [{ access: 'custom', runs: 'destroy' }, '/data/attributes/runs'],
      [{ access: 'custom', variables: 'admin' }, '/data/attributes/variables'],
      [{ access: 'custom', sentinelMocks: 'write' }, '/data/attributes/sentinel-mocks'],
      [{ access: 'read', runs: 'apply' }, '/data/attributes/runs'],
      [{ access: 'read', stateVersions: 'write' }, '/data/attributes/state-versions'],
      [{ access: 'admin', runTasks: true }, '/data/attributes/run-tasks'],
      [{ access: 'plan', workspaceLocking: false }, '/data/attributes/workspace-locking'],
    ];
    for (const [input, pointer] of refused) {
      assert.throws(
        () => resolveTeamAccess(input),
        (e: unknown) => e instanceof DomainError && e.kind === 'invalid' && e.field === pointer,
        JSON.stringify(input),
      );
    }
    // An update that names a field while the stored level is fixed is refused too.
    assert.throws(
      () => resolveTeamAccess({ runs: 'apply' }, resolveTeamAccess({ access: 'read' })),
      (e: unknown) => e instanceof DomainError && e.field === '/data/attributes/runs',
    );
  });
});
