import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import { classifyError, mediaTypeMessage } from '../http/error-kind.js';
import { malformedJsonDetail } from '../http/json-error.js';
import { buildOpenApiDocument, collectRoutes } from '../http/openapi.js';
import { jsonApiValidatorCompiler } from './jsonapi-validation.js';
import { JSONAPI_CONTENT_TYPE, jsonApiError, tfeStatusFor } from './jsonapi.js';
import type { TfeServices } from './tfe-services.js';
import { TFP_API_VERSION } from './discovery-routes.js';
import type { Config } from '../config.js';

export interface TfePluginOptions {
  services: TfeServices;
  config: Config;
  /** 'api' is the /api/v2 prefix; 'root' holds the paths outside it (service discovery, upload URLs). */
  scope: 'api' | 'root';
}

/**
 * The Terraform state service under /api/v2: JSON:API bodies, bearer tokens, JSON:API
 * error documents and 404s. Registered without fastify-plugin so its handlers stay
 * inside this scope.
 */
export const tfePlugin: FastifyPluginAsync<TfePluginOptions> = async (app: FastifyInstance, opts) => {
  // Requests are checked against the route schemas with JSON:API's 422s (jsonapi-validation.ts).
  // Answers are rendered to text by the handlers (stored JSON embedded as it is), so the
  // response schemas describe them and are never compiled into serializers (decision 0040).
  app.setValidatorCompiler(jsonApiValidatorCompiler);
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  const parseJson = app.getDefaultJsonParser('error', 'ignore');
  const parser: Parameters<typeof app.addContentTypeParser>[2] = (request, body, done) => {
    // go-tfe sends body-less POSTs (unlock, force-unlock) with this content type and Content-Length: 0.
    if (body === '' || (Buffer.isBuffer(body) && body.length === 0)) {
      done(null, undefined);
      return;
    }
    parseJson(request, body as string, (err, value) => {
      if (!err) return done(null, value);
      // Say what came and where it breaks: the parser's own message has neither.
      const detail = malformedJsonDetail(String(body), request.headers['content-type'], err.message);
      done(Object.assign(new Error(detail), { code: 'FST_ERR_CTP_INVALID_JSON_BODY', statusCode: 400 }), undefined);
    });
  };
  app.addContentTypeParser(JSONAPI_CONTENT_TYPE, { parseAs: 'string' }, parser);
  if (opts.scope === 'api') {
    app.removeContentTypeParser('application/json');
    app.addContentTypeParser('application/json', { parseAs: 'string' }, parser);
  }

  app.setErrorHandler((err, request, reply) => {
    const c = classifyError(err, { bodyLimit: opts.config.bodyLimit });
    if (c.kind === 'http' && c.status === 415)
      c.message = mediaTypeMessage(JSONAPI_CONTENT_TYPE, request.headers['content-type']);
    const status =
      c.kind === 'http'
        ? (c.status ?? 400)
        : c.kind === 'invalid' && !c.field && /malformed JSON/.test(c.message)
          ? 400
          : tfeStatusFor(c.kind);
    if (c.kind === 'insufficient_storage') request.log.warn({ reason: c.message }, 'upload refused: disk space low');
    else if (status >= 500) request.log.error({ err }, 'request failed');
    if (c.kind === 'too_many_requests') void reply.header('retry-after', '1');
    // A 503 is a deliberate "not ready, retry" whose text clients match, a 507 says what to free;
    // other 5xx stay generic.
    const deliberate = c.kind === 'unavailable' || c.kind === 'insufficient_storage';
    const detail = status >= 500 && !deliberate ? 'internal server error' : c.message;
    const pointer = c.field ? (c.field.startsWith('/') ? c.field : `/${c.field}`) : undefined;
    void reply
      .status(status)
      .type(JSONAPI_CONTENT_TYPE)
      .send(jsonApiError(status, detail, pointer));
  });

  if (opts.scope === 'root') {
    await opts.services.registerRootRoutes(app, opts);
    return;
  }
  app.setNotFoundHandler((request, reply) => {
    void reply
      .status(404)
      .type(JSONAPI_CONTENT_TYPE)
      .send(jsonApiError(404, `no route for ${request.method} ${request.url.split('?')[0]}`));
  });
  const routes = collectRoutes(app, (r) => r.config?.tfePublic === true);
  let described: string | undefined;
  app.get(
    '/openapi.json',
    { config: { tfePublic: true }, schema: { summary: 'This API as an OpenAPI 3.1 description', tags: ['meta'] } },
    async (_request, reply) => {
      described ??= JSON.stringify(
        buildOpenApiDocument(routes, {
          title: 'Strongroom Terraform state API',
          version: TFP_API_VERSION,
          description:
            'The HCP Terraform / Terraform Enterprise API subset this server implements: organizations, ' +
            'identity, projects, workspaces, state versions and their outputs (JSON:API).',
          mediaType: JSONAPI_CONTENT_TYPE,
          serverUrl: '/api/v2',
          prefix: '/api/v2',
        }),
      );
      return reply.type('application/json').send(described);
    },
  );
  await opts.services.registerRoutes(app, opts);
};
