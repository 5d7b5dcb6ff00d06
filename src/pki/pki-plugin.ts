import type { FastifyInstance, FastifyPluginAsync, FastifyRequest } from 'fastify';
import { classifyError } from '../http/error-kind.js';
import type { Config } from '../config.js';
import { OCSP_STATUS, ocspErrorResponse } from './crypto/ocsp.js';
import { vaultError, vaultStatusFor } from './vault-envelope.js';
import type { PkiServices } from './pki-services.js';

const OCSP_REQUEST_TYPE = 'application/ocsp-request';
const OCSP_BODY_LIMIT = 64 * 1024;

/**
 * Requests an OCSP client made: a DER body, or a GET of `<mount>/ocsp/<base64>` (whose URL
 * may fail to decode before any route runs).
 */
function isOcspRequest(request: FastifyRequest): boolean {
  if ((request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase() === OCSP_REQUEST_TYPE) return true;
  return request.method === 'GET' && /^\/v1\/.+\/ocsp\//.test(request.url);
}

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

  // OCSP requests (RFC 6960 appendix A.1) are raw DER. The parser's limit is generous; the
  // responder itself answers anything above Vault's 2048 bytes as malformedRequest.
  app.addContentTypeParser(OCSP_REQUEST_TYPE, { parseAs: 'buffer', bodyLimit: OCSP_BODY_LIMIT }, (_req, body, done) => done(null, body));

  app.setErrorHandler((err, request, reply) => {
    const c = classifyError(err);
    const status = c.kind === 'http' ? (c.status ?? 400) : vaultStatusFor(c.kind);
    if (status >= 500) request.log.error({ err }, 'request failed');
    if (isOcspRequest(request)) {
      // An OCSP client understands only OCSP: a body too large or unreadable is a malformed request.
      const ocsp = status >= 500 ? OCSP_STATUS.internalError : OCSP_STATUS.malformedRequest;
      void reply.status(status >= 500 ? 500 : 400).type('application/ocsp-response').send(ocspErrorResponse(ocsp));
      return;
    }
    const message = status >= 500 ? 'internal error' : status === 403 ? 'permission denied' : c.message;
    void reply.status(status).type('application/json').send(vaultError([message]));
  });

  app.setNotFoundHandler((_request, reply) => {
    void reply.status(404).type('application/json').send(vaultError([]));
  });

  await opts.services.registerRoutes(app, opts);
};
