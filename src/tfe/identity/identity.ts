/**
 * Users, teams and API tokens: domain types and pure rules. See reference 8.
 */
import { randomBase58 } from '../../shared/ids.js';
import type { TeamPermissions } from './permissions.js';

export interface User {
  /** `user-…` */
  id: string;
  username: string;
  email: string;
  siteAdmin: boolean;
  createdAt: Date;
}

export interface Team {
  /** `team-…` */
  id: string;
  organizationId: string;
  /** Organization name. */
  organization: string;
  name: string;
  visibility: 'secret' | 'organization';
  /** Every organization has an `owners` team with full rights. */
  isOwners: boolean;
  /** Every documented organization-access flag as stored (all true for the owners team). */
  organizationAccess: OrganizationAccessFlags;
  usersCount: number;
  createdAt: Date;
}

/** A team with what the caller may do to it, as the API shows it. */
export interface TeamView {
  team: Team;
  permissions: TeamPermissions;
}

/**
 * The organization-access flags HCP documents for teams
 * (https://developer.hashicorp.com/terraform/cloud-docs/api-docs/teams). All are stored
 * and read back; only the workspace and project ones grant anything on this server
 * (permissions.ts), the others name features it does not have.
 */
export const ORGANIZATION_ACCESS_FLAGS = [
  'manage-policies',
  'manage-policy-overrides',
  'manage-workspaces',
  'manage-vcs-settings',
  'manage-providers',
  'manage-modules',
  'manage-run-tasks',
  'manage-projects',
  'read-workspaces',
  'read-projects',
  'manage-membership',
  'manage-teams',
  'manage-organization-access',
  'access-secret-teams',
  'manage-agent-pools',
] as const;

export type OrganizationAccessFlag = (typeof ORGANIZATION_ACCESS_FLAGS)[number];
export type OrganizationAccessFlags = Record<OrganizationAccessFlag, boolean>;

/** The flags the permission rules read; they have columns of their own. */
export const RULE_ACCESS_FLAGS = ['manage-workspaces', 'read-workspaces', 'manage-projects', 'read-projects'] as const;

/** Every flag at one value (false for a new team, true for the owners team). */
export function organizationAccessOf(value: boolean): OrganizationAccessFlags {
  return Object.fromEntries(ORGANIZATION_ACCESS_FLAGS.map((f) => [f, value])) as OrganizationAccessFlags;
}

/**
 * The flags as a team document shows them: a manage flag implies the matching read flag
 * (managing every workspace or project includes seeing them).
 */
export function shownOrganizationAccess(flags: OrganizationAccessFlags): OrganizationAccessFlags {
  return {
    ...flags,
    'read-workspaces': flags['read-workspaces'] || flags['manage-workspaces'],
    'read-projects': flags['read-projects'] || flags['manage-projects'],
  };
}

export type TokenKind = 'user' | 'team' | 'organization';

/** An API token as listed: never the secret, only its metadata. */
export interface AuthToken {
  /** `at-…` */
  id: string;
  kind: TokenKind;
  userId: string | null;
  teamId: string | null;
  organizationId: string | null;
  /** Team legacy token or organization token: one per owner, regenerating replaces it. */
  singleton: boolean;
  description: string | null;
  createdById: string | null;
  createdAt: Date;
  lastUsedAt: Date | null;
  expiredAt: Date | null;
}

/** The create response: the only time the token text is shown. */
export interface CreatedToken {
  token: AuthToken;
  secret: string;
}

const TOKEN_FORMAT = /^[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9]{67}$/;

/** A new token in HCP Terraform's format: 14 alphanumerics, `.atlasv1.`, 67 alphanumerics. */
export function generateTokenSecret(): string {
  return `${randomBase58(14)}.atlasv1.${randomBase58(67)}`;
}

export function looksLikeApiToken(token: string): boolean {
  return TOKEN_FORMAT.test(token);
}

export function isExpired(token: Pick<AuthToken, 'expiredAt'>, now: Date): boolean {
  return token.expiredAt !== null && token.expiredAt.getTime() <= now.getTime();
}

/** Usernames and team names: letters, digits, `-`, `_` and `.`, as HCP allows. */
export function isValidUsername(name: string): boolean {
  return /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/.test(name);
}

export function isValidTeamName(name: string): boolean {
  return /^[A-Za-z0-9][A-Za-z0-9 _.-]{0,99}$/.test(name);
}

/** The user the initial admin token acts as; created on first use. */
export const SITE_ADMIN_USERNAME = 'site-admin';
