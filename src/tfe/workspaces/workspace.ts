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
}

/**
 * What a caller needs on a workspace. The state levels follow HCP's custom
 * "state versions" permission; 'lock' is HCP's workspace-locking; 'admin' covers
 * settings, force-unlock and delete.
 */
export type WorkspaceNeed = 'read' | 'read-state-versions' | 'read-and-write-state-versions' | 'lock' | 'admin' | 'organization-owner';

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
