import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';
import { Attr, Document, JsonApiBody, ListDocument, RelationshipInput, Resource } from '../jsonapi-schemas.js';
import type { TeamAccess } from './team-access.js';

const ACCESS_ATTRIBUTES = {
  access: Attr.string('"read", "plan", "write", "admin" or "custom"'),
  runs: Attr.string(),
  variables: Attr.string(),
  'state-versions': Attr.string(),
  'sentinel-mocks': Attr.string(),
  'workspace-locking': Attr.boolean(),
  'run-tasks': Attr.boolean(),
};

/** The body of PATCH /team-workspaces/:id. */
export const TeamAccessBody = JsonApiBody({ types: ['team-workspaces'], attributes: ACCESS_ATTRIBUTES });
export type TeamAccessBody = Static<typeof TeamAccessBody>;

const TEAM_REQUIRED = 'relationships.team is required';
/** The body of POST /team-workspaces: the access, the team and the workspace. */
export const TeamAccessCreateBody = JsonApiBody({
  types: ['team-workspaces'],
  attributes: ACCESS_ATTRIBUTES,
  relationships: {
    team: RelationshipInput('team', { required: TEAM_REQUIRED }),
    workspace: RelationshipInput('workspace', { required: 'relationships.workspace is required' }),
  },
  relationshipsRequired: { message: TEAM_REQUIRED, pointer: '/data/relationships/team' },
});

const TeamAccess = Resource(
  'team-workspaces',
  {
    access: Type.String(),
    runs: Type.String(),
    variables: Type.String(),
    'state-versions': Type.String(),
    'sentinel-mocks': Type.String(),
    'workspace-locking': Type.Boolean(),
    'run-tasks': Type.Boolean(),
  },
  'TeamAccess',
);
export const TeamAccessDocument = Document(TeamAccess, 'TeamAccessDocument');
export const TeamAccessListDocument = ListDocument(TeamAccess, 'TeamAccessListDocument');

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
export type TeamAccessCreateBody = Static<typeof TeamAccessCreateBody>;
