import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Config } from '../../config.js';
import { DomainError } from '../../shared/errors.js';
import type { Actor } from '../identity/actor.js';
import { requireActor } from '../identity/request-actor.js';
import { BODY_ERRORS, COMMON_ERRORS, NoContent, Params, Query, QueryString } from '../jsonapi-schemas.js';
import { listDocument, pageRequest, query, sendDocument, sendNoContent } from '../route-helpers.js';
import {
  EntitlementSetDocument,
  OrganizationBody,
  OrganizationDocument,
  OrganizationListDocument,
  entitlementSetResource,
  organizationResource,
} from './organization-jsonapi.js';
import type { OrganizationInput, OrganizationView } from './organization.js';
import type { OrganizationService } from './organization-service.js';

function organizationInput(body: OrganizationBody): OrganizationInput {
  const a = body.data.attributes ?? {};
  return {
    name: a.name ?? undefined,
    email: a.email ?? undefined,
    sessionTimeout: a['session-timeout'] ?? undefined,
    sessionRemember: a['session-remember'] ?? undefined,
    collaboratorAuthPolicy: a['collaborator-auth-policy'] ?? undefined,
    costEstimationEnabled: a['cost-estimation-enabled'] ?? undefined,
    allowForceDeleteWorkspaces: a['allow-force-delete-workspaces'] ?? undefined,
  };
}

const tags = ['organizations'];
const ByOrg = Params('org');
const IncludeQuery = QueryString({ include: Query.include(['default-project']) });

/** The `include` values that add something: the default project (go-tfe spells it with a dash). */
const DEFAULT_PROJECT_INCLUDES = ['default-project', 'default_project'];

/**
 * https://developer.hashicorp.com/terraform/cloud-docs/api-docs/organizations (reference 7.1).
 * `defaultProject` renders an organization's default project for `include=default-project`
 * (the projects module comes after this one, so the composition root hands it in); a
 * caller who may not see that project gets no included object. Other include values are
 * accepted and add nothing.
 */
export function registerOrganizationRoutes(
  app: FastifyInstance,
  deps: {
    organizations: OrganizationService;
    config: Config;
    defaultProject?: (actor: Actor, view: OrganizationView) => Promise<Record<string, unknown>>;
  },
): void {
  const { organizations, config } = deps;
  const api = app.withTypeProvider<TypeBoxTypeProvider>();

  async function included(request: FastifyRequest, views: OrganizationView[]): Promise<Record<string, unknown>> {
    const raw = query(request).include;
    const wanted = (Array.isArray(raw) ? raw.join(',') : String(raw ?? '')).split(',').map((v) => v.trim());
    if (!deps.defaultProject || !wanted.some((v) => DEFAULT_PROJECT_INCLUDES.includes(v))) return {};
    const render = deps.defaultProject;
    const actor = requireActor(request);
    const found = await Promise.all(views.map((v) => render(actor, v).catch(hiddenAsUndefined)));
    return { included: found.filter((r): r is Record<string, unknown> => r !== undefined) };
  }

  api.get(
    '/organizations',
    {
      schema: {
        summary: 'List organizations',
        tags,
        querystring: QueryString({ ...Query.page, include: Query.include(['default-project']) }),
        response: { 200: OrganizationListDocument, ...COMMON_ERRORS },
      },
    },
    async (request, reply) => {
      const page = await organizations.list(requireActor(request), pageRequest(request));
      const extra = await included(request, page.items);
      return sendDocument(reply, 200, listDocument(request, config, page, organizationResource, extra));
    },
  );

  api.post(
    '/organizations',
    {
      schema: {
        summary: 'Create an organization',
        tags,
        body: OrganizationBody,
        response: { 201: OrganizationDocument, ...COMMON_ERRORS, ...BODY_ERRORS },
      },
    },
    async (request, reply) => {
      const view = await organizations.create(requireActor(request), organizationInput(request.body));
      request.log.info({ organization: view.organization.name }, 'organization created');
      return sendDocument(reply, 201, { data: organizationResource(view) });
    },
  );

  api.get(
    '/organizations/:org',
    {
      schema: {
        summary: 'Show an organization',
        tags,
        params: ByOrg,
        querystring: IncludeQuery,
        response: { 200: OrganizationDocument, ...COMMON_ERRORS },
      },
    },
    async (request, reply) => {
      const view = await organizations.get(requireActor(request), request.params.org);
      return sendDocument(reply, 200, { data: organizationResource(view), ...(await included(request, [view])) });
    },
  );

  api.patch(
    '/organizations/:org',
    {
      schema: {
        summary: 'Update an organization',
        tags,
        params: ByOrg,
        body: OrganizationBody,
        response: { 200: OrganizationDocument, ...COMMON_ERRORS, ...BODY_ERRORS },
      },
    },
    async (request, reply) => {
      const input = organizationInput(request.body);
      const view = await organizations.update(requireActor(request), request.params.org, input);
      return sendDocument(reply, 200, { data: organizationResource(view) });
    },
  );

  api.delete(
    '/organizations/:org',
    {
      schema: {
        summary: 'Delete an organization',
        tags,
        params: ByOrg,
        response: { 204: NoContent, ...COMMON_ERRORS },
      },
    },
    async (request, reply) => {
      await organizations.delete(requireActor(request), request.params.org);
      request.log.info({ organization: request.params.org }, 'organization deleted');
      return sendNoContent(reply);
    },
  );

  api.get(
    '/organizations/:org/entitlement-set',
    {
      schema: {
        summary: "Show an organization's entitlements",
        tags,
        params: ByOrg,
        response: { 200: EntitlementSetDocument, ...COMMON_ERRORS },
      },
    },
    async (request, reply) => {
      const e = await organizations.entitlements(requireActor(request), request.params.org);
      return sendDocument(reply, 200, { data: entitlementSetResource(e) });
    },
  );
}

function hiddenAsUndefined(err: unknown): undefined {
  if (err instanceof DomainError && (err.kind === 'not_found' || err.kind === 'forbidden')) return undefined;
  throw err;
}
