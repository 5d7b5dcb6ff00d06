/**
 * Team access to a workspace (`team-workspaces`, reference 8.2): a fixed level or a
 * custom one whose state-versions and workspace-locking parts matter here.
 */
import { invalid } from '../../shared/errors.js';
import { STATE_VERSIONS_ACCESS, TEAM_ACCESS_LEVELS } from '../identity/permissions.js';
import type { StateVersionsAccess, TeamAccessLevel } from '../identity/permissions.js';

export interface TeamAccess {
  /** `tws-…` */
  id: string;
  teamId: string;
  workspaceId: string;
  access: TeamAccessLevel;
  stateVersions: StateVersionsAccess;
  workspaceLocking: boolean;
  createdAt: Date;
}

export interface TeamAccessInput {
  access?: string;
  stateVersions?: string;
  workspaceLocking?: boolean;
}

/** What a fixed level means for the custom fields, so documents show consistent values. */
export function impliedCustomFields(
  access: TeamAccessLevel,
): { stateVersions: StateVersionsAccess; workspaceLocking: boolean } | undefined {
  switch (access) {
    case 'read':
    case 'plan':
      return { stateVersions: 'read', workspaceLocking: false };
    case 'write':
    case 'admin':
      return { stateVersions: 'write', workspaceLocking: true };
    case 'custom':
      return undefined;
  }
}

/** Validates and completes an input into the stored fields. */
export function resolveTeamAccess(
  input: TeamAccessInput,
  current?: Pick<TeamAccess, 'access' | 'stateVersions' | 'workspaceLocking'>,
): Pick<TeamAccess, 'access' | 'stateVersions' | 'workspaceLocking'> {
  const access = input.access ?? current?.access;
  if (access === undefined) throw invalid('access is required', '/data/attributes/access');
  if (!(TEAM_ACCESS_LEVELS as readonly string[]).includes(access)) {
    throw invalid(`access must be one of ${TEAM_ACCESS_LEVELS.join(', ')}`, '/data/attributes/access');
  }
  const level = access as TeamAccessLevel;
  if (
    input.stateVersions !== undefined &&
    !(STATE_VERSIONS_ACCESS as readonly string[]).includes(input.stateVersions)
  ) {
    throw invalid(
      `state-versions must be one of ${STATE_VERSIONS_ACCESS.join(', ')}`,
      '/data/attributes/state-versions',
    );
  }
  const implied = impliedCustomFields(level);
  if (implied) {
    if (input.stateVersions !== undefined || input.workspaceLocking !== undefined) {
      throw invalid(
        'state-versions and workspace-locking can only be set with access "custom"',
        '/data/attributes/access',
      );
    }
    return { access: level, ...implied };
  }
  return {
    access: level,
    stateVersions:
      (input.stateVersions as StateVersionsAccess | undefined) ??
      (current?.access === 'custom' ? current.stateVersions : 'none'),
    workspaceLocking: input.workspaceLocking ?? (current?.access === 'custom' ? current.workspaceLocking : false),
  };
}
