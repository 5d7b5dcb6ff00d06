/**
 * Pure permission rules of the Terraform state service. Services gather the facts
 * (who the actor is, which teams grant what) and these functions decide. The levels
 * follow HCP Terraform's workspace permissions (reference 8.2) and the token-kind table
 * (reference 8.3): organization tokens never write state or hold locks, team tokens
 * never create organizations or manage user tokens.
 */

/** One team's grant on one workspace (`team-workspaces`). */
export interface TeamGrant {
  access: TeamAccessLevel;
  /** Only meaningful for access 'custom'. */
  stateVersions: StateVersionsAccess;
  /** Only meaningful for access 'custom'. */
  workspaceLocking: boolean;
}

export type TeamAccessLevel = 'read' | 'plan' | 'write' | 'admin' | 'custom';
export type StateVersionsAccess = 'none' | 'read-outputs' | 'read' | 'write';

export const TEAM_ACCESS_LEVELS: readonly TeamAccessLevel[] = ['read', 'plan', 'write', 'admin', 'custom'];
export const STATE_VERSIONS_ACCESS: readonly StateVersionsAccess[] = ['none', 'read-outputs', 'read', 'write'];

/** Everything the rules need to know about an actor and one organization. */
export interface OrganizationFacts {
  /** The actor is a site admin user. */
  siteAdmin: boolean;
  /** The actor is a user (not a team or organization token). */
  isUser: boolean;
  /** The actor is this organization's own organization token. */
  organizationToken: boolean;
  /** A user in the owners team, or the owners team's token. */
  owner: boolean;
  /** A user in any team of the organization, or a team token of it. */
  member: boolean;
  /** Some team of the actor has organization access "manage workspaces". */
  manageWorkspaces: boolean;
  /** Some team of the actor has organization access "read workspaces". */
  readWorkspaces: boolean;
  /** Some team of the actor has organization access "manage projects". */
  manageProjects: boolean;
  /** Some team of the actor has organization access "read projects". */
  readProjects: boolean;
}

/** OrganizationFacts plus the team grants that apply to one workspace. */
export interface WorkspaceFacts extends OrganizationFacts {
  grants: TeamGrant[];
}

export interface OrganizationAccess {
  read: boolean;
  update: boolean;
  destroy: boolean;
  createWorkspace: boolean;
  /** Read every workspace of the organization without a per-workspace grant. */
  readAllWorkspaces: boolean;
  manageTeams: boolean;
  manageOrganizationToken: boolean;
  manageTeamTokens: boolean;
  /**
   * Change the owners team: its members and its tokens. Only owners (and site admins):
   * whoever may do it can make anyone an owner, so an organization token, which may
   * manage the other teams, may not (it would get an owners-team token, and with it the
   * state writes and owner actions it is refused itself).
   */
  manageOwnersTeam: boolean;
  /** See every project of the organization. */
  readAllProjects: boolean;
  /** Create, rename and delete projects. */
  manageProjects: boolean;
}

export interface WorkspaceAccess {
  read: boolean;
  readStateOutputs: boolean;
  readStateVersions: boolean;
  writeStateVersions: boolean;
  lock: boolean;
  /** Settings, force-unlock, delete, team access. */
  admin: boolean;
  /** Organization owner: the self-hosted backing-data actions. */
  owner: boolean;
}

const NO_WORKSPACE_ACCESS: WorkspaceAccess = {
  read: false,
  readStateOutputs: false,
  readStateVersions: false,
  writeStateVersions: false,
  lock: false,
  admin: false,
  owner: false,
};

export function organizationAccess(f: OrganizationFacts): OrganizationAccess {
  const full = f.siteAdmin || f.owner;
  const manageWorkspaces = f.manageWorkspaces || f.manageProjects;
  return {
    read: full || f.member || f.organizationToken,
    update: full,
    destroy: full,
    createWorkspace: full || manageWorkspaces || f.organizationToken,
    readAllWorkspaces: full || manageWorkspaces || f.readWorkspaces || f.organizationToken,
    manageTeams: full || f.organizationToken,
    manageOrganizationToken: (full && (f.isUser || f.owner)) || f.organizationToken,
    manageTeamTokens: full || f.organizationToken,
    manageOwnersTeam: full,
    readAllProjects: full || f.organizationToken || manageWorkspaces || f.readWorkspaces || f.readProjects,
    manageProjects: full || f.organizationToken || f.manageProjects,
  };
}

