/**
 * Issuers: LIST issuers, issuer/:issuer_ref (read, update, patch, delete), its
 * json/der/pem forms, config/issuers and root/replace.
 * https://developer.hashicorp.com/vault/api-docs/secret/pki#read-issuer
 */
import { emptyResult, jsonResult, notFoundResult, parseInput } from '../config/route-kit.js';
import { pemEncode } from '../crypto/pem.js';
import { formatSerial } from '../crypto/serial.js';
import type { PkiRoute } from '../pki-route.js';
import { defineFields } from '../vault-fields.js';
import type { CaService } from './ca-service.js';
import { formatUsage } from './issuer.js';
import type { PkiIssuer } from './issuer.js';
import { certificatePem } from './issuer-service.js';
import type { IssuerService, IssuerUpdate } from './issuer-service.js';

const refFields = defineFields({ issuer_ref: { type: 'string', required: true } });

/** POST replaces every field (omitted ones take these defaults); PATCH changes only what is sent. */
const updateFields = defineFields({
  issuer_ref: { type: 'string', required: true },
  issuer_name: { type: 'string', default: '' },
  leaf_not_after_behavior: { type: 'string', default: 'err' },
  manual_chain: { type: 'commaList', default: [] },
  usage: { type: 'commaList', default: ['read-only', 'issuing-certificates', 'crl-signing', 'ocsp-signing'] },
  revocation_signature_algorithm: { type: 'string', default: '' },
  issuing_certificates: { type: 'commaList', default: [] },
  crl_distribution_points: { type: 'commaList', default: [] },
  ocsp_servers: { type: 'commaList', default: [] },
  delta_crl_distribution_points: { type: 'commaList', default: [] },
  enable_aia_url_templating: { type: 'bool', default: false },
});

const configFields = defineFields({
  default: { type: 'string' },
  default_follows_latest_issuer: { type: 'bool' },
});
const replaceFields = defineFields({ default: { type: 'string', default: 'next' } });

/** The issuer read shape (GET/POST/PATCH issuer/:ref). */
export async function issuerData(issuers: IssuerService, i: PkiIssuer): Promise<Record<string, unknown>> {
  const data: Record<string, unknown> = {
    issuer_id: i.id,
    issuer_name: i.name,
    key_id: i.keyId,
    certificate: certificatePem(i.certificateDer),
    ca_chain: await issuers.chainPems(i),
    manual_chain: i.manualChain,
    leaf_not_after_behavior: i.leafNotAfterBehavior,
    usage: formatUsage(i.usage),
    revocation_signature_algorithm: i.revocationSignatureAlgorithm,
    revoked: i.revokedAt !== null,
    issuing_certificates: i.aia.issuingCertificates,
    crl_distribution_points: i.aia.crlDistributionPoints,
    ocsp_servers: i.aia.ocspServers,
    delta_crl_distribution_points: i.aia.deltaCrlDistributionPoints,
  };
  if (i.revokedAt) {
    data.revocation_time = Math.floor(i.revokedAt.getTime() / 1000);
    data.revocation_time_rfc3339 = i.revokedAt.toISOString();
  }
  const aiaSet = i.aia.issuingCertificates.length + i.aia.crlDistributionPoints.length + i.aia.ocspServers.length > 0;
  if (aiaSet || i.aia.enableTemplating) data.enable_aia_url_templating = i.aia.enableTemplating;
  return data;
}

function toUpdate(
  v: ReturnType<typeof updateFields.parse>['values'],
  supplied: ReadonlySet<string>,
  all: boolean,
): IssuerUpdate {
  const pick = <T>(name: string, value: T): T | undefined => (all || supplied.has(name) ? value : undefined);
  return {
    issuerName: pick('issuer_name', v.issuer_name),
    leafNotAfterBehavior: pick('leaf_not_after_behavior', v.leaf_not_after_behavior),
    manualChain: pick('manual_chain', v.manual_chain),
    usage: pick('usage', v.usage),
    revocationSignatureAlgorithm: pick('revocation_signature_algorithm', v.revocation_signature_algorithm),
    issuingCertificates: pick('issuing_certificates', v.issuing_certificates),
    crlDistributionPoints: pick('crl_distribution_points', v.crl_distribution_points),
    ocspServers: pick('ocsp_servers', v.ocsp_servers),
    deltaCrlDistributionPoints: pick('delta_crl_distribution_points', v.delta_crl_distribution_points),
    enableAiaUrlTemplating: pick('enable_aia_url_templating', v.enable_aia_url_templating),
  };
}

