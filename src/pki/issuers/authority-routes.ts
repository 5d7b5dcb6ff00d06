/**
 * Authority information: ca, ca/pem, ca_chain, cert/ca, cert/ca_chain, cert/:serial (and
 * raw forms) and LIST certs. Most are served without a token.
 * https://developer.hashicorp.com/vault/api-docs/secret/pki#read-issuer-certificate
 * https://developer.hashicorp.com/vault/api-docs/secret/pki#read-certificate
 */
import { emptyResult, jsonResult, notFoundResult } from '../config/route-kit.js';
import { pemEncode } from '../crypto/pem.js';
import { formatSerial, normalizeSerial } from '../crypto/serial.js';
import type { PkiRequestContext, PkiResult, PkiRoute } from '../pki-route.js';
import { invalid } from '../../shared/errors.js';
import { certificatePem } from './issuer-service.js';
import type { IssuerService } from './issuer-service.js';

const PEM_CHAIN = 'application/pem-certificate-chain';
const PKIX_CERT = 'application/pkix-cert';

/** PEMs of a chain as one text, each certificate followed by a newline. */
const joinChain = (pems: readonly string[]): string => pems.map((p) => `${p.trimEnd()}\n`).join('');

export function authorityRoutes(issuers: IssuerService): PkiRoute[] {
  const defaultOrFail = async (ctx: PkiRequestContext) => {
    const issuer = await issuers.defaultIssuer(ctx.mount.id);
    if (!issuer) throw invalid('no default issuer currently configured');
    return issuer;
  };

  /** JSON form of cert/ca, cert/ca_chain and cert/:serial. */
  const certJson = async (ctx: PkiRequestContext, serial: string): Promise<PkiResult> => {
    if (serial === 'ca' || serial === 'ca_chain') {
      const issuer = await defaultOrFail(ctx);
      const text = serial === 'ca' ? certificatePem(issuer.certificateDer) : joinChain(await issuers.chainPems(issuer));
      const data: Record<string, unknown> = { certificate: text, revocation_time: 0, revocation_time_rfc3339: '' };
      if (serial === 'ca_chain') data.ca_chain = text;
      return jsonResult(data);
    }
    const stored = await issuers.storedCertificate(ctx.mount.id, normalizeSerial(serial));
    if (!stored) return notFoundResult();
    const data: Record<string, unknown> = {
      certificate: certificatePem(stored.der),
      revocation_time: stored.revokedAt ? Math.floor(stored.revokedAt.getTime() / 1000) : 0,
      revocation_time_rfc3339: stored.revokedAt ? stored.revokedAt.toISOString() : '',
    };
    if (stored.revokedAt && stored.revocationIssuerId !== '') data.issuer_id = stored.revocationIssuerId;
    return jsonResult(data);
  };

  /** DER or PEM of cert/:serial/raw(/pem); 204 when unknown. */
  const certRaw = async (ctx: PkiRequestContext, serial: string, pem: boolean): Promise<PkiResult> => {
    let der: Buffer | undefined;
    if (serial === 'ca' || serial === 'ca_chain') der = (await issuers.defaultIssuer(ctx.mount.id))?.certificateDer;
    else der = (await issuers.storedCertificate(ctx.mount.id, normalizeSerial(serial)))?.der;
    if (!der) return emptyResult();
    return pem
      ? { kind: 'raw', contentType: PEM_CHAIN, body: pemEncode('CERTIFICATE', der) }
      : { kind: 'raw', contentType: PKIX_CERT, body: der };
  };

  return [
    {
      pattern: 'ca',
      operations: ['read'],
      unauthenticated: true,
      handler: async (ctx) => {
        const issuer = await issuers.defaultIssuer(ctx.mount.id);
        return issuer ? { kind: 'raw', contentType: PKIX_CERT, body: issuer.certificateDer } : emptyResult();
      },
    },
    {
      pattern: 'ca/pem',
      operations: ['read'],
      unauthenticated: true,
      handler: async (ctx) => {
        const issuer = await issuers.defaultIssuer(ctx.mount.id);
        return issuer
          ? { kind: 'raw', contentType: PEM_CHAIN, body: pemEncode('CERTIFICATE', issuer.certificateDer) }
          : emptyResult();
      },
    },
    {
      // Vault labels this PEM text as application/pkix-cert (reference 6.1, a known quirk).
      pattern: 'ca_chain',
      operations: ['read'],
      unauthenticated: true,
      handler: async (ctx) => {
        const issuer = await issuers.defaultIssuer(ctx.mount.id);
        if (!issuer) return emptyResult();
        return { kind: 'raw', contentType: PKIX_CERT, body: joinChain(await issuers.chainPems(issuer)) };
      },
    },
    { pattern: 'cert/ca', operations: ['read'], unauthenticated: true, handler: (ctx) => certJson(ctx, 'ca') },
    {
      pattern: 'cert/ca_chain',
      operations: ['read'],
      unauthenticated: true,
      handler: (ctx) => certJson(ctx, 'ca_chain'),
    },
    {
      pattern: 'cert/:serial',
      operations: ['read'],
      unauthenticated: true,
      handler: (ctx) => certJson(ctx, ctx.params.serial ?? ''),
    },
    {
      pattern: 'cert/:serial/raw',
      operations: ['read'],
      unauthenticated: true,
      handler: (ctx) => certRaw(ctx, ctx.params.serial ?? '', false),
    },
    {
      pattern: 'cert/:serial/raw/pem',
      operations: ['read'],
      unauthenticated: true,
      handler: (ctx) => certRaw(ctx, ctx.params.serial ?? '', true),
    },
    {
      pattern: 'certs',
      operations: ['list'],
      handler: async (ctx) => {
        const serials = await issuers.storedCertificateSerials(ctx.mount.id);
        if (serials.length === 0) return notFoundResult();
        return jsonResult({ keys: serials.map((s) => formatSerial(s)) });
      },
    },
  ];
}
