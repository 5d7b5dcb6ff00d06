/**
 * `terraform login` over HTTP: the approval the web UI's authorize page sends (under
 * /api/v2, with the signed-in user's token) and the token endpoint the CLI calls (at the
 * root, form-encoded as OAuth 2.0 wants, answered in OAuth's JSON, never JSON:API).
 * https://developer.hashicorp.com/terraform/internals/login-protocol, RFC 6749 4.1.3 and 5.
 */
import type { FastifyInstance } from 'fastify';
import { requireActor } from '../identity/request-actor.js';
import { sendDocument } from '../route-helpers.js';
import type { LoginService } from './login-service.js';
import { OAuthError } from './login-service.js';

const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** POST /api/v2/oauth/authorizations: the signed-in user approves the CLI's request. */
export function registerLoginApprovalRoutes(app: FastifyInstance, deps: { login: LoginService }): void {
  app.post('/oauth/authorizations', async (request, reply) => {
    const body = (request.body ?? {}) as Record<string, unknown>;
    const data = body.data as { attributes?: Record<string, unknown> } | undefined;
    const f = data?.attributes ?? body;
    const redirect = await deps.login.authorize(requireActor(request), {
      responseType: str(f.response_type ?? f['response-type']),
      clientId: str(f.client_id ?? f['client-id']),
      redirectUri: str(f.redirect_uri ?? f['redirect-uri']),
      state: str(f.state),
      codeChallenge: str(f.code_challenge ?? f['code-challenge']),
      codeChallengeMethod: str(f.code_challenge_method ?? f['code-challenge-method']),
    });
    request.log.info({ actor: requireActor(request).kind }, 'terraform login approved');
    // The code travels only inside the redirect; the resource has no other lasting identity.
    return sendDocument(reply, 201, {
      data: { id: 'terraform-login', type: 'oauth-authorizations', attributes: { 'redirect-uri': redirect } },
    });
  });
}

/** POST /oauth/token: the CLI exchanges the code and its PKCE verifier for a user token. */
export async function registerLoginTokenRoute(app: FastifyInstance, deps: { login: LoginService }): Promise<void> {
  await app.register(async (scope) => {
    scope.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) =>
      done(null, Object.fromEntries(new URLSearchParams(String(body)))),
    );
    scope.post('/oauth/token', async (request, reply) => {
      const f = (request.body ?? {}) as Record<string, unknown>;
      void reply.header('cache-control', 'no-store').header('pragma', 'no-cache').type('application/json');
      try {
        const { token, username } = await deps.login.exchange({
          grantType: str(f.grant_type),
          code: str(f.code),
          redirectUri: str(f.redirect_uri),
          clientId: str(f.client_id),
          codeVerifier: str(f.code_verifier),
        });
        request.log.info({ username }, 'terraform login token issued');
        return reply.status(200).send({ access_token: token, token_type: 'bearer' });
      } catch (err) {
        if (!(err instanceof OAuthError)) throw err;
        return reply
          .status(err.error === 'invalid_client' ? 401 : 400)
          .send({ error: err.error, error_description: err.message });
      }
    });
  });
}
