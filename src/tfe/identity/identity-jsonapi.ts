import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';
import { Attr, Document, JsonApiBody, ListDocument, OptionalJsonApiBody, Resource } from '../jsonapi-schemas.js';
import type { AccountDetails } from './identity-service.js';
import type { AuthToken, TeamView, User } from './identity.js';
import { ORGANIZATION_ACCESS_FLAGS, shownOrganizationAccess } from './identity.js';

/**
 * The optional body of the token routes. HCP documents `authentication-token` as the type
 * of the organization and team token bodies and `authentication-tokens` for user tokens;
 * every token endpoint takes either, and no body at all.
 */
export const TokenBody = OptionalJsonApiBody({
  types: ['authentication-token', 'authentication-tokens'],
  attributes: {
    description: Attr.string(),
    'expired-at': Attr.string('ISO-8601 instant; null or absent: never'),
  },
});
export type TokenBody = Static<typeof TokenBody>;

/** The body of POST /organizations/:org/teams and PATCH /teams/:id. */
export const TeamBody = JsonApiBody({
  types: ['teams'],
  attributes: {
    'organization-access': Attr.flags('organization-access', ORGANIZATION_ACCESS_FLAGS),
    name: Attr.string(),
    visibility: Attr.string('"secret" or "organization"'),
  },
});
export type TeamBody = Static<typeof TeamBody>;

/** A `{"data":[{"type","id"}]}` membership body (team users). */
export const UserListBody = Type.Object(
  {
    data: Type.Array(
      Type.Object({
        type: Type.Optional(Type.String()),
        id: Type.String({
          minLength: 1,
          'x-error-type': 'each user needs an "id" (the username)',
          'x-error-value': 'each user needs an "id" (the username)',
          'x-error-required': 'each user needs an "id" (the username)',
        }),
      }),
      { 'x-error-type': '"data" must be an array of users', 'x-error-required': '"data" must be an array of users' },
    ),
  },
  {
    'x-error-type': '"data" must be an array of users',
    'x-error-required': '"data" must be an array of users',
    'x-pointer': '/data',
  },
);

export type UserListBody = Static<typeof UserListBody>;

const nullableInstant = Type.Union([Type.String({ format: 'date-time' }), Type.Null()]);
const UserAttributes = {
  username: Type.String(),
  'is-service-account': Type.Boolean(),
  permissions: Type.Record(Type.String(), Type.Boolean()),
};
export const UserDocument = Document(Resource('users', UserAttributes, 'User'), 'UserDocument');
export const AccountDocument = Document(
  Resource('users', { ...UserAttributes, email: Type.String(), 'is-site-admin': Type.Boolean() }, 'Account'),
  'AccountDocument',
);
const Token = Resource(
  'authentication-tokens',
  {
    'created-at': Type.String({ format: 'date-time' }),
    'last-used-at': nullableInstant,
    description: Type.Union([Type.String(), Type.Null()]),
    'expired-at': nullableInstant,
    token: Type.Optional(Type.String({ description: 'the secret, only in the answer that creates it' })),
  },
  'AuthenticationToken',
);
export const TokenDocument = Document(Token, 'AuthenticationTokenDocument');
export const TokenListDocument = ListDocument(Token, 'AuthenticationTokenListDocument');
const Team = Resource(
  'teams',
  {
    name: Type.String(),
    visibility: Type.String(),
    'users-count': Type.Integer(),
    'organization-access': Type.Record(Type.String(), Type.Boolean()),
    permissions: Type.Record(Type.String(), Type.Boolean()),
  },
  'Team',
);
export const TeamDocument = Document(Team, 'TeamDocument');
export const TeamListDocument = ListDocument(Team, 'TeamListDocument');

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
