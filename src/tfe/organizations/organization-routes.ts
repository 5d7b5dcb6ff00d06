import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Config } from '../../config.js';
import { DomainError } from '../../shared/errors.js';
import type { Actor } from '../identity/actor.js';
import { requireActor } from '../identity/request-actor.js';
import { JsonApiInput } from '../jsonapi-input.js';
import { listDocument, pageRequest, query, sendDocument, sendNoContent } from '../route-helpers.js';
import { entitlementSetResource, organizationResource } from './organization-jsonapi.js';
import type { OrganizationInput, OrganizationView } from './organization.js';
import type { OrganizationService } from './organization-service.js';

type Params = { org: string };

function organizationInput(body: unknown): OrganizationInput {
  const a = JsonApiInput.parse(body, 'organizations');
  return {
    name: a.string('name'),
    email: a.string('email'),
    sessionTimeout: a.integer('session-timeout'),
    sessionRemember: a.integer('session-remember'),
    collaboratorAuthPolicy: a.string('collaborator-auth-policy'),
    costEstimationEnabled: a.boolean('cost-estimation-enabled'),
    allowForceDeleteWorkspaces: a.boolean('allow-force-delete-workspaces'),
  };
}

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

  async function included(request: FastifyRequest, views: OrganizationView[]): Promise<Record<string, unknown>> {
    const raw = query(request).include;
    const wanted = (Array.isArray(raw) ? raw.join(',') : String(raw ?? '')).split(',').map((v) => v.trim());
    if (!deps.defaultProject || !wanted.some((v) => DEFAULT_PROJECT_INCLUDES.includes(v))) return {};
    const render = deps.defaultProject;
    const actor = requireActor(request);
    const found = await Promise.all(views.map((v) => render(actor, v).catch(hiddenAsUndefined)));
    return { included: found.filter((r): r is Record<string, unknown> => r !== undefined) };
  }

  app.get('/organizations', async (request, reply) => {
    const page = await organizations.list(requireActor(request), pageRequest(request));
    const extra = await included(request, page.items);
    return sendDocument(reply, 200, listDocument(request, config, page, organizationResource, extra));
  });

  app.post('/organizations', async (request, reply) => {
    const view = await organizations.create(requireActor(request), organizationInput(request.body));
    request.log.info({ organization: view.organization.name }, 'organization created');
    return sendDocument(reply, 201, { data: organizationResource(view) });
  });

  app.get<{ Params: Params }>('/organizations/:org', async (request, reply) => {
    const view = await organizations.get(requireActor(request), request.params.org);
    return sendDocument(reply, 200, { data: organizationResource(view), ...(await included(request, [view])) });
  });

  app.patch<{ Params: Params }>('/organizations/:org', async (request, reply) => {
    const view = await organizations.update(requireActor(request), request.params.org, organizationInput(request.body));
    return sendDocument(reply, 200, { data: organizationResource(view) });
  });

  app.delete<{ Params: Params }>('/organizations/:org', async (request, reply) => {
    await organizations.delete(requireActor(request), request.params.org);
    request.log.info({ organization: request.params.org }, 'organization deleted');
    return sendNoContent(reply);
  });

  app.get<{ Params: Params }>('/organizations/:org/entitlement-set', async (request, reply) => {
    const e = await organizations.entitlements(requireActor(request), request.params.org);
    return sendDocument(reply, 200, { data: entitlementSetResource(e) });
  });
}

function hiddenAsUndefined(err: unknown): undefined {
  if (err instanceof DomainError && (err.kind === 'not_found' || err.kind === 'forbidden')) return undefined;
  throw err;
}