export function issuerRoutes(issuers: IssuerService, ca: CaService): PkiRoute[] {
  const resolveParam = async (mountId: string, params: Record<string, string>): Promise<PkiIssuer> =>
    issuers.resolve(mountId, refFields.parse({}, params).values.issuer_ref);
  return [
    {
      pattern: 'issuers',
      operations: ['list'],
      unauthenticated: true,
      handler: async (ctx) => {
        const { issuers: list, defaultIssuerId } = await issuers.list(ctx.mount.id);
        if (list.length === 0) return notFoundResult();
        return jsonResult({
          keys: list.map((i) => i.id),
          key_info: Object.fromEntries(
            list.map((i) => [
              i.id,
              {
                issuer_name: i.name,
                is_default: i.id === defaultIssuerId,
                key_id: i.keyId,
                serial_number: formatSerial(i.serial),
              },
            ]),
          ),
        });
      },
    },
    {
      pattern: 'issuer/:issuer_ref',
      operations: ['read'],
      handler: async (ctx) => jsonResult(await issuerData(issuers, await resolveParam(ctx.mount.id, ctx.params))),
    },
    {
      pattern: 'issuer/:issuer_ref',
      operations: ['update', 'create', 'patch'],
      handler: async (ctx) => {
        const { values: v, supplied, warnings } = parseInput(ctx, updateFields);
        // A merge patch sets a field to null to remove it, which puts back its default.
        const reset = Object.keys(ctx.body).filter(
          (k) => ctx.body[k] === null && Object.hasOwn(updateFields.schema, k),
        );
        const changed = new Set<string>([...supplied, ...reset]);
        const r = await issuers.update(ctx.mount.id, v.issuer_ref, toUpdate(v, changed, ctx.operation !== 'patch'));
        return jsonResult(await issuerData(issuers, r.issuer), warnings, r.warnings);
      },
    },
    {
      pattern: 'issuer/:issuer_ref',
      operations: ['delete'],
      handler: async (ctx) => {
        const r = await issuers.delete(ctx.mount.id, refFields.parse({}, ctx.params).values.issuer_ref);
        if (r.wasDefault)
          return jsonResult(null, ['the deleted issuer was the default issuer; set a new default with config/issuers']);
        return emptyResult();
      },
    },
    {
      pattern: 'issuer/:issuer_ref/json',
      operations: ['read'],
      unauthenticated: true,
      handler: async (ctx) => {
        const i = await resolveParam(ctx.mount.id, ctx.params);
        return jsonResult({
          issuer_id: i.id,
          issuer_name: i.name,
          certificate: certificatePem(i.certificateDer),
          ca_chain: await issuers.chainPems(i),
        });
      },
    },
    {
      pattern: 'issuer/:issuer_ref/der',
      operations: ['read'],
      unauthenticated: true,
      handler: async (ctx) => {
        const i = await resolveParam(ctx.mount.id, ctx.params);
        return { kind: 'raw', contentType: 'application/pkix-cert', body: i.certificateDer };
      },
    },
    {
      pattern: 'issuer/:issuer_ref/pem',
      operations: ['read'],
      unauthenticated: true,
      handler: async (ctx) => {
        const i = await resolveParam(ctx.mount.id, ctx.params);
        return {
          kind: 'raw',
          contentType: 'application/pem-certificate-chain',
          body: pemEncode('CERTIFICATE', i.certificateDer),
        };
      },
    },
    {
      pattern: 'config/issuers',
      operations: ['read'],
      handler: async (ctx) => {
        const c = await issuers.getIssuersConfig(ctx.mount.id);
        return jsonResult({ default: c.defaultIssuerId, default_follows_latest_issuer: c.defaultFollowsLatestIssuer });
      },
    },
    {
      pattern: 'config/issuers',
      operations: ['update', 'create'],
      handler: async (ctx) => {
        const { values: v, warnings } = parseInput(ctx, configFields);
        const r = await issuers.setIssuersConfig(ctx.mount.id, {
          defaultRef: v.default,
          defaultFollowsLatestIssuer: v.default_follows_latest_issuer,
        });
        return jsonResult(
          { default: r.config.defaultIssuerId, default_follows_latest_issuer: r.config.defaultFollowsLatestIssuer },
          warnings,
          r.warnings,
        );
      },
    },
    {
      pattern: 'root/replace',
      operations: ['update', 'create'],
      handler: async (ctx) => {
        const { values: v, warnings } = parseInput(ctx, replaceFields);
        const c = await ca.replaceDefault(ctx.mount.id, v.default);
        return jsonResult(
          { default: c.defaultIssuerId, default_follows_latest_issuer: c.defaultFollowsLatestIssuer },
          warnings,
        );
      },
    },
  ];
}
