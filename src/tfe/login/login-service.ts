import { randomBytes } from 'node:crypto';
import type { Clock } from '../../shared/clock.js';
import { DomainError, forbidden } from '../../shared/errors.js';
import { hashToken } from '../../shared/ids.js';
import type { Actor } from '../identity/actor.js';
import type { TokenService } from '../identity/token-service.js';
import { CODE_LIFETIME_SECONDS, checkAuthorizationRequest, pkceMatches, redirectWithCode } from './login.js';
import type { AuthorizationRequest } from './login.js';
import type { LoginRepo } from './login-repo.js';

/** An OAuth token-endpoint refusal (RFC 6749 5.2): its `error` code and a description. */
export class OAuthError extends Error {
  constructor(
    readonly error: 'invalid_request' | 'invalid_grant' | 'unsupported_grant_type' | 'invalid_client',
    message: string,
  ) {
    super(message);
  }
}

export interface TokenExchange {
  grantType: string;
  code: string;
  redirectUri: string;
  clientId: string;
  codeVerifier: string;
}

/**
 * `terraform login`: a signed-in user approves (authorize), which records a one-time code
 * bound to the CLI's PKCE challenge and redirect; the CLI exchanges the code and its
 * verifier for a new user token of that user (exchange).
 */
export class LoginService {
  constructor(private readonly deps: { repo: LoginRepo; tokens: TokenService; clock: Clock }) {}

  /** Approves a login for the acting user; returns where to send the browser. */
  async authorize(actor: Actor, req: AuthorizationRequest): Promise<string> {
    if (actor.kind !== 'user') throw forbidden('only a user (or the admin token) can approve a terraform login');
    checkAuthorizationRequest(req);
    const now = this.deps.clock.now();
    const code = randomBytes(32).toString('base64url');
    await this.deps.repo.deleteExpired(now);
    await this.deps.repo.insert(
      hashToken(code),
      {
        userId: actor.userId,
        username: actor.username,
        clientId: req.clientId,
        redirectUri: req.redirectUri,
        codeChallenge: req.codeChallenge,
        expiresAt: new Date(now.getTime() + CODE_LIFETIME_SECONDS * 1000),
      },
      now,
    );
    return redirectWithCode(req.redirectUri, code, req.state);
  }

  /** The token endpoint: a new user token for a valid, unexpired, unused code and its verifier. */
  async exchange(x: TokenExchange): Promise<{ token: string; username: string }> {
    if (x.grantType !== 'authorization_code')
      throw new OAuthError('unsupported_grant_type', 'grant_type must be authorization_code');
    if (x.code === '' || x.codeVerifier === '')
      throw new OAuthError('invalid_request', 'code and code_verifier are required');
    const stored = await this.deps.repo.take(hashToken(x.code));
    const now = this.deps.clock.now();
    if (!stored || stored.expiresAt.getTime() < now.getTime())
      throw new OAuthError('invalid_grant', 'the authorization code is unknown, used or expired');
    if (stored.clientId !== x.clientId) throw new OAuthError('invalid_client', 'client_id does not match the code');
    if (stored.redirectUri !== x.redirectUri)
      throw new OAuthError('invalid_grant', 'redirect_uri does not match the authorization request');
    if (!pkceMatches(x.codeVerifier, stored.codeChallenge))
      throw new OAuthError('invalid_grant', 'code_verifier does not match the code challenge');
    const actor: Actor = {
      kind: 'user',
      userId: stored.userId,
      username: stored.username,
      siteAdmin: false,
      tokenId: null,
    };
    try {
      const created = await this.deps.tokens.createUserToken(actor, stored.userId, {
        description: `terraform login ${now.toISOString().slice(0, 10)}`,
      });
      return { token: created.secret, username: stored.username };
    } catch (err) {
      if (err instanceof DomainError && err.kind === 'not_found')
        throw new OAuthError('invalid_grant', 'the user who approved this login no longer exists');
      throw err;
    }
  }
}
