/**
 * `terraform login` (login.v1): the rules of the OAuth 2.0 authorization-code flow with
 * PKCE that the Terraform CLI runs. https://developer.hashicorp.com/terraform/internals/login-protocol
 * and RFC 6749 4.1 / RFC 7636.
 */
import { createHash } from 'node:crypto';
import { invalid } from '../../shared/errors.js';

/** The client id Terraform sends, and the ports it may listen on for the redirect. */
export const LOGIN_CLIENT_ID = 'terraform-cli';
export const LOGIN_PORTS: readonly [number, number] = [10000, 10010];
export const CODE_LIFETIME_SECONDS = 600;

/** What /.well-known/terraform.json says under login.v1. */
export function loginDiscovery(): Record<string, unknown> {
  return {
    client: LOGIN_CLIENT_ID,
    grant_types: ['authz_code'],
    authz: '/ui/authorize',
    token: '/oauth/token',
    ports: [...LOGIN_PORTS],
  };
}

export interface AuthorizationRequest {
  responseType: string;
  clientId: string;
  redirectUri: string;
  state: string;
  codeChallenge: string;
  codeChallengeMethod: string;
}

/** Checks an authorization request; throws `invalid` naming what is wrong. */
export function checkAuthorizationRequest(r: AuthorizationRequest): void {
  if (r.responseType !== 'code') throw invalid('response_type must be "code"', 'response_type');
  if (r.clientId !== LOGIN_CLIENT_ID) throw invalid(`unknown client_id "${r.clientId}"`, 'client_id');
  checkRedirectUri(r.redirectUri);
  if (r.codeChallengeMethod !== 'S256') throw invalid('code_challenge_method must be "S256"', 'code_challenge_method');
  if (!/^[A-Za-z0-9_-]{43}$/.test(r.codeChallenge))
    throw invalid('code_challenge must be a base64url SHA-256 digest', 'code_challenge');
}

/** Only the CLI's own listener: http on a loopback host, on one of the declared ports. */
export function checkRedirectUri(text: string): URL {
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    throw invalid('redirect_uri is not a URL', 'redirect_uri');
  }
  const port = Number(u.port);
  if (
    u.protocol !== 'http:' ||
    !['localhost', '127.0.0.1', '[::1]'].includes(u.hostname) ||
    port < LOGIN_PORTS[0] ||
    port > LOGIN_PORTS[1]
  )
    throw invalid(
      `redirect_uri must be http://localhost on a port from ${LOGIN_PORTS[0]} to ${LOGIN_PORTS[1]}`,
      'redirect_uri',
    );
  return u;
}

/** RFC 7636 4.6: BASE64URL(SHA256(code_verifier)) equals the challenge. */
export function pkceMatches(verifier: string, challenge: string): boolean {
  if (!/^[A-Za-z0-9._~-]{43,128}$/.test(verifier)) return false;
  return createHash('sha256').update(verifier).digest('base64url') === challenge;
}

/** Where the browser goes with the code (RFC 6749 4.1.2). */
export function redirectWithCode(redirectUri: string, code: string, state: string): string {
  const u = new URL(redirectUri);
  u.searchParams.set('code', code);
  if (state !== '') u.searchParams.set('state', state);
  return u.toString();
}
