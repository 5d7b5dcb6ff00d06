import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';
import {
  Attr,
  Document,
  JsonApiBody,
  ListDocument,
  OptionalJsonApiBody,
  RelationshipInput,
  Resource,
  TagsRelationshipInput,
} from '../jsonapi-schemas.js';
import type { WorkspacePermissions, WorkspaceView } from './workspace.js';

/** The body of POST /organizations/:org/workspaces and the PATCH routes. */
export const WorkspaceBody = JsonApiBody({
  types: ['workspaces'],
  attributes: {
    name: Attr.string(),
    description: Attr.string('null clears it'),
    'execution-mode': Attr.string('"local" (the only mode this server runs)'),
    operations: Attr.boolean(),
    'terraform-version': Attr.string(),
    'auto-apply': Attr.boolean(),
    'allow-destroy-plan': Attr.boolean(),
    'file-triggers-enabled': Attr.boolean(),
    'queue-all-runs': Attr.boolean(),
    'speculative-enabled': Attr.boolean(),
    'global-remote-state': Attr.boolean(),
    'assessments-enabled': Attr.boolean(),
    'working-directory': Attr.string('null clears it'),
    'trigger-prefixes': Attr.stringArray(),
    'trigger-patterns': Attr.stringArray(),
    'tag-names': Attr.stringArray(),
    'source-name': Attr.string('null clears it'),
    'source-url': Attr.string('null clears it'),
  },
  relationships: { tags: TagsRelationshipInput(), project: RelationshipInput('project') },
});
export type WorkspaceBody = Static<typeof WorkspaceBody>;

/** The optional body of the lock action: a document, its bare attributes, or nothing. */
export const LockBody = OptionalJsonApiBody({ types: ['workspaces'], attributes: { reason: Attr.string() } });

const Workspace = Resource(
  'workspaces',
  {
    name: Type.String(),
    description: Type.Union([Type.String(), Type.Null()]),
    'execution-mode': Type.String(),
    'terraform-version': Type.Union([Type.String(), Type.Null()]),
    locked: Type.Boolean(),
    'locked-reason': Type.Union([Type.String(), Type.Null()]),
    'working-directory': Type.Union([Type.String(), Type.Null()]),
    'tag-names': Type.Array(Type.String()),
    'created-at': Type.String({ format: 'date-time' }),
    'updated-at': Type.String({ format: 'date-time' }),
    permissions: Type.Record(Type.String(), Type.Boolean()),
  },
  'Workspace',
);
export const WorkspaceDocument = Document(Workspace, 'WorkspaceDocument');
export const WorkspaceListDocument = ListDocument(Workspace, 'WorkspaceListDocument');
export const TagListDocument = Type.Object(
  {
    data: Type.Array(
      Type.Object({ id: Type.String(), type: Type.Literal('tags'), attributes: Type.Object({ name: Type.String() }) }),
    ),
  },
  { title: 'TagListDocument' },
);

/**
 * `permissions` as the document shows it. `can-force-delete` is left out on purpose: its presence switches the CLI to
 * safe-delete, which this server does not offer.
 */
function permissionsDocument(p: WorkspacePermissions): Record<string, boolean> {
  return {
    'can-update': p.canUpdate,
    'can-destroy': p.canDestroy,
    'can-queue-run': p.canQueueRun,
    'can-read-run': p.canReadRun,
    'can-read-variable': p.canReadVariable,
    'can-update-variable': p.canUpdateVariable,
    'can-read-state-versions': p.canReadStateVersions,
    'can-read-state-outputs': p.canReadStateOutputs,
    'can-create-state-versions': p.canCreateStateVersions,
    'can-queue-apply': p.canQueueApply,
    'can-queue-destroy': p.canQueueDestroy,
    'can-lock': p.canLock,
    'can-unlock': p.canUnlock,
    'can-force-unlock': p.canForceUnlock,
    'can-read-settings': p.canReadSettings,
    'can-manage-tags': p.canManageTags,
    'can-manage-run-tasks': p.canManageRunTasks,
    'can-manage-assessments': p.canManageAssessments,
    'can-read-assessment-results': p.canReadAssessmentResults,
    'can-manage-ephemeral-workspaces': p.canManageEphemeralWorkspaces,
  };
}

/** The workspace document (reference 7.3). */
export function workspaceResource(view: WorkspaceView): Record<string, unknown> {
  const w = view.workspace;
  const org = encodeURIComponent(w.organization);
  const self = `/api/v2/organizations/${org}/workspaces/${encodeURIComponent(w.name)}`;
  const byId = `/api/v2/workspaces/${w.id}`;
  return {
    id: w.id,
    type: 'workspaces',
    attributes: {
      name: w.name,
      description: w.description,
      environment: 'default',
      'execution-mode': w.executionMode,
      operations: false,
      'terraform-version': w.terraformVersion,
      locked: w.locked,
      'locked-reason': w.lockedReason,
      'auto-apply': w.autoApply,
      'auto-apply-run-trigger': false,
      'allow-destroy-plan': w.allowDestroyPlan,
      'file-triggers-enabled': w.fileTriggersEnabled,
      'queue-all-runs': w.queueAllRuns,
      'speculative-enabled': w.speculativeEnabled,
      'global-remote-state': w.globalRemoteState,
      'assessments-enabled': w.assessmentsEnabled,
      'structured-run-output-enabled': true,
      'working-directory': w.workingDirectory,
      'trigger-prefixes': w.triggerPrefixes,
      'trigger-patterns': w.triggerPatterns,
      'tag-names': w.tagNames,
      'vcs-repo': null,
      'vcs-repo-identifier': null,
      source: 'tfe-api',
      'source-name': w.sourceName,
      'source-url': w.sourceUrl,
      'agent-pool-id': null,
      'auto-destroy-at': null,
      'can-queue-destroy-plan': false,
      'resource-count': 0,
      'latest-change-at': w.updatedAt.toISOString(),
      'created-at': w.createdAt.toISOString(),
      'updated-at': w.updatedAt.toISOString(),
      'setting-overwrites': { 'execution-mode': true, 'agent-pool': false },
      actions: { 'is-destroyable': view.permissions.canDestroy },
      permissions: permissionsDocument(view.permissions),
    },
    relationships: {
      organization: { data: { id: w.organization, type: 'organizations' } },
      'current-state-version': {
        data: w.currentStateVersionId ? { id: w.currentStateVersionId, type: 'state-versions' } : null,
        links: { related: `${byId}/current-state-version` },
      },
      'locked-by': {
        data: w.lockedBy ? { id: w.lockedBy.id, type: w.lockedBy.kind === 'user' ? 'users' : 'teams' } : null,
      },
      outputs: { data: [], links: { related: `${byId}/current-state-version-outputs` } },
      'current-run': { data: null },
      'latest-run': { data: null },
      'current-configuration-version': { data: null },
      project: { data: { id: w.projectId, type: 'projects' }, links: { related: `/api/v2/projects/${w.projectId}` } },
      'agent-pool': { data: null },
      'ssh-key': { data: null },
      'remote-state-consumers': { links: { related: `${byId}/relationships/remote-state-consumers` } },
    },
    links: { self, 'self-html': `/app/${org}/workspaces/${encodeURIComponent(w.name)}` },
  };
}
