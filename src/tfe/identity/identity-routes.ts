import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { TSchema } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../../config.js';
import { BODY_ERRORS, COMMON_ERRORS, NoContent, Params, optionalAttributes } from '../jsonapi-schemas.js';
import { onePage, parseInstant, sendDocument, sendNoContent } from '../route-helpers.js';
import type { IdentityService } from './identity-service.js';
import { ORGANIZATION_ACCESS_FLAGS } from './identity.js';
import type { AuthToken } from './identity.js';
import {
  AccountDocument,
  TeamBody,
  TeamDocument,
  TeamListDocument,
  TokenBody,
  TokenDocument,
  TokenListDocument,
  UserDocument,
  UserListBody,
  accountResource,
  teamResource,
  tokenResource,
  userResource,
} from './identity-jsonapi.js';
import { requireActor } from './request-actor.js';
import type { TeamInput, TeamService } from './team-service.js';
import type { TokenInput, TokenService } from './token-service.js';

function tokenInput(body: TokenBody | undefined): TokenInput {
  const a = optionalAttributes(body);
  return {
    description: a.description,
    expiredAt: parseInstant(a['expired-at'], '/data/attributes/expired-at'),
  };
}

/** `organization-access`: each documented flag a boolean when present; unknown keys are ignored, as HCP does. */
function teamInput(body: TeamBody): TeamInput {
  const a = body.data.attributes ?? {};
  const access = a['organization-access'];
  let organizationAccess: TeamInput['organizationAccess'];
  if (access) {
    organizationAccess = {};
    for (const k of ORGANIZATION_ACCESS_FLAGS) {
      const v = access[k];
      if (v !== undefined && v !== null) organizationAccess[k] = v;
    }
  }
  return { name: a.name ?? undefined, visibility: a.visibility ?? undefined, organizationAccess };
}

/** A new token's answer, the one time its secret is shown. */
function sendCreated(
  request: FastifyRequest,
  reply: FastifyReply,
  created: { token: AuthToken; secret: string },
): FastifyReply {
  request.log.info({ tokenId: created.token.id, kind: created.token.kind }, 'api token created');
  return sendDocument(reply, 201, { data: tokenResource(created.token, created.secret) });
}

const usernames = (body: UserListBody): string[] => body.data.map((u) => u.id);

