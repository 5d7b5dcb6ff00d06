import type { FastifyInstance, FastifyRequest } from 'fastify';
import { unauthenticated } from '../../shared/errors.js';
import type { Actor } from './actor.js';
import { actorLabel } from './actor.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the TFE auth hook; read it through requireActor(). */
    tfeActor: Actor | null;
  }
  interface FastifyContextConfig {
    /** Routes that take no bearer token (ping, upload URLs). */
    tfePublic?: boolean;
  }
}

/** What the hook needs to turn a bearer token into an actor. */
export interface TokenAuthenticator {
  /** The actor of a token, or null when it is unknown, revoked or expired. */
  authenticate(token: string): Promise<Actor | null>;
  /** The actor of a token verified recently, without waiting; undefined when authenticate() must decide. */
  recentActor?(token: string): Actor | undefined;
}

/**
 * The actor of an authenticated /api/v2 request. The hook has already answered 401 for
 * missing or invalid tokens on every non-public route, so this only throws on public
 * routes that were called without a token.
 */
export function requireActor(request: FastifyRequest): Actor {
  const actor = request.tfeActor;
  if (!actor) throw unauthenticated();
  return actor;
}

function bearerToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m?.[1];
}

/**
 * Adds the bearer-token hook to the given (encapsulated) instance. Public routes
 * (`config: { tfePublic: true }`) and unknown routes skip it, so unknown paths stay 404
 * as go-tfe's tests expect; public routes still get the actor when a valid token is sent.
 */
export function registerAuthHook(app: FastifyInstance, auth: TokenAuthenticator): void {
  app.decorateRequest('tfeActor', null);
  // Callback style, so that a token found in the cache costs no promise.
  app.addHook('onRequest', (request, _reply, done) => {
    const isPublic = request.routeOptions.config?.tfePublic === true;
    const known = request.routeOptions.url !== undefined;
    const token = bearerToken(request.headers.authorization);
    if (!token) {
      if (isPublic || !known) return done();
      return done(unauthenticated('unauthorized: no bearer token'));
    }
    const recent = auth.recentActor?.(token);
    if (recent) {
      bindActor(request, recent);
      return done();
    }
    auth.authenticate(token).then((actor) => {
      if (actor) bindActor(request, actor);
      else if (!isPublic && known) return done(unauthenticated('unauthorized: invalid or expired token'));
      done();
    }, done);
  });
}

function bindActor(request: FastifyRequest, actor: Actor): void {
  request.tfeActor = actor;
  // The request's logger is already a child of its own (Fastify makes one per request),
  // so the actor is added to it in place; a second child per request cost more than the
  // token check itself on the hot reads.
  const log = request.log as typeof request.log & { setBindings?: (bindings: Record<string, unknown>) => void };
  if (typeof log.setBindings === 'function') log.setBindings({ actor: actorLabel(actor) });
  else request.log = request.log.child({ actor: actorLabel(actor) });
}
