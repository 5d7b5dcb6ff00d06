import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { allows, grantAccess, organizationAccess, teamPermissions, workspaceAccess } from './permissions.js';
import type { OrganizationFacts, TeamGrant, WorkspaceFacts } from './permissions.js';

const nobody: OrganizationFacts = {
  siteAdmin: false,
  isUser: true,
  organizationToken: false,
  owner: false,
  member: false,
  manageWorkspaces: false,
  readWorkspaces: false,
  manageProjects: false,
  readProjects: false,
};

const NEEDS = [
  'read',
  'read-state-outputs',
  'read-state-versions',
  'read-and-write-state-versions',
  'lock',
  'admin',
  'organization-owner',
] as const;
type Need = (typeof NEEDS)[number];

function ws(f: Partial<WorkspaceFacts>): WorkspaceFacts {
  return { ...nobody, grants: [], ...f };
}

function grant(
  access: TeamGrant['access'],
  stateVersions: TeamGrant['stateVersions'] = 'none',
  workspaceLocking = false,
): TeamGrant {
  return { access, stateVersions, workspaceLocking };
}

describe('workspace permissions', () => {
  const cases: Array<{ name: string; facts: WorkspaceFacts; allowed: Need[] }> = [
    { name: 'stranger', facts: ws({}), allowed: [] },
    { name: 'member without grant', facts: ws({ member: true }), allowed: [] },
    { name: 'site admin', facts: ws({ siteAdmin: true }), allowed: [...NEEDS] },
    { name: 'owner', facts: ws({ owner: true, member: true }), allowed: [...NEEDS] },
    {
      name: 'read grant',
      facts: ws({ member: true, grants: [grant('read')] }),
      allowed: ['read', 'read-state-outputs', 'read-state-versions'],
    },
    {
      name: 'plan grant',
      facts: ws({ member: true, grants: [grant('plan')] }),
      allowed: ['read', 'read-state-outputs', 'read-state-versions'],
    },
    {
      name: 'write grant',
      facts: ws({ member: true, grants: [grant('write')] }),
      allowed: ['read', 'read-state-outputs', 'read-state-versions', 'read-and-write-state-versions', 'lock'],
    },
    {
      name: 'admin grant',
      facts: ws({ member: true, grants: [grant('admin')] }),
      allowed: ['read', 'read-state-outputs', 'read-state-versions', 'read-and-write-state-versions', 'lock', 'admin'],
    },
    { name: 'custom none', facts: ws({ member: true, grants: [grant('custom', 'none')] }), allowed: ['read'] },
    {
      name: 'custom read-outputs',
      facts: ws({ member: true, grants: [grant('custom', 'read-outputs')] }),
      allowed: ['read', 'read-state-outputs'],
    },
    {
      name: 'custom read',
      facts: ws({ member: true, grants: [grant('custom', 'read')] }),
      allowed: ['read', 'read-state-outputs', 'read-state-versions'],
    },
    {
      name: 'custom write without locking',
      facts: ws({ member: true, grants: [grant('custom', 'write')] }),
      allowed: ['read', 'read-state-outputs', 'read-state-versions', 'read-and-write-state-versions'],
    },
    {
      name: 'custom write with locking',
      facts: ws({ member: true, grants: [grant('custom', 'write', true)] }),
      allowed: ['read', 'read-state-outputs', 'read-state-versions', 'read-and-write-state-versions', 'lock'],
    },
    {
      name: 'grants add up',
      facts: ws({ member: true, grants: [grant('custom', 'none', true), grant('read')] }),
      allowed: ['read', 'read-state-outputs', 'read-state-versions', 'lock'],
    },
    {
      name: 'team with manage-workspaces',
      facts: ws({ member: true, manageWorkspaces: true }),
      allowed: ['read', 'read-state-outputs', 'read-state-versions', 'read-and-write-state-versions', 'lock', 'admin'],
    },
    {
      name: 'team with read-workspaces',
      facts: ws({ member: true, readWorkspaces: true }),
      allowed: ['read', 'read-state-outputs', 'read-state-versions'],
    },
    {
      name: 'team with manage-projects (admin on every project and its workspaces)',
      facts: ws({ member: true, manageProjects: true }),
      allowed: ['read', 'read-state-outputs', 'read-state-versions', 'read-and-write-state-versions', 'lock', 'admin'],
    },
    { name: 'team with read-projects only', facts: ws({ member: true, readProjects: true }), allowed: [] },
    // Organization tokens manage workspaces and read state but never write it or hold locks.
    {
      name: 'organization token',
      facts: ws({ isUser: false, organizationToken: true }),
      allowed: ['read', 'read-state-outputs', 'read-state-versions', 'admin'],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const access = workspaceAccess(c.facts);
      for (const need of NEEDS) assert.equal(allows(access, need), c.allowed.includes(need), `${c.name}: ${need}`);
    });
  }

  it('read-outputs grants outputs but not full state', () => {
    const a = grantAccess(grant('custom', 'read-outputs'));
    assert.equal(a.readStateOutputs, true);
    assert.equal(a.readStateVersions, false);
  });
});

