import type { FastifyReply } from 'fastify';
import { JSONAPI_CONTENT_TYPE, jsonApiError } from '../tfe/jsonapi.js';

/** Which API a request path belongs to, for errors sent before any route has seen the request. */
export type ApiEnvelope = 'jsonapi' | 'vault' | 'plain';

export function envelopeOf(url: string): ApiEnvelope {
  if (/^\/api\/v2(?:[/?]|$)/.test(url) || url.startsWith('/v1/object/')) return 'jsonapi';
  if (/^\/v1(?:[/?]|$)/.test(url)) return 'vault';
  return 'plain';
}

/** Sends an error in the envelope of the API the path belongs to: JSON:API, or `{"errors": [...]}` (Vault's). */
export function sendEnvelopedError(reply: FastifyReply, url: string, status: number, message: string): FastifyReply {
  if (envelopeOf(url) === 'jsonapi')
    return reply.status(status).type(JSONAPI_CONTENT_TYPE).send(jsonApiError(status, message));
  return reply.status(status).send({ errors: [message] });
}
