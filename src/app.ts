import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import Fastify from 'fastify';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import type { Deps } from './deps.js';
import { LazyChildLogger } from './shared/log.js';
import type { Logger } from './shared/log.js';
import { registerHealthRoutes } from './http/health-routes.js';
import { registerUiRoutes } from './http/ui-routes.js';
import { listAwareClientErrorHandler } from './http/list-method.js';
import { classifyError } from './http/error-kind.js';
import { envelopeOf } from './http/api-envelope.js';
import { registerOverloadGuard } from './http/overload-guard.js';
import { acceptEagerly } from './http/eager-accept.js';
import { pkiPlugin, sendPkiError } from './pki/pki-plugin.js';
import type { PkiServices } from './pki/pki-services.js';
import { JSONAPI_CONTENT_TYPE, jsonApiError } from './tfe/jsonapi.js';
import { tfePlugin } from './tfe/tfe-plugin.js';

/** Builds the server with both products; never listens (main.ts and tests do). */
export async function buildApp(
  deps: Deps,
  opts: { onRoute?: (route: RouteOptions) => void } = {},
): Promise<FastifyInstance> {
  const { config, logger, metrics } = deps.core;
  const https =
    config.tlsCertFile && config.tlsKeyFile
      ? {
          cert: readFileSync(config.tlsCertFile),
          key: readFileSync(config.tlsKeyFile),
          // Ask for a client certificate without requiring one, as Vault does: auth/cert logs in with it.
          requestCert: true,
          rejectUnauthorized: false,
        }
      : null;
  const app: FastifyInstance = Fastify({
    loggerInstance: logger,
    bodyLimit: config.bodyLimit,
    requestIdHeader: 'x-request-id',
    genReqId: () => randomUUID(),
    return503OnClosing: true,
    clientErrorHandler: listAwareClientErrorHandler(() => app.server, Boolean(https)),
    forceCloseConnections: 'idle',
    frameworkErrors: frameworkErrorHandler(deps.pki),
    // Each request's child logger is made only if the request logs something (LazyChildLogger).
    childLoggerFactory: (parent, bindings, opts) =>
      new LazyChildLogger(parent as Logger, bindings, opts) as unknown as typeof parent,
    ...(https ? { https } : {}),
  }) as unknown as FastifyInstance;

  // While shutting down, answers to requests in flight close their connection, so that
  // keep-alive clients do not hold the process open.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  // Hooks every request runs are in callback style: an async hook costs a promise each time.
  const { peers } = deps.core;
  app.addHook('onSend', (request, reply, payload, done) => {
    void reply.header('x-request-id', request.id);
    if (closing) void reply.header('connection', 'close');
    // A change this worker made is answered only once every other worker has taken it
    // (decision 0056), so the client's next request finds it wherever it lands.
    const settled = peers.settled();
    if (settled) void settled.then(() => done(null, payload));
    else done(null, payload);
  });
  app.addHook('onResponse', (request, reply, done) => {
    metrics.observeRequest(
      request.method,
      request.routeOptions.url ?? 'unmatched',
      reply.statusCode,
      reply.elapsedTime / 1000,
    );
    done();
  });

  // Waiting connections are taken with each one the event loop takes (decision 0057).
  app.addHook('onListen', (done) => {
    if (config.eagerAccept) acceptEagerly(app.server);
    done();
  });

  if (opts.onRoute) app.addHook('onRoute', opts.onRoute);
  registerOverloadGuard(app, { maxInFlight: config.maxInFlightRequests, metrics, sendError: sendEnvelopedError });
  registerHealthRoutes(app, {
    db: deps.core.db,
    jobs: deps.core.jobs,
    metrics,
    metricsToken: config.metricsToken,
    uploads: deps.core.uploads,
    worker: deps.core.worker,
  });
  await app.register(tfePlugin, { prefix: '/api/v2', services: deps.tfe, config, scope: 'api' });
  await app.register(tfePlugin, { services: deps.tfe, config, scope: 'root' });
  await app.register(pkiPlugin, { prefix: '/v1', services: deps.pki, config });
  await registerUiRoutes(app);

  app.setNotFoundHandler((request, reply) => {
    void reply.status(404).send({ errors: [`no route for ${request.method} ${request.url.split('?')[0]}`] });
  });
  return app;
}

/** An error in the envelope of the API the path belongs to: JSON:API, or `{"errors": [...]}` (Vault's, and plain). */
function sendEnvelopedError(reply: FastifyReply, url: string, status: number, message: string): void {
  if (envelopeOf(url) === 'jsonapi')
    void reply.status(status).type(JSONAPI_CONTENT_TYPE).send(jsonApiError(status, message));
  else void reply.status(status).send({ errors: [message] });
}

/**
 * Requests Fastify refuses before any route or plugin sees them (a path with a bad percent
 * escape) still get the envelope of the API they were meant for: JSON:API for the TFE paths,
 * Vault's (or OCSP's, for an OCSP request) under /v1, plain JSON elsewhere.
 */
function frameworkErrorHandler(
  pki: PkiServices,
): (err: FastifyError, request: FastifyRequest, reply: FastifyReply) => void {
  return (err, request, reply) => {
    const url = request.url;
    const c = classifyError(err);
    const status = c.kind === 'http' ? (c.status ?? 400) : c.kind === 'internal' ? 500 : 400;
    const message = status >= 500 ? 'internal server error' : c.message;
    if (envelopeOf(url) === 'vault') {
      sendPkiError(pki, err, request, reply).catch((e: unknown) => {
        request.log.error({ err: e }, 'request failed');
        if (!reply.sent) void reply.status(500).send({ errors: ['internal error'] });
      });
    } else {
      sendEnvelopedError(reply, url, status, message);
    }
  };
}
