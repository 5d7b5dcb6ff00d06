/**
 * OCSP (RFC 6960) inside a PKI mount, served without a token: `POST ocsp` with a DER
 * body (read as DER whatever its Content-Type, see pki-plugin.ts) and `GET ocsp/<base64
 * request>`. Every answer, errors included, is a DER OCSPResponse (application/ocsp-response),
 * never JSON.
 * https://developer.hashicorp.com/vault/api-docs/secret/pki#ocsp-request (reference 11)
 */
import { decodeOcspGetRequest, OcspRequestError } from '../crypto/ocsp.js';
import type { PkiRequestContext, PkiResult, PkiRoute } from '../pki-route.js';
import { cacheHeaders } from './ocsp.js';
import type { OcspAnswer, OcspService } from './ocsp-service.js';

export const OCSP_RESPONSE_TYPE = 'application/ocsp-response';

const HTTP_STATUS: Record<OcspAnswer['status'], number> = {
  successful: 200,
  malformedRequest: 400,
  unauthorized: 401,
  internalError: 500,
};

export function ocspRoutes(ocsp: OcspService): PkiRoute[] {
  const reply = (ctx: PkiRequestContext, a: OcspAnswer): PkiResult => {
    if (a.status === 'internalError')
      ctx.request.log.error({ err: a.error, mountId: ctx.mount.id }, 'OCSP request failed');
    if (a.status === 'successful' && a.dates && a.nowMs !== undefined)
      void ctx.reply.headers(cacheHeaders({ nowMs: a.nowMs, dates: a.dates, hasNonce: a.hasNonce === true }));
    return { kind: 'raw', status: HTTP_STATUS[a.status], contentType: OCSP_RESPONSE_TYPE, body: a.body };
  };

  return [
    {
      // POST: the DER request as the body. A GET without a request is malformed.
      pattern: 'ocsp',
      operations: ['update', 'create', 'read'],
      unauthenticated: true,
      handler: async (ctx) => {
        const body: unknown = ctx.request.body;
        const der = ctx.operation !== 'read' && Buffer.isBuffer(body) ? body : undefined;
        return reply(ctx, await ocsp.answer(ctx.mount.id, der));
      },
    },
    {
      pattern: 'ocsp/*req',
      operations: ['read'],
      unauthenticated: true,
      handler: async (ctx) => {
        let der: Buffer;
        try {
          der = decodeOcspGetRequest(getRemainder(ctx));
        } catch (err) {
          if (!(err instanceof OcspRequestError)) throw err;
          der = Buffer.alloc(0);
        }
        return reply(ctx, await ocsp.answer(ctx.mount.id, der));
      },
    },
  ];
}

/**
 * The request part of the URL as the client sent it: taken from the raw URL rather than
 * the routed path, which drops a trailing `/` and decodes escapes, both of which occur in
 * base64 (reference 11 and 19, the Vault bug with `//`).
 */
function getRemainder(ctx: PkiRequestContext): string {
  const url = ctx.request.url;
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  const prefix = `/v1/${ctx.mount.path}ocsp/`;
  if (path.startsWith(prefix)) return path.slice(prefix.length);
  return encodeURIComponent(ctx.params['req'] ?? '');
}
