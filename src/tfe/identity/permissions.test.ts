import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { allows, grantAccess, organizationAccess, workspaceAccess } from './permissions.js';
import type { OrganizationFacts, TeamGrant, WorkspaceFacts } from './permissions.js';

const nobody: OrganizationFacts = {
  siteAdmin: false,
  isUser: true,
  organizationToken: false,
  owner: false,
  member: false,
  manageWorkspaces: false,
  readWorkspaces: false,
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
      expect: { read: true, update: true, destroy: true, createWorkspace: true },
    },
    // Organization tokens may manage workspaces, teams and their own token, not the organization itself.
    {
      name: 'organization token',
      facts: { ...nobody, isUser: false, organizationToken: true },
      expect: {
        read: true,
        update: false,
        destroy: false,
        createWorkspace: true,
        manageTeams: true,
        manageOrganizationToken: true,
      },
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const got = organizationAccess(c.facts);
      for (const [k, v] of Object.entries(c.expect)) assert.equal(got[k as keyof typeof got], v, `${c.name}: ${k}`);
    });
  }
});
