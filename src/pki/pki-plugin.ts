import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { classifyError } from '../http/error-kind.js';
import type { Config } from '../config.js';
import { OCSP_STATUS, ocspErrorResponse } from './crypto/ocsp.js';
import { vaultError, vaultStatusFor } from './vault-envelope.js';
import type { PkiServices } from './pki-services.js';

const OCSP_REQUEST_TYPE = 'application/ocsp-request';
const OCSP_BODY_LIMIT = 64 * 1024;
/** A cheap first look, so that only URLs with an `ocsp` segment pay for the mount lookup. */
const OCSP_SEGMENT = /\/ocsp(?:[/?]|$)/;

/**
 * Whether the raw URL names the OCSP endpoint of a mount: `<mount>/ocsp` for POST and PUT,
 * `<mount>/ocsp` or `<mount>/ocsp/<base64>` for GET. The raw URL is used because a GET's
 * request part may not even decode.
 */
async function isOcspUrl(services: PkiServices, method: string, url: string): Promise<boolean> {
  const write = method === 'POST' || method === 'PUT';
  if ((!write && method !== 'GET') || !OCSP_SEGMENT.test(url)) return false;
  const q = url.indexOf('?');
  const full = q < 0 ? url : url.slice(0, q);
  if (!full.startsWith('/v1/')) return false;
  const path = full.replace(/^\/v1\/+/, '');
  if (path === 'sys' || path.startsWith('sys/') || path === 'auth/token' || path.startsWith('auth/token/'))
    return false;
  const hit = await services.mounts.resolve(path).catch(() => undefined);
  if (!hit) return false;
  const rest = hit.rest.replace(/\/+$/, '');
  return rest === 'ocsp' || (!write && hit.rest.startsWith('ocsp/'));
}

const labelledOcsp = (request: FastifyRequest): boolean =>
  (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase() === OCSP_REQUEST_TYPE;

/** Requests an OCSP client made: labelled as one, or sent to a mount's OCSP endpoint. */
async function isOcspRequest(services: PkiServices, request: FastifyRequest): Promise<boolean> {
  return labelledOcsp(request) || isOcspUrl(services, request.method, request.url);
}

/** ACME protocol resources: their errors are problem documents (RFC 8555 section 6.7), whatever failed. */
const ACME_RESOURCE = new RegExp(
  String.raw`\/acme\/(?:directory|new-nonce|new-account|new-order|revoke-cert|key-change|orders|` +
    String.raw`(?:account|authorization|challenge|order|renewal-info)\/)`,
);
/** An ACME request is a JWS of a few kilobytes (RFC 8555 section 6.2). */
const ACME_BODY_LIMIT = 64 * 1024;

/**
 * The PKI API's error answer: Vault's JSON envelope, or an OCSP error response to an OCSP
 * client (a body too large or unreadable, a URL that does not decode: a malformed request).
 * Also used by the app for requests Fastify refuses before routing.
 */
export async function sendPkiError(
  services: PkiServices,
  err: unknown,
  request: FastifyRequest,
  reply: FastifyReply,
  bodyLimit?: number,
): Promise<void> {
  const c = classifyError(err, { bodyLimit });
  const status = c.kind === 'http' ? (c.status ?? 400) : vaultStatusFor(c.kind);
  if (status >= 500) request.log.error({ err }, 'request failed');
  if (await isOcspRequest(services, request)) {
    const ocsp = status >= 500 ? OCSP_STATUS.internalError : OCSP_STATUS.malformedRequest;
    void reply
      .status(status >= 500 ? 500 : 400)
      .type('application/ocsp-response')
      .send(ocspErrorResponse(ocsp));
    return;
  }
  if (ACME_RESOURCE.test(request.url.split('?')[0] ?? '')) {
    const type = status >= 500 ? 'serverInternal' : 'malformed';
    const detail = status >= 500 ? 'internal error' : c.message;
    void reply
      .status(status)
      .type('application/problem+json')
      .send(JSON.stringify({ type: `urn:ietf:params:acme:error:${type}`, detail, status }));
    return;
  }
  const message = status >= 500 ? 'internal error' : status === 403 ? 'permission denied' : c.message;
  // A missing or unknown token says which, after Vault's "permission denied" that clients match.
  const messages = c.kind === 'unauthenticated' ? [message, c.message] : [message];
  void reply.status(status).type('application/json').send(vaultError(messages));
}

export interface PkiPluginOptions {
  services: PkiServices;
  config: Config;
}

/**
 * The Vault-compatible API under /v1: lenient bodies (JSON whatever the content type,
 * or form-encoded; DER for OCSP), Vault's error envelope (OCSP's for OCSP requests) and 404s. Registered without
 * fastify-plugin so these handlers stay inside this scope.
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

  app.addContentTypeParser(
    'application/jose+json',
    { parseAs: 'string', bodyLimit: ACME_BODY_LIMIT },
    (req, body, done) => json(req, body as string, done),
  );

  // OCSP requests (RFC 6960 appendix A.1) are raw DER. The parser's limit is generous; the
  // responder itself answers anything above Vault's 2048 bytes as malformedRequest.
  app.addContentTypeParser(OCSP_REQUEST_TYPE, { parseAs: 'buffer', bodyLimit: OCSP_BODY_LIMIT }, (_req, body, done) =>
    done(null, body),
  );

  // A POST to a mount's OCSP endpoint is an OCSP request whatever its Content-Type says (or
  // whether it has one): its body is read as DER by the OCSP parser, and errors answer in OCSP.
  // Requests labelled correctly already get that parser, so only the others pay for the check.
  app.addHook('onRequest', (request, _reply, done) => {
    if (
      (request.method !== 'POST' && request.method !== 'PUT') ||
      !OCSP_SEGMENT.test(request.url) ||
      labelledOcsp(request)
    )
      return done();
    isOcspUrl(opts.services, request.method, request.url).then((ocsp) => {
      if (ocsp) request.headers = { 'content-type': OCSP_REQUEST_TYPE };
      done();
    }, done);
  });

  app.setErrorHandler((err, request, reply) => sendPkiError(opts.services, err, request, reply, opts.config.bodyLimit));

  app.setNotFoundHandler((_request, reply) => {
    void reply.status(404).type('application/json').send(vaultError([]));
  });

  await opts.services.registerRoutes(app);
};