/** The `permissions` a team document shows the caller. */
export interface TeamPermissions {
  updateMembership: boolean;
  destroy: boolean;
  updateOrganizationAccess: boolean;
  updateApiToken: boolean;
  updateVisibility: boolean;
  updateName: boolean;
}

/**
 * What the caller may do to one team. The owners team is changed only by owners
 * (`manageOwnersTeam`), and is never deleted, renamed or given other access.
 */
export function teamPermissions(org: OrganizationAccess, team: { isOwners: boolean }): TeamPermissions {
  const reach = !team.isOwners || org.manageOwnersTeam;
  const manage = org.manageTeams && reach;
  return {
    updateMembership: manage,
    destroy: manage && !team.isOwners,
    updateOrganizationAccess: manage && !team.isOwners,
    updateApiToken: org.manageTeamTokens && reach,
    updateVisibility: manage,
    updateName: manage && !team.isOwners,
  };
}

/** What one grant allows; the actor's access is the union over its grants. */
export function grantAccess(g: TeamGrant): WorkspaceAccess {
  switch (g.access) {
    case 'admin':
      return {
        read: true,
        readStateOutputs: true,
        readStateVersions: true,
        writeStateVersions: true,
        lock: true,
        admin: true,
        owner: false,
      };
    case 'write':
      return {
        read: true,
        readStateOutputs: true,
        readStateVersions: true,
        writeStateVersions: true,
        lock: true,
        admin: false,
        owner: false,
      };
    case 'read':
    case 'plan':
      return { ...NO_WORKSPACE_ACCESS, read: true, readStateOutputs: true, readStateVersions: true };
    case 'custom': {
      const sv = g.stateVersions;
      return {
        ...NO_WORKSPACE_ACCESS,
        read: true,
        readStateOutputs: sv !== 'none',
        readStateVersions: sv === 'read' || sv === 'write',
        writeStateVersions: sv === 'write',
        lock: g.workspaceLocking,
      };
    }
  }
}

function union(a: WorkspaceAccess, b: WorkspaceAccess): WorkspaceAccess {
  return {
    read: a.read || b.read,
    readStateOutputs: a.readStateOutputs || b.readStateOutputs,
    readStateVersions: a.readStateVersions || b.readStateVersions,
    writeStateVersions: a.writeStateVersions || b.writeStateVersions,
    lock: a.lock || b.lock,
    admin: a.admin || b.admin,
    owner: a.owner || b.owner,
  };
}

export function workspaceAccess(f: WorkspaceFacts): WorkspaceAccess {
  if (f.siteAdmin || f.owner) {
    return {
      read: true,
      readStateOutputs: true,
      readStateVersions: true,
      writeStateVersions: true,
      lock: true,
      admin: true,
      owner: true,
    };
  }
  if (f.organizationToken) {
    // Organization tokens manage workspaces and read state, but never write state or hold locks.
    return { ...NO_WORKSPACE_ACCESS, read: true, readStateOutputs: true, readStateVersions: true, admin: true };
  }
  let acc = NO_WORKSPACE_ACCESS;
  // "Manage projects" is admin on every project, so on every workspace in them.
  if (f.manageWorkspaces || f.manageProjects)
    acc = union(acc, grantAccess({ access: 'admin', stateVersions: 'write', workspaceLocking: true }));
  if (f.readWorkspaces)
    acc = union(acc, grantAccess({ access: 'read', stateVersions: 'read', workspaceLocking: false }));
  for (const g of f.grants) acc = union(acc, grantAccess(g));
  return acc;
}

export function allows(
  access: WorkspaceAccess,
  need:
    | 'read'
    | 'read-state-outputs'
    | 'read-state-versions'
    | 'read-and-write-state-versions'
    | 'lock'
    | 'admin'
    | 'organization-owner',
): boolean {
  switch (need) {
    case 'read':
      return access.read;
    case 'read-state-outputs':
      return access.readStateOutputs;
    case 'read-state-versions':
      return access.readStateVersions;
    case 'read-and-write-state-versions':
      return access.writeStateVersions;
    case 'lock':
      return access.lock;
    case 'admin':
      return access.admin;
    case 'organization-owner':
      return access.owner;
  }
}
