/**
 * Users, teams and API tokens: domain types and pure rules. See reference 8.
 */
import { randomBase58 } from '../../shared/ids.js';

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
  manageWorkspaces: boolean;
  readWorkspaces: boolean;
  usersCount: number;
  createdAt: Date;
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
