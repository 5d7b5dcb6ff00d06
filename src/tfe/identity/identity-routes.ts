import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config.js';
import { invalid } from '../../shared/errors.js';
import { JsonApiInput } from '../jsonapi-input.js';
import { parseInstant, sendDocument, sendNoContent } from '../route-helpers.js';
import type { IdentityService } from './identity-service.js';
import { ORGANIZATION_ACCESS_FLAGS } from './identity.js';
import { accountResource, teamResource, tokenResource, userResource } from './identity-jsonapi.js';
import { requireActor } from './request-actor.js';
import type { TeamInput, TeamService } from './team-service.js';
import type { TokenInput, TokenService } from './token-service.js';

/**
 * HCP documents `authentication-token` as the type of the organization and team token
 * bodies and `authentication-tokens` for user tokens; every token endpoint takes either,
 * and no body at all.
 */
const TOKEN_TYPES = ['authentication-token', 'authentication-tokens'] as const;

function tokenInput(body: unknown): TokenInput {
  const a = JsonApiInput.parse(body, TOKEN_TYPES, { optional: true });
  return {
    description: a.nullableString('description'),
    expiredAt: parseInstant(a.nullableString('expired-at'), '/data/attributes/expired-at'),
  };
}

/** `organization-access`: each documented flag a boolean when present; unknown keys are ignored, as HCP does. */
function teamInput(body: unknown): TeamInput {
  const a = JsonApiInput.parse(body, 'teams');
  const access = a.object('organization-access');
  let organizationAccess: TeamInput['organizationAccess'];
  if (access) {
    organizationAccess = {};
    for (const k of ORGANIZATION_ACCESS_FLAGS) {
      const v = access[k];
      if (v === undefined || v === null) continue;
      if (typeof v !== 'boolean')
        throw invalid(`organization-access.${k} must be a boolean`, `/data/attributes/organization-access/${k}`);
      organizationAccess[k] = v;
    }
  }
  return { name: a.string('name'), visibility: a.string('visibility'), organizationAccess };
}

/** `{"data":[{"type":"users","id":"<username>"}]}` as HCP's team membership endpoints take it. */
function usernames(body: unknown): string[] {
  const data = (body as { data?: unknown } | null)?.data;
  if (!Array.isArray(data)) throw invalid('"data" must be an array of users', '/data');
  return data.map((d: unknown, i) => {
    const id = (d as { id?: unknown } | null)?.id;
    if (typeof id !== 'string' || id === '') throw invalid('each user needs an "id" (the username)', `/data/${i}/id`);
    return id;
  });
}

/**
 * Account, users, teams and API tokens (reference 8):
 * https://developer.hashicorp.com/terraform/cloud-docs/api-docs/account, …/users, …/teams,
 * …/user-tokens, …/team-tokens, …/organization-tokens.
 */