describe('organization permissions', () => {
  const cases: Array<{
    name: string;
    facts: OrganizationFacts;
    expect: Partial<ReturnType<typeof organizationAccess>>;
  }> = [
    {
      name: 'stranger',
      facts: nobody,
      expect: { read: false, update: false, destroy: false, createWorkspace: false, manageOrganizationToken: false },
    },
    {
      name: 'member',
      facts: { ...nobody, member: true },
      expect: { read: true, update: false, createWorkspace: false, readAllWorkspaces: false, manageTeams: false },
    },
    {
      name: 'member of manage-workspaces team',
      facts: { ...nobody, member: true, manageWorkspaces: true },
      expect: { read: true, createWorkspace: true, readAllWorkspaces: true, update: false },
    },
    {
      name: 'owner user',
      facts: { ...nobody, member: true, owner: true },
      expect: {
        read: true,
        update: true,
        destroy: true,
        createWorkspace: true,
        manageTeams: true,
        manageOrganizationToken: true,
      },
    },
    {
      name: 'owners team token',
      facts: { ...nobody, isUser: false, member: true, owner: true },
      expect: { update: true, manageOrganizationToken: true },
    },
    {
      name: 'site admin',
      facts: { ...nobody, siteAdmin: true },
      expect: { read: true, update: true, destroy: true, createWorkspace: true, manageOwnersTeam: true },
    },
    // Organization tokens may manage workspaces, teams and their own token, not the organization itself,
    // and never the owners team (that would make them an owner).
    {
      name: 'organization token',
      facts: { ...nobody, isUser: false, organizationToken: true },
      expect: {
        read: true,
        update: false,
        destroy: false,
        createWorkspace: true,
        manageTeams: true,
        manageTeamTokens: true,
        manageOrganizationToken: true,
        manageOwnersTeam: false,
        readAllProjects: true,
        manageProjects: true,
      },
    },
    {
      name: 'member of manage-projects team',
      facts: { ...nobody, member: true, manageProjects: true },
      expect: { createWorkspace: true, readAllWorkspaces: true, readAllProjects: true, manageProjects: true },
    },
    {
      name: 'member of read-projects team',
      facts: { ...nobody, member: true, readProjects: true },
      expect: { readAllProjects: true, manageProjects: false, readAllWorkspaces: false, createWorkspace: false },
    },
    {
      name: 'member of read-workspaces team',
      facts: { ...nobody, member: true, readWorkspaces: true },
      expect: { readAllProjects: true, manageProjects: false },
    },
    {
      name: 'owner user',
      facts: { ...nobody, member: true, owner: true },
      expect: { manageOwnersTeam: true, readAllProjects: true, manageProjects: true },
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const got = organizationAccess(c.facts);
      for (const [k, v] of Object.entries(c.expect)) assert.equal(got[k as keyof typeof got], v, `${c.name}: ${k}`);
    });
  }
});

describe('team permissions', () => {
  const owner = organizationAccess({ ...nobody, member: true, owner: true });
  const orgToken = organizationAccess({ ...nobody, isUser: false, organizationToken: true });
  const member = organizationAccess({ ...nobody, member: true });

  it('owners manage every team, the owners team only in what it may change', () => {
    assert.deepEqual(teamPermissions(owner, { isOwners: false }), {
      updateMembership: true,
      destroy: true,
      updateOrganizationAccess: true,
      updateApiToken: true,
      updateVisibility: true,
      updateName: true,
    });
    assert.deepEqual(teamPermissions(owner, { isOwners: true }), {
      updateMembership: true,
      destroy: false,
      updateOrganizationAccess: false,
      updateApiToken: true,
      updateVisibility: true,
      updateName: false,
    });
  });

  it('an organization token manages other teams but nothing of the owners team', () => {
    assert.equal(teamPermissions(orgToken, { isOwners: false }).updateApiToken, true);
    assert.equal(teamPermissions(orgToken, { isOwners: false }).updateMembership, true);
    assert.deepEqual(Object.values(teamPermissions(orgToken, { isOwners: true })), Array<boolean>(6).fill(false));
  });

  it('a plain member changes nothing', () => {
    for (const isOwners of [false, true])
      assert.deepEqual(Object.values(teamPermissions(member, { isOwners })), Array<boolean>(6).fill(false));
  });
});
