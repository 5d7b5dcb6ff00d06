import type { TeamAccess } from './team-access.js';

/** `team-workspaces` documents (reference 8.2). Run and variable fields mirror the level; nothing here runs. */
export function teamAccessResource(t: TeamAccess): Record<string, unknown> {
  const runs = t.access === 'write' || t.access === 'admin' ? 'apply' : t.access === 'plan' ? 'plan' : 'read';
  const variables = t.access === 'write' || t.access === 'admin' ? 'write' : t.access === 'custom' ? 'none' : 'read';
  return {
    id: t.id,
    type: 'team-workspaces',
    attributes: {
      access: t.access,
      runs,
      variables,
      'state-versions': t.stateVersions,
      'sentinel-mocks': 'none',
      'workspace-locking': t.workspaceLocking,
      'run-tasks': false,
    },
    relationships: {
      team: { data: { id: t.teamId, type: 'teams' }, links: { related: `/api/v2/teams/${t.teamId}` } },
      workspace: {
        data: { id: t.workspaceId, type: 'workspaces' },
        links: { related: `/api/v2/workspaces/${t.workspaceId}` },
      },
    },
    links: { self: `/api/v2/team-workspaces/${t.id}` },
  };
}
