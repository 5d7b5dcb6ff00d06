import type { FastifyInstance } from 'fastify';
import { loginDiscovery } from './login/login.js';

/** The API version the `cloud` block requires (≥ 2.5, reference 2.2); sent on every /api/v2 response. */
export const TFP_API_VERSION = '2.5';
/** Not "HCP Terraform", so clients treat this as Terraform Enterprise (backing-data actions exist). */
export const TFP_APP_NAME = 'Terraform Enterprise';
export const TFE_VERSION = 'v202501-1';

const API_HEADERS = { 'tfp-api-version': TFP_API_VERSION, 'tfp-appname': TFP_APP_NAME, 'x-tfe-version': TFE_VERSION };

/**
 * Headers of every /api/v2 response, and `GET /api/v2/ping`, which go-tfe calls once per
 * client and reads only for its headers (reference 2.2).
 */
export function registerApiHeadersAndPing(app: FastifyInstance): void {
  // Callback style: an async hook costs a promise per request on every response.
  app.addHook('onSend', (_request, reply, payload, done) => {
    void reply.headers(API_HEADERS);
    done(null, payload);
  });
  app.get('/ping', { config: { tfePublic: true } }, async (_request, reply) => reply.status(204).send());
}

/** `/.well-known/terraform.json` (reference 2.1) and the `motd.v1` service it names. */
export function registerDiscoveryRoutes(app: FastifyInstance): void {
  app.get('/.well-known/terraform.json', async (_request, reply) =>
    reply.type('application/json').send({
      'tfe.v2': '/api/v2/',
      'tfe.v2.1': '/api/v2/',
      'tfe.v2.2': '/api/v2/',
      'state.v2': '/api/v2/',
      'motd.v1': '/api/terraform/motd',
      'login.v1': loginDiscovery(),
    }),
  );
  app.get('/api/terraform/motd', async (_request, reply) => reply.type('application/json').send({ msg: '' }));
}
