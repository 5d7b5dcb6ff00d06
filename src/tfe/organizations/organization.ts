/**
 * Organizations: domain types and pure rules. Addressed by name in the API; the
 * `external-id` (`org-…`) is the stable key. See reference 7.1.
 */
import type { OrganizationAccess } from '../identity/permissions.js';

export interface Organization {
  /** `org-…` (the API's `external-id`). */
  id: string;
  name: string;
  email: string;
  sessionTimeout: number | null;
  sessionRemember: number | null;
  collaboratorAuthPolicy: 'password' | 'two_factor_mandatory';
  costEstimationEnabled: boolean;
  allowForceDeleteWorkspaces: boolean;
  /** `prj-…`: the project new workspaces go to unless told otherwise; it cannot be deleted. */
  defaultProjectId: string;
  createdAt: Date;
  updatedAt: Date;
}

export interface OrganizationInput {
  name?: string;
  email?: string;
  sessionTimeout?: number | null;
  sessionRemember?: number | null;
  collaboratorAuthPolicy?: string;
  costEstimationEnabled?: boolean;
  allowForceDeleteWorkspaces?: boolean;
}

export interface OrganizationView {
  organization: Organization;
  permissions: OrganizationAccess;
}

/**
 * What the organization is entitled to. This server stores state only: remote
 * operations are off, so Terraform always runs locally (reference 3, 7.1).
 */
export interface Entitlements {
  id: string;
  flags: Record<string, boolean>;
  limits: Record<string, number | null>;
}

export function entitlementsFor(org: Organization): Entitlements {
  const flags: Record<string, boolean> = {
    'state-storage': true,
    teams: true,
    operations: false,
    agents: false,
    'audit-logging': false,
    'cost-estimation': false,
    'global-run-tasks': false,
    'private-module-registry': false,
    'private-run-tasks': false,
    'run-tasks': false,
    sso: false,
    sentinel: false,
    'policy-enforcement': false,
    'vcs-integrations': false,
    'configuration-designer': false,
    'self-serve-billing': false,
    'usage-reporting': false,
    'private-policy-agents': false,
    'private-vcs': false,
  };
  const limits: Record<string, number | null> = {
    'user-limit': null,
    'policy-limit': null,
    'policy-set-limit': null,
    'run-task-limit': null,
    'run-task-workspace-limit': null,
    'run-task-mandatory-enforcement-limit': null,
    'versioned-policy-set-limit': null,
    'policy-mandatory-enforcement-limit': null,
  };
  return { id: org.id, flags, limits };
}

/** Organization names: letters, digits, `-` and `_` (reference 1.6). */
export function isValidOrganizationName(name: string): boolean {
  return /^[A-Za-z0-9_-]{1,90}$/.test(name);
}

export function isValidEmail(email: string): boolean {
  return /^[^\s@]+@[^\s@]+$/.test(email);
}

export const COLLABORATOR_AUTH_POLICIES = ['password', 'two_factor_mandatory'] as const;
