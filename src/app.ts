import { readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import Fastify from 'fastify';
import type { FastifyInstance } from 'fastify';
import type { Deps } from './deps.js';
import { registerHealthRoutes } from './http/health-routes.js';
import { isListRewrittenSocket, listAwareClientErrorHandler } from './http/list-method.js';
import { pkiPlugin } from './pki/pki-plugin.js';
import { tfePlugin } from './tfe/tfe-plugin.js';

/** Builds the server with both products; never listens (main.ts and tests do). */
export async function buildApp(deps: Deps): Promise<FastifyInstance> {
  const { config, logger, metrics } = deps.core;
  const https = config.tlsCertFile && config.tlsKeyFile
    ? { cert: readFileSync(config.tlsCertFile), key: readFileSync(config.tlsKeyFile) }
    : null;
  const app: FastifyInstance = Fastify({
    loggerInstance: logger,
    bodyLimit: config.bodyLimit,
    requestIdHeader: 'x-request-id',
    genReqId: () => randomUUID(),
    return503OnClosing: true,
    clientErrorHandler: listAwareClientErrorHandler(() => app.server, Boolean(https)),
    forceCloseConnections: 'idle',
    ...(https ? { https } : {}),
  }) as unknown as FastifyInstance;

  // While shutting down, answers to requests in flight close their connection, so that
  // keep-alive clients do not hold the process open.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  // Hooks every request runs are in callback style: an async hook costs a promise each time.
  app.addHook('onSend', (request, reply, payload, done) => {
    void reply.header('x-request-id', request.id);
    // A connection revived from a LIST request is served once, then closed.
    if (closing || isListRewrittenSocket(request.raw.socket)) void reply.header('connection', 'close');
    done(null, payload);
  });
  app.addHook('onResponse', (request, reply, done) => {
    const labels = { method: request.method, route: request.routeOptions.url ?? 'unmatched', status: String(reply.statusCode) };
    metrics.httpRequests.inc(labels);
    metrics.httpDuration.observe(labels, reply.elapsedTime / 1000);
    done();
  });

  registerHealthRoutes(app, { db: deps.core.db, jobs: deps.core.jobs, metrics });
  await app.register(tfePlugin, { prefix: '/api/v2', services: deps.tfe, config, scope: 'api' });
  await app.register(tfePlugin, { services: deps.tfe, config, scope: 'root' });
  await app.register(pkiPlugin, { prefix: '/v1', services: deps.pki, config });

  app.setNotFoundHandler((request, reply) => {
    void reply.status(404).send({ errors: [`no route for ${request.method} ${request.url.split('?')[0]}`] });
  });
  return app;
}
