import type { AccountDetails } from './identity-service.js';
import type { AuthToken, TeamView, User } from './identity.js';
import { shownOrganizationAccess } from './identity.js';

/** Users, teams and tokens as JSON:API resources (reference 8). */

export function userResource(user: User, opts: { serviceAccount?: boolean } = {}): Record<string, unknown> {
  return {
    id: user.id,
    type: 'users',
    attributes: {
      username: user.username,
      'avatar-url': '',
      'is-service-account': opts.serviceAccount ?? false,
      'auth-method': 'tfe',
      'v2-only': opts.serviceAccount ?? false,
      permissions: {
        'can-create-organizations': user.siteAdmin,
        'can-change-email': false,
        'can-change-username': false,
        'can-manage-user-tokens': !opts.serviceAccount,
      },
    },
    relationships: {},
    links: { self: `/api/v2/users/${user.id}` },
  };
}

export function accountResource(a: AccountDetails): Record<string, unknown> {
  const u = a.user;
  return {
    id: u.id,
    type: 'users',
    attributes: {
      username: u.username,
      email: u.email,
      'unconfirmed-email': null,
      'avatar-url': '',
      'is-service-account': a.serviceAccount,
      'auth-method': 'tfe',
      'v2-only': a.serviceAccount,
      'is-site-admin': u.siteAdmin,
      'is-sso-login': false,
      'two-factor': { enabled: false, verified: false },
      permissions: {
        'can-create-organizations': u.siteAdmin,
        'can-change-email': false,
        'can-change-username': false,
        'can-manage-user-tokens': !a.serviceAccount,
        'can-view-2fa-settings': false,
      },
    },
    relationships: { 'authenticated-resource': { data: a.authenticatedResource } },
    links: { self: `/api/v2/users/${u.id}` },
  };
}

/** A token document; `secret` only in the create response. */
export function tokenResource(t: AuthToken, secret?: string): Record<string, unknown> {
  const attributes: Record<string, unknown> = {
    'created-at': t.createdAt.toISOString(),
    'last-used-at': t.lastUsedAt ? t.lastUsedAt.toISOString() : null,
    description: t.description,
    'expired-at': t.expiredAt ? t.expiredAt.toISOString() : null,
  };
  if (secret !== undefined) attributes.token = secret;
  return {
    id: t.id,
    type: 'authentication-tokens',
    attributes,
    relationships: {
      'created-by': { data: t.createdById ? { id: t.createdById, type: 'users' } : null },
      ...(t.teamId ? { team: { data: { id: t.teamId, type: 'teams' } } } : {}),
    },
  };
}

/** A team document with the caller's permissions on it (teams API). */
export function teamResource(view: TeamView): Record<string, unknown> {
  const t = view.team;
  const p = view.permissions;
  return {
    id: t.id,
    type: 'teams',
    attributes: {
      name: t.name,
      visibility: t.visibility,
      'users-count': t.usersCount,
      'is-unified': false,
      'sso-team-id': null,
      'allow-member-token-management': true,
      'organization-access': shownOrganizationAccess(t.organizationAccess),
      permissions: {
        'can-update-membership': p.updateMembership,
        'can-destroy': p.destroy,
        'can-update-organization-access': p.updateOrganizationAccess,
        'can-update-api-token': p.updateApiToken,
        'can-update-visibility': p.updateVisibility,
        'can-update-name': p.updateName,
      },
    },
    relationships: {
      organization: { data: { id: t.organization, type: 'organizations' } },
      'authentication-token': { links: { related: `/api/v2/teams/${t.id}/authentication-token` } },
    },
    links: { self: `/api/v2/teams/${t.id}` },
  };
}
