import { invalid } from '../../shared/errors.js';
import type { WorkspaceAccess } from '../identity/permissions.js';

/**
 * Workspaces: the unit that owns state versions and the state lock. Pure types and
 * rules only. See reference sections 7.2–7.4.
 */

/** Who holds a workspace lock. Locks are held by users or teams (runs do not exist here). */
export interface LockHolder {
  kind: 'user' | 'team';
  /** `user-…` or `team-…` */
  id: string;
}

export interface Workspace {
  /** `ws-…` */
  id: string;
  /** Organization name (the org's id in the API). */
  organization: string;
  /** Organization external id (`org-…`), stable across renames. */
  organizationId: string;
  /** `prj-…`: the project the workspace belongs to. */
  projectId: string;
  name: string;
  description: string | null;
  /** Always 'local': this server stores state and offers no remote runs. */
  executionMode: 'local';
  terraformVersion: string;
  autoApply: boolean;
  allowDestroyPlan: boolean;
  fileTriggersEnabled: boolean;
  queueAllRuns: boolean;
  speculativeEnabled: boolean;
  globalRemoteState: boolean;
  assessmentsEnabled: boolean;
  workingDirectory: string;
  triggerPrefixes: string[];
  triggerPatterns: string[];
  tagNames: string[];
  sourceName: string | null;
  sourceUrl: string | null;
  locked: boolean;
  lockedBy: LockHolder | null;
  lockedReason: string | null;
  lockedAt: Date | null;
  /** From the state versions module (WorkspaceService.setStateVersionHooks); null without one. */
  currentStateVersionId: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** Attributes a client may set on create or update (undefined = leave as is / default). */
export interface WorkspaceInput {
  name?: string;
  description?: string | null;
  executionMode?: string;
  operations?: boolean;
  terraformVersion?: string;
  autoApply?: boolean;
  allowDestroyPlan?: boolean;
  fileTriggersEnabled?: boolean;
  queueAllRuns?: boolean;
  speculativeEnabled?: boolean;
  globalRemoteState?: boolean;
  assessmentsEnabled?: boolean;
  workingDirectory?: string | null;
  triggerPrefixes?: string[];
  triggerPatterns?: string[];
  tagNames?: string[];
  sourceName?: string | null;
  sourceUrl?: string | null;
  /** `relationships.project`: create in, or move to, this project (create: the default project when absent). */
  projectId?: string;
}

/**
 * What a caller needs on a workspace. The state levels follow HCP's custom
 * "state versions" permission; 'lock' is HCP's workspace-locking; 'admin' covers
 * settings, force-unlock and delete.
 */
export type WorkspaceNeed =
  | 'read'
  | 'read-state-outputs'
  | 'read-state-versions'
  | 'read-and-write-state-versions'
  | 'lock'
  | 'admin'
  | 'organization-owner';

/** The `permissions` object of the workspace document, computed for one caller. */
export interface WorkspacePermissions {
  canUpdate: boolean;
  canDestroy: boolean;
  canQueueRun: boolean;
  canReadRun: boolean;
  canReadVariable: boolean;
  canUpdateVariable: boolean;
  canReadStateVersions: boolean;
  canReadStateOutputs: boolean;
  canCreateStateVersions: boolean;
  canQueueApply: boolean;
  canQueueDestroy: boolean;
  canLock: boolean;
  canUnlock: boolean;
  canForceUnlock: boolean;
  canReadSettings: boolean;
  canManageTags: boolean;
  canManageRunTasks: boolean;
  canForceDelete: boolean;
  canManageAssessments: boolean;
  canReadAssessmentResults: boolean;
  canManageEphemeralWorkspaces: boolean;
}

/** A workspace with the caller's permissions, as the API shows it. */
export interface WorkspaceView {
  workspace: Workspace;
  permissions: WorkspacePermissions;
}

/** Workspace names: letters, digits, `-` and `_` (reference 1.6), at most 90 characters. */
export function isValidWorkspaceName(name: string): boolean {
  return /^[A-Za-z0-9_-]{1,90}$/.test(name);
}

/** Workspace tags: letters, digits, `:`, `-` and `_` (HCP's flat tags), at most 255 characters. */
export function isValidTagName(tag: string): boolean {
  return /^[A-Za-z0-9][A-Za-z0-9:_-]{0,254}$/.test(tag);
}

/** Terraform versions: `latest`, a version, or a constraint such as `~> 1.5`. */
export function isValidTerraformVersion(v: string): boolean {
  return v === 'latest' || (/^[0-9A-Za-z.+\-~><=!, ]{1,64}$/.test(v) && /\d/.test(v));
}

/**
 * Checks create/update attributes. Only local execution is offered: this server stores
 * state and runs nothing, so any other execution mode (or `operations: true`) is refused.
 */
export function checkWorkspaceInput(input: WorkspaceInput): void {
  if (input.name !== undefined && !isValidWorkspaceName(input.name)) {
    throw invalid(
      'name may contain only letters, digits, "-" and "_" (at most 90 characters)',
      '/data/attributes/name',
    );
  }
  if (input.executionMode !== undefined && input.operations !== undefined) {
    throw invalid('operations is deprecated and cannot be combined with execution-mode', '/data/attributes/operations');
  }
  if (input.executionMode !== undefined && input.executionMode !== 'local') {
    throw invalid(
      `execution-mode "${input.executionMode}" is not available: this server stores state only and does not ` +
        `offer remote runs; use "local"`,
      '/data/attributes/execution-mode',
    );
  }
  if (input.operations === true) {
    throw invalid(
      'operations cannot be enabled: this server stores state only and does not offer remote runs',
      '/data/attributes/operations',
    );
  }
  if (input.terraformVersion !== undefined && !isValidTerraformVersion(input.terraformVersion)) {
    throw invalid(
      `terraform-version "${input.terraformVersion}" is not a version or version constraint`,
      '/data/attributes/terraform-version',
    );
  }
  if (input.tagNames !== undefined) {
    const bad = input.tagNames.findIndex((t) => !isValidTagName(t));
    if (bad >= 0)
      throw invalid(
        `tag "${input.tagNames[bad]}" may contain only letters, digits, ":", "-" and "_"`,
        '/data/attributes/tag-names',
      );
  }
  if (input.description !== undefined && input.description !== null && input.description.length > 10_000) {
    throw invalid('description is too long', '/data/attributes/description');
  }
}

/** The document's `permissions` flags for an access level. No runs exist, so run flags are false. */
export function permissionsFor(a: WorkspaceAccess): WorkspacePermissions {
  return {
    canUpdate: a.admin,
    canDestroy: a.admin,
    canQueueRun: false,
    canReadRun: a.read,
    canReadVariable: false,
    canUpdateVariable: false,
    canReadStateVersions: a.readStateVersions,
    canReadStateOutputs: a.readStateOutputs,
    canCreateStateVersions: a.writeStateVersions,
    canQueueApply: false,
    canQueueDestroy: false,
    canLock: a.lock,
    canUnlock: a.lock,
    canForceUnlock: a.admin,
    canReadSettings: a.admin,
    canManageTags: a.admin,
    canManageRunTasks: false,
    canForceDelete: a.admin,
    canManageAssessments: false,
    canReadAssessmentResults: a.read,
    canManageEphemeralWorkspaces: false,
  };
}