export function registerIdentityRoutes(
  app: FastifyInstance,
  deps: { identity: IdentityService; tokens: TokenService; teams: TeamService; config: Config },
): void {
  const { identity, tokens, teams } = deps;

  app.get('/account/details', async (request, reply) => {
    return sendDocument(reply, 200, { data: accountResource(await identity.accountDetails(requireActor(request))) });
  });

  app.get<{ Params: { id: string } }>('/users/:id', async (request, reply) => {
    return sendDocument(reply, 200, {
      data: userResource(await identity.getUser(requireActor(request), request.params.id)),
    });
  });

  // ---- user tokens
  app.post<{ Params: { id: string } }>('/users/:id/authentication-tokens', async (request, reply) => {
    const created = await tokens.createUserToken(requireActor(request), request.params.id, tokenInput(request.body));
    request.log.info({ tokenId: created.token.id, kind: created.token.kind }, 'api token created');
    return sendDocument(reply, 201, { data: tokenResource(created.token, created.secret) });
  });
  app.get<{ Params: { id: string } }>('/users/:id/authentication-tokens', async (request, reply) => {
    const list = await tokens.listUserTokens(requireActor(request), request.params.id);
    return sendDocument(reply, 200, { data: list.map((t) => tokenResource(t)) });
  });
  app.get<{ Params: { id: string } }>('/authentication-tokens/:id', async (request, reply) => {
    return sendDocument(reply, 200, {
      data: tokenResource(await tokens.getToken(requireActor(request), request.params.id)),
    });
  });
  app.delete<{ Params: { id: string } }>('/authentication-tokens/:id', async (request, reply) => {
    await tokens.deleteToken(requireActor(request), request.params.id);
    return sendNoContent(reply);
  });

  // ---- the team token (one per team; regenerating replaces it)
  app.post<{ Params: { id: string } }>('/teams/:id/authentication-token', async (request, reply) => {
    const created = await tokens.createTeamToken(requireActor(request), request.params.id, tokenInput(request.body));
    request.log.info({ tokenId: created.token.id, kind: created.token.kind }, 'api token created');
    return sendDocument(reply, 201, { data: tokenResource(created.token, created.secret) });
  });
  app.get<{ Params: { id: string } }>('/teams/:id/authentication-token', async (request, reply) => {
    return sendDocument(reply, 200, {
      data: tokenResource(await tokens.getTeamToken(requireActor(request), request.params.id)),
    });
  });
  app.delete<{ Params: { id: string } }>('/teams/:id/authentication-token', async (request, reply) => {
    await tokens.deleteTeamToken(requireActor(request), request.params.id);
    return sendNoContent(reply);
  });

  // ---- described team tokens (many per team)
  app.post<{ Params: { id: string } }>('/teams/:id/authentication-tokens', async (request, reply) => {
    const created = await tokens.createDescribedTeamToken(
      requireActor(request),
      request.params.id,
      tokenInput(request.body),
    );
    request.log.info({ tokenId: created.token.id, kind: created.token.kind }, 'api token created');
    return sendDocument(reply, 201, { data: tokenResource(created.token, created.secret) });
  });
  app.get<{ Params: { org: string } }>('/organizations/:org/team-tokens', async (request, reply) => {
    const list = await tokens.listTeamTokens(requireActor(request), request.params.org);
    return sendDocument(reply, 200, { data: list.map((t) => tokenResource(t)) });
  });

  // ---- the organization token (one per organization)
  app.post<{ Params: { org: string } }>('/organizations/:org/authentication-token', async (request, reply) => {
    const created = await tokens.createOrganizationToken(
      requireActor(request),
      request.params.org,
      tokenInput(request.body),
    );
    request.log.info({ tokenId: created.token.id, kind: created.token.kind }, 'api token created');
    return sendDocument(reply, 201, { data: tokenResource(created.token, created.secret) });
  });
  app.get<{ Params: { org: string } }>('/organizations/:org/authentication-token', async (request, reply) => {
    return sendDocument(reply, 200, {
      data: tokenResource(await tokens.getOrganizationToken(requireActor(request), request.params.org)),
    });
  });
  app.delete<{ Params: { org: string } }>('/organizations/:org/authentication-token', async (request, reply) => {
    await tokens.deleteOrganizationToken(requireActor(request), request.params.org);
    return sendNoContent(reply);
  });

  // ---- teams and membership
  app.get<{ Params: { org: string } }>('/organizations/:org/teams', async (request, reply) => {
    const list = await teams.list(requireActor(request), request.params.org);
    return sendDocument(reply, 200, {
      data: list.map(teamResource),
      meta: {
        pagination: {
          'current-page': 1,
          'page-size': list.length,
          'prev-page': null,
          'next-page': null,
          'total-pages': 1,
          'total-count': list.length,
        },
      },
    });
  });
  app.post<{ Params: { org: string } }>('/organizations/:org/teams', async (request, reply) => {
    const view = await teams.create(requireActor(request), request.params.org, teamInput(request.body));
    return sendDocument(reply, 201, { data: teamResource(view) });
  });
  app.get<{ Params: { id: string } }>('/teams/:id', async (request, reply) => {
    return sendDocument(reply, 200, {
      data: teamResource(await teams.view(requireActor(request), request.params.id)),
    });
  });
  app.patch<{ Params: { id: string } }>('/teams/:id', async (request, reply) => {
    const view = await teams.update(requireActor(request), request.params.id, teamInput(request.body));
    return sendDocument(reply, 200, { data: teamResource(view) });
  });
  app.delete<{ Params: { id: string } }>('/teams/:id', async (request, reply) => {
    await teams.delete(requireActor(request), request.params.id);
    return sendNoContent(reply);
  });
  app.post<{ Params: { id: string } }>('/teams/:id/relationships/users', async (request, reply) => {
    await teams.addMembers(requireActor(request), request.params.id, usernames(request.body));
    return sendNoContent(reply);
  });
  app.delete<{ Params: { id: string } }>('/teams/:id/relationships/users', async (request, reply) => {
    await teams.removeMembers(requireActor(request), request.params.id, usernames(request.body));
    return sendNoContent(reply);
  });
}
