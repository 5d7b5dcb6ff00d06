import type { Actor } from '../identity/actor.js';

/**
 * The state service's audit events: which requests are recorded (every write and every
 * read of state or outputs, token and team changes), what each is called, and HCP's
 * audit-trail document.
 * https://developer.hashicorp.com/terraform/cloud-docs/api-docs/audit-trails
 */

/** What a recorded route is about, found from one of its parameters before the handler runs. */
export type SubjectKind =
  | 'workspace'
  | 'state-version'
  | 'state-version-output'
  | 'team'
  | 'token'
  | 'organization'
  | 'team-workspace'
  | 'user'
  | 'query-organization'
  | 'body-workspace'
  /** The handler names the state version (`request.tfeAuditStateVersion`), as the upload URL does. */
  | 'set-by-handler';

export interface RouteAudit {
  action: string;
  resourceType: string;
  subject: SubjectKind;
  /** The route parameter naming the subject (or query parameter for `query-organization`). */
  param: string;
}

const r = (action: string, resourceType: string, subject: SubjectKind, param = 'id'): RouteAudit => ({
  action,
  resourceType,
  subject,
  param,
});

/** Recorded routes by `METHOD url` (url as registered, without the /api/v2 prefix). */
export const AUDITED_ROUTES: Readonly<Record<string, RouteAudit>> = {
  'POST /workspaces/:workspaceId/state-versions': r('create', 'state_version', 'workspace', 'workspaceId'),
  'PATCH /workspaces/:workspaceId/state-versions': r('rollback', 'state_version', 'workspace', 'workspaceId'),
  'GET /workspaces/:workspaceId/current-state-version': r('read', 'state_version', 'workspace', 'workspaceId'),
  'GET /workspaces/:workspaceId/current-state-version-outputs': r(
    'read',
    'state_version_output',
    'workspace',
    'workspaceId',
  ),
  'GET /state-versions': r('list', 'state_version', 'query-organization', 'filter[organization][name]'),
  'GET /state-versions/:id': r('read', 'state_version', 'state-version'),
  'GET /state-versions/:id/download': r('download', 'state_version', 'state-version'),
  'GET /state-versions/:id/json-download': r('download_json', 'state_version', 'state-version'),
  'GET /state-versions/:id/diff': r('read_diff', 'state_version', 'state-version'),
  'GET /state-versions/:id/outputs': r('read', 'state_version_output', 'state-version'),
  'POST /state-versions/:id/actions/:action': r(':action', 'state_version', 'state-version'),
  'GET /state-version-outputs/:id': r('read', 'state_version_output', 'state-version-output'),
  'PUT /v1/object/:token': r('upload', 'state_version', 'set-by-handler', 'token'),
  'POST /workspaces/:id/actions/lock': r('lock', 'workspace', 'workspace'),
  'POST /workspaces/:id/actions/unlock': r('unlock', 'workspace', 'workspace'),
  'POST /workspaces/:id/actions/force-unlock': r('force_unlock', 'workspace', 'workspace'),
  'POST /users/:id/authentication-tokens': r('create', 'authentication_token', 'user'),
  'DELETE /authentication-tokens/:id': r('destroy', 'authentication_token', 'token'),
  'POST /teams/:id/authentication-token': r('create', 'authentication_token', 'team'),
  'POST /teams/:id/authentication-tokens': r('create', 'authentication_token', 'team'),
  'DELETE /teams/:id/authentication-token': r('destroy', 'authentication_token', 'team'),
  'POST /organizations/:org/authentication-token': r('create', 'authentication_token', 'organization', 'org'),
  'DELETE /organizations/:org/authentication-token': r('destroy', 'authentication_token', 'organization', 'org'),
  'POST /organizations/:org/teams': r('create', 'team', 'organization', 'org'),
  'PATCH /teams/:id': r('update', 'team', 'team'),
  'DELETE /teams/:id': r('destroy', 'team', 'team'),
  'POST /teams/:id/relationships/users': r('add_members', 'team', 'team'),
  'DELETE /teams/:id/relationships/users': r('remove_members', 'team', 'team'),
  'POST /team-workspaces': r('create', 'team_workspace', 'body-workspace'),
  'PATCH /team-workspaces/:id': r('update', 'team_workspace', 'team-workspace'),
  'DELETE /team-workspaces/:id': r('destroy', 'team_workspace', 'team-workspace'),
};

/** Where a request's subject lives: its organization, workspace and resource. */
export interface AuditSubject {
  organizationId: string;
  organization: string;
  workspaceId: string | null;
  resourceId: string | null;
}

/** One recorded event. */
export interface AuditEvent {
  id: string;
  timestamp: Date;
  organizationId: string;
  organization: string;
  workspaceId: string | null;
  actorType: 'user' | 'team' | 'organization' | 'upload-url';
  actorId: string;
  actorDescription: string;
  /** The token's id (`at-…`), never the token. */
  tokenId: string | null;
  action: string;
  resourceType: string;
  resourceId: string | null;
  /** `pending` only in the entry written to the audit devices before the request runs. */
  outcome: 'success' | 'failure' | 'pending';
  status: number;
  sourceIp: string;
  requestId: string;
}

export function actorFields(
  actor: Actor | null,
): Pick<AuditEvent, 'actorType' | 'actorId' | 'actorDescription' | 'tokenId'> {
  if (!actor) return { actorType: 'upload-url', actorId: '', actorDescription: 'upload URL', tokenId: null };
  switch (actor.kind) {
    case 'user':
      return { actorType: 'user', actorId: actor.userId, actorDescription: actor.username, tokenId: actor.tokenId };
    case 'team':
      return { actorType: 'team', actorId: actor.teamId, actorDescription: actor.teamName, tokenId: actor.tokenId };
    case 'organization':
      return {
        actorType: 'organization',
        actorId: actor.organizationId,
        actorDescription: actor.organization,
        tokenId: actor.tokenId,
      };
  }
}

/** The action recorded for a route: `:action` stands for the route's own action parameter. */
export function actionOf(route: RouteAudit, params: Record<string, string | undefined>): string {
  return route.action === ':action' ? (params['action'] ?? 'action') : route.action;
}

/** HCP's audit-trail entry; what HCP does not name (workspace, outcome, source IP, token id) is in `resource.meta`. */
export function hcpAuditEntry(e: AuditEvent): Record<string, unknown> {
  return {
    id: e.id,
    version: '0',
    type: 'Resource',
    timestamp: e.timestamp.toISOString(),
    auth: {
      accessor_id: e.actorId,
      description: e.actorDescription,
      type: e.actorType === 'upload-url' ? 'Unauthenticated' : 'Client',
      impersonator_id: null,
      organization_id: e.organizationId,
    },
    request: { id: e.requestId },
    resource: {
      id: e.resourceId,
      type: e.resourceType,
      action: e.action,
      meta: {
        workspace_id: e.workspaceId,
        organization: e.organization,
        actor_type: e.actorType,
        token_id: e.tokenId,
        outcome: e.outcome,
        status_code: e.status,
        source_ip: e.sourceIp,
      },
    },
  };
}
