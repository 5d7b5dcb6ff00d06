/**
 * Projects: groups of workspaces inside an organization
 * (https://developer.hashicorp.com/terraform/cloud-docs/api-docs/projects). Every
 * organization has a default project, where workspaces go unless told otherwise; it
 * cannot be deleted, and no project can while it holds workspaces. Pure types and rules.
 */
import { invalid } from '../../shared/errors.js';
import type { OrganizationAccess } from '../identity/permissions.js';

/** The name HCP Terraform gives an organization's first project. */
export const DEFAULT_PROJECT_NAME = 'Default Project';

export interface Project {
  /** `prj-…` */
  id: string;
  organizationId: string;
  /** Organization name. */
  organization: string;
  name: string;
  description: string | null;
  /** The organization's default project. */
  isDefault: boolean;
  /** Workspaces in the project (all of them, whoever asks). */
  workspaceCount: number;
  createdAt: Date;
  updatedAt: Date;
}

export interface ProjectInput {
  name?: string;
  description?: string | null;
}

/** The `permissions` of a project document, for one caller. */
export interface ProjectPermissions {
  canRead: boolean;
  canUpdate: boolean;
  canDestroy: boolean;
  canCreateWorkspace: boolean;
  canMoveWorkspace: boolean;
}

export interface ProjectView {
  project: Project;
  permissions: ProjectPermissions;
}

/**
 * HCP's rule: letters, digits, spaces, `-` and `_`, 3 to 40 characters, not starting or
 * ending with a space. Names are unique within an organization, ignoring case.
 */
export function isValidProjectName(name: string): boolean {
  return /^[A-Za-z0-9_-]([A-Za-z0-9 _-]{1,38})[A-Za-z0-9_-]$/.test(name);
}

export const MAX_PROJECT_DESCRIPTION = 256;

/** Checks create or update attributes; `name` is required on create. */
export function checkProjectInput(input: ProjectInput, creating: boolean): void {
  if (input.name === undefined) {
    if (creating) throw invalid('name is required', '/data/attributes/name');
  } else if (!isValidProjectName(input.name)) {
    throw invalid(
      'name must be 3 to 40 letters, digits, spaces, "-" or "_", and cannot start or end with a space',
      '/data/attributes/name',
    );
  }
  if (typeof input.description === 'string' && input.description.length > MAX_PROJECT_DESCRIPTION) {
    throw invalid(`description must be at most ${MAX_PROJECT_DESCRIPTION} characters`, '/data/attributes/description');
  }
}

/**
 * What the caller may do with a project. Team access to projects (`team-projects`) is not
 * offered, so these follow the caller's organization access: who manages projects may
 * change them, and who may create workspaces may create them in (or move them to) any
 * project they see.
 */
export function projectPermissions(org: OrganizationAccess, project: Pick<Project, 'isDefault'>): ProjectPermissions {
  return {
    canRead: true,
    canUpdate: org.manageProjects,
    canDestroy: org.manageProjects && !project.isDefault,
    canCreateWorkspace: org.createWorkspace,
    canMoveWorkspace: org.createWorkspace,
  };
}

/** `filter[names]`: comma-separated names, matched ignoring case; empty entries are ignored. */
export function parseNamesFilter(raw: unknown): string[] | undefined {
  if (raw === undefined || raw === '') return undefined;
  const text = Array.isArray(raw) ? raw.join(',') : String(raw);
  const names = text
    .split(',')
    .map((n) => n.trim())
    .filter((n) => n !== '');
  return names.length > 0 ? names : undefined;
}

/** `sort`: `name` or `-name`; absent means by name. */
export function parseProjectSort(raw: unknown): 'asc' | 'desc' {
  if (raw === undefined || raw === '' || raw === 'name') return 'asc';
  if (raw === '-name') return 'desc';
  throw invalid('sort must be "name" or "-name"', '/query/sort');
}

/** A `relationships.project.data.type` must be `projects` (an empty one is accepted, as go-tfe sends it). */
export function checkProjectType(type: string): void {
  if (type !== '' && type !== 'projects')
    throw invalid('relationships.project.data.type must be "projects"', '/data/relationships/project/data/type');
}
