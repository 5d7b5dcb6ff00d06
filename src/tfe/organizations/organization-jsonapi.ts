import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';
import { Attr, Document, JsonApiBody, ListDocument, Resource } from '../jsonapi-schemas.js';
import type { Entitlements, OrganizationView } from './organization.js';

/** The body of POST and PATCH /organizations[/:org]. */
export const OrganizationBody = JsonApiBody({
  types: ['organizations'],
  attributes: {
    name: Attr.string('the organization name: letters, digits, "-" and "_"'),
    email: Attr.string('the admin email'),
    'session-timeout': Attr.integer('minutes'),
    'session-remember': Attr.integer('minutes'),
    'collaborator-auth-policy': Attr.string('"password" or "two_factor_mandatory"'),
    'cost-estimation-enabled': Attr.boolean(),
    'allow-force-delete-workspaces': Attr.boolean(),
  },
});
export type OrganizationBody = Static<typeof OrganizationBody>;

const Organization = Resource(
  'organizations',
  {
    name: Type.String(),
    email: Type.String(),
    'external-id': Type.String(),
    'created-at': Type.String({ format: 'date-time' }),
    'session-timeout': Type.Union([Type.Integer(), Type.Null()]),
    'session-remember': Type.Union([Type.Integer(), Type.Null()]),
    'collaborator-auth-policy': Type.String(),
    'cost-estimation-enabled': Type.Boolean(),
    'allow-force-delete-workspaces': Type.Boolean(),
    permissions: Type.Record(Type.String(), Type.Boolean()),
  },
  'Organization',
);
export const OrganizationDocument = Document(Organization, 'OrganizationDocument');
export const OrganizationListDocument = ListDocument(Organization, 'OrganizationListDocument');
export const EntitlementSetDocument = Document(
  Resource('entitlement-sets', {}, 'EntitlementSet'),
  'EntitlementSetDocument',
);

/** Organization documents (reference 7.1). The organization's name is its JSON:API id. */
export function organizationResource(view: OrganizationView): Record<string, unknown> {
  const o = view.organization;
  const p = view.permissions;
  const base = `/api/v2/organizations/${encodeURIComponent(o.name)}`;
  return {
    id: o.name,
    type: 'organizations',
    attributes: {
      name: o.name,
      email: o.email,
      'external-id': o.id,
      'created-at': o.createdAt.toISOString(),
      'session-timeout': o.sessionTimeout,
      'session-remember': o.sessionRemember,
      'collaborator-auth-policy': o.collaboratorAuthPolicy,
      'cost-estimation-enabled': o.costEstimationEnabled,
      'allow-force-delete-workspaces': o.allowForceDeleteWorkspaces,
      'default-execution-mode': 'local',
      'saml-enabled': false,
      'two-factor-conformant': false,
      'assessments-enforced': false,
      'owners-team-saml-role-id': null,
      'plan-expired': false,
      'plan-is-trial': false,
      'plan-is-enterprise': false,
      'trial-expires-at': null,
      'plan-expires-at': null,
      'send-passing-statuses-for-untriggered-speculative-plans': false,
      'aggregated-commit-status-enabled': false,
      'speculative-plan-management-enabled': false,
      permissions: {
        'can-update': p.update,
        'can-destroy': p.destroy,
        'can-access-via-teams': p.read,
        'can-create-team': p.manageTeams,
        'can-create-workspace': p.createWorkspace,
        'can-create-workspace-migration': false,
        'can-create-project': p.manageProjects,
        'can-create-module': false,
        'can-manage-users': p.update,
        'can-manage-subscription': false,
        'can-manage-sso': false,
        'can-manage-tags': p.update,
        'can-manage-varsets': false,
        'can-read-varsets': false,
        'can-manage-run-tasks': false,
        'can-read-run-tasks': false,
        'can-traverse': p.read,
        'can-start-trial': false,
        'can-update-agent-pools': false,
        'can-update-api-token': p.manageOrganizationToken,
        'can-update-oauth': false,
        'can-update-sentinel': false,
        'can-update-ssh-keys': false,
      },
    },
    relationships: {
      'entitlement-set': {
        data: { id: o.id, type: 'entitlement-sets' },
        links: { related: `${base}/entitlement-set` },
      },
      'authentication-token': { links: { related: `${base}/authentication-token` } },
      'oauth-tokens': { links: { related: `${base}/oauth-tokens` } },
      subscription: { links: { related: `${base}/subscription` } },
      'default-project': {
        data: { id: o.defaultProjectId, type: 'projects' },
        links: { related: `/api/v2/projects/${o.defaultProjectId}` },
      },
      'default-agent-pool': { data: null },
    },
    links: { self: base },
  };
}

export function entitlementSetResource(e: Entitlements): Record<string, unknown> {
  return {
    id: e.id,
    type: 'entitlement-sets',
    attributes: { ...e.flags, ...e.limits },
    links: { self: `/api/v2/entitlement-sets/${e.id}` },
  };
}
