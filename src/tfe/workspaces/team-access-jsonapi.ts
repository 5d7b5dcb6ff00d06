import type { TeamAccess } from './team-access.js';

/** `team-workspaces` documents (reference 8.2): the level and its fields as stored (implied ones for a fixed level). */
export function teamAccessResource(t: TeamAccess): Record<string, unknown> {
  return {
    id: t.id,
    type: 'team-workspaces',
    attributes: {
      access: t.access,
      runs: t.runs,
      variables: t.variables,
      'state-versions': t.stateVersions,
      'sentinel-mocks': t.sentinelMocks,
      'workspace-locking': t.workspaceLocking,
      'run-tasks': t.runTasks,
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
