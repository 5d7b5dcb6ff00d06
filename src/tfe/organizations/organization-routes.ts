import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config.js';
import { requireActor } from '../identity/request-actor.js';
import { JsonApiInput } from '../jsonapi-input.js';
import { listDocument, pageRequest, sendDocument, sendNoContent } from '../route-helpers.js';
import { entitlementSetResource, organizationResource } from './organization-jsonapi.js';
import type { OrganizationInput } from './organization.js';
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

/** https://developer.hashicorp.com/terraform/cloud-docs/api-docs/organizations (reference 7.1). */
export function registerOrganizationRoutes(
  app: FastifyInstance,
  deps: { organizations: OrganizationService; config: Config },
): void {
  const { organizations, config } = deps;

  app.get('/organizations', async (request, reply) => {
    const page = await organizations.list(requireActor(request), pageRequest(request));
    return sendDocument(reply, 200, listDocument(request, config, page, organizationResource));
  });

  app.post('/organizations', async (request, reply) => {
    const view = await organizations.create(requireActor(request), organizationInput(request.body));
    request.log.info({ organization: view.organization.name }, 'organization created');
    return sendDocument(reply, 201, { data: organizationResource(view) });
  });

  app.get<{ Params: Params }>('/organizations/:org', async (request, reply) => {
    const view = await organizations.get(requireActor(request), request.params.org);
    return sendDocument(reply, 200, { data: organizationResource(view) });
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
