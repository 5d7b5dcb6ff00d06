import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import { classifyError } from '../http/error-kind.js';
import type { Config } from '../config.js';
import { vaultError, vaultStatusFor } from './vault-envelope.js';
import type { PkiServices } from './pki-services.js';

export interface PkiPluginOptions {
  services: PkiServices;
  config: Config;
}

/**
 * The Vault-compatible API under /v1: lenient bodies (JSON whatever the content type,
 * or form-encoded), Vault's error envelope and 404s. Registered without fastify-plugin
 * so these handlers stay inside this scope.
 */
export const pkiPlugin: FastifyPluginAsync<PkiPluginOptions> = async (app: FastifyInstance, opts) => {
  app.removeAllContentTypeParsers();
  const json = app.getDefaultJsonParser('error', 'ignore');
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (req, body, done) => {
    // `curl -d '{"type":"pki"}'` labels JSON as a form; Vault reads a body that starts with { or [ as JSON.
    const text = (body as string).trim();
    if (text.startsWith('{') || text.startsWith('[')) return json(req, text, done);
    // No prototype, so a `__proto__` form key is just a key.
    const out: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>;
    for (const [k, v] of new URLSearchParams(body as string)) {
      const prev = out[k];
      out[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
    }
    done(null, out);
  });
  // Vault reads the body as JSON whatever the Content-Type says (curl -d sends form type
  // without meaning it, many clients send none).
  app.addContentTypeParser('*', { parseAs: 'string' }, (req, body, done) => {
    const text = (body as string).trim();
    if (text === '') return done(null, {});
    json(req, text, done);
  });

  app.setErrorHandler((err, request, reply) => {
    const c = classifyError(err);
    const status = c.kind === 'http' ? (c.status ?? 400) : vaultStatusFor(c.kind);
    if (status >= 500) request.log.error({ err }, 'request failed');
    const message = status >= 500 ? 'internal error' : status === 403 ? 'permission denied' : c.message;
    void reply.status(status).type('application/json').send(vaultError([message]));
  });

  app.setNotFoundHandler((_request, reply) => {
    void reply.status(404).type('application/json').send(vaultError([]));
  });

  await opts.services.registerRoutes(app, opts);
};
