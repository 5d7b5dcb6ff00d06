import type { FastifyReply } from 'fastify';

/** Which API a request path belongs to, for errors sent before any route has seen the request. */
export type ApiEnvelope = 'jsonapi' | 'vault' | 'plain';

export function envelopeOf(url: string): ApiEnvelope {
  if (/^\/api\/v2(?:[/?]|$)/.test(url) || url.startsWith('/v1/object/')) return 'jsonapi';
  if (/^\/v1(?:[/?]|$)/.test(url)) return 'vault';
  return 'plain';
}

/** Sends an error in the envelope of the API a path belongs to (the products supply their envelopes: app.ts). */
export type SendEnvelopedError = (reply: FastifyReply, url: string, status: number, message: string) => void;