const tags = ['identity'];
const ById = Params('id');
const ByOrg = Params('org');
const created = { 201: TokenDocument, ...COMMON_ERRORS, ...BODY_ERRORS };

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
  const api = app.withTypeProvider<TypeBoxTypeProvider>();
  const read = <P extends TSchema>(summary: string, params: P, document: TSchema) => ({
    schema: { summary, tags, params, response: { 200: document, ...COMMON_ERRORS } },
  });
  const remove = <P extends TSchema>(summary: string, params: P) => ({
    schema: { summary, tags, params, response: { 204: NoContent, ...COMMON_ERRORS } },
  });
  const createToken = <P extends TSchema>(summary: string, params: P) => ({
    schema: { summary, tags, params, body: TokenBody, response: created },
  });

  api.get(
    '/account/details',
    { schema: { summary: 'The caller', tags, response: { 200: AccountDocument, ...COMMON_ERRORS } } },
    async (request, reply) => {
      return sendDocument(reply, 200, { data: accountResource(await identity.accountDetails(requireActor(request))) });
    },
  );

  api.get('/users/:id', read('Show a user', ById, UserDocument), async (request, reply) => {
    const user = await identity.getUser(requireActor(request), request.params.id);
    return sendDocument(reply, 200, { data: userResource(user) });
  });

  // ---- user tokens
  api.post('/users/:id/authentication-tokens', createToken('Create a user token', ById), async (request, reply) => {
    const created = await tokens.createUserToken(requireActor(request), request.params.id, tokenInput(request.body));
    return sendCreated(request, reply, created);
  });
  api.get(
    '/users/:id/authentication-tokens',
    read("List a user's tokens", ById, TokenListDocument),
    async (request, reply) => {
      const list = await tokens.listUserTokens(requireActor(request), request.params.id);
      return sendDocument(reply, 200, { data: list.map((t) => tokenResource(t)) });
    },
  );
  api.get('/authentication-tokens/:id', read('Show a token', ById, TokenDocument), async (request, reply) => {
    const token = await tokens.getToken(requireActor(request), request.params.id);
    return sendDocument(reply, 200, { data: tokenResource(token) });
  });
  api.delete('/authentication-tokens/:id', remove('Delete a token', ById), async (request, reply) => {
    await tokens.deleteToken(requireActor(request), request.params.id);
    return sendNoContent(reply);
  });

  // ---- the team token (one per team; regenerating replaces it)
  api.post(
    '/teams/:id/authentication-token',
    createToken("Create (or replace) a team's token", ById),
    async (request, reply) => {
      const created = await tokens.createTeamToken(requireActor(request), request.params.id, tokenInput(request.body));
      return sendCreated(request, reply, created);
    },
  );
  api.get(
    '/teams/:id/authentication-token',
    read("Show a team's token", ById, TokenDocument),
    async (request, reply) => {
      const token = await tokens.getTeamToken(requireActor(request), request.params.id);
      return sendDocument(reply, 200, { data: tokenResource(token) });
    },
  );
  api.delete('/teams/:id/authentication-token', remove("Delete a team's token", ById), async (request, reply) => {
    await tokens.deleteTeamToken(requireActor(request), request.params.id);
    return sendNoContent(reply);
  });

  // ---- described team tokens (many per team)
  api.post(
    '/teams/:id/authentication-tokens',
    createToken('Create a described team token', ById),
    async (request, reply) => {
      const created = await tokens.createDescribedTeamToken(
        requireActor(request),
        request.params.id,
        tokenInput(request.body),
      );
      return sendCreated(request, reply, created);
    },
  );
  api.get(
    '/organizations/:org/team-tokens',
    read("List an organization's team tokens", ByOrg, TokenListDocument),
    async (request, reply) => {
      const list = await tokens.listTeamTokens(requireActor(request), request.params.org);
      return sendDocument(reply, 200, { data: list.map((t) => tokenResource(t)) });
    },
  );

  // ---- the organization token (one per organization)
  api.post(
    '/organizations/:org/authentication-token',
    createToken("Create (or replace) an organization's token", ByOrg),
    async (request, reply) => {
      const created = await tokens.createOrganizationToken(
        requireActor(request),
        request.params.org,
        tokenInput(request.body),
      );
      return sendCreated(request, reply, created);
    },
  );
  api.get(
    '/organizations/:org/authentication-token',
    read("Show an organization's token", ByOrg, TokenDocument),
    async (request, reply) => {
      const token = await tokens.getOrganizationToken(requireActor(request), request.params.org);
      return sendDocument(reply, 200, { data: tokenResource(token) });
    },
  );
  api.delete(
    '/organizations/:org/authentication-token',
    remove("Delete an organization's token", ByOrg),
    async (request, reply) => {
      await tokens.deleteOrganizationToken(requireActor(request), request.params.org);
      return sendNoContent(reply);
    },
  );

  // ---- teams and membership
  api.get(
    '/organizations/:org/teams',
    read("List an organization's teams", ByOrg, TeamListDocument),
    async (request, reply) => {
      const list = await teams.list(requireActor(request), request.params.org);
      return sendDocument(reply, 200, onePage(list.map(teamResource)));
    },
  );
  api.post(
    '/organizations/:org/teams',
    {
      schema: {
        summary: 'Create a team',
        tags,
        params: ByOrg,
        body: TeamBody,
        response: { 201: TeamDocument, ...COMMON_ERRORS, ...BODY_ERRORS },
      },
    },
    async (request, reply) => {
      const view = await teams.create(requireActor(request), request.params.org, teamInput(request.body));
      return sendDocument(reply, 201, { data: teamResource(view) });
    },
  );
  api.get('/teams/:id', read('Show a team', ById, TeamDocument), async (request, reply) => {
    const view = await teams.view(requireActor(request), request.params.id);
    return sendDocument(reply, 200, { data: teamResource(view) });
  });
  api.patch(
    '/teams/:id',
    {
      schema: {
        summary: 'Update a team',
        tags,
        params: ById,
        body: TeamBody,
        response: { 200: TeamDocument, ...COMMON_ERRORS, ...BODY_ERRORS },
      },
    },
    async (request, reply) => {
      const view = await teams.update(requireActor(request), request.params.id, teamInput(request.body));
      return sendDocument(reply, 200, { data: teamResource(view) });
    },
  );
  api.delete('/teams/:id', remove('Delete a team', ById), async (request, reply) => {
    await teams.delete(requireActor(request), request.params.id);
    return sendNoContent(reply);
  });
  const membership = (summary: string) => ({
    schema: {
      summary,
      tags,
      params: ById,
      body: UserListBody,
      response: { 204: NoContent, ...COMMON_ERRORS, ...BODY_ERRORS },
    },
  });
  api.post('/teams/:id/relationships/users', membership('Add users to a team'), async (request, reply) => {
    await teams.addMembers(requireActor(request), request.params.id, usernames(request.body));
    return sendNoContent(reply);
  });
  api.delete('/teams/:id/relationships/users', membership('Remove users from a team'), async (request, reply) => {
    await teams.removeMembers(requireActor(request), request.params.id, usernames(request.body));
    return sendNoContent(reply);
  });
}
