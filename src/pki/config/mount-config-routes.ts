/**
 * config/urls and config/cluster.
 * https://developer.hashicorp.com/vault/api-docs/secret/pki#set-urls
 * https://developer.hashicorp.com/vault/api-docs/secret/pki#set-cluster-configuration
 */
import type { PkiRoute } from '../pki-route.js';
import { defineFields } from '../vault-fields.js';
import type { AiaUrls, ClusterConfig } from './mount-config.js';
import type { MountConfigService } from './mount-config-service.js';
import { jsonResult, parseInput } from './route-kit.js';

const urlFields = defineFields({
  issuing_certificates: { type: 'commaList' },
  crl_distribution_points: { type: 'commaList' },
  ocsp_servers: { type: 'commaList' },
  delta_crl_distribution_points: { type: 'commaList' },
  enable_templating: { type: 'bool' },
});

const clusterFields = defineFields({
  path: { type: 'string' },
  aia_path: { type: 'string' },
});

export const urlsData = (u: AiaUrls) => ({
  issuing_certificates: u.issuingCertificates,
  crl_distribution_points: u.crlDistributionPoints,
  ocsp_servers: u.ocspServers,
  delta_crl_distribution_points: u.deltaCrlDistributionPoints,
  enable_templating: u.enableTemplating,
});

const clusterData = (c: ClusterConfig) => ({ path: c.path, aia_path: c.aiaPath });

export function mountConfigRoutes(config: MountConfigService): PkiRoute[] {
  return [
    {
      pattern: 'config/urls',
      operations: ['read'],
      handler: async (ctx) => jsonResult(urlsData(await config.getUrls(ctx.mount.id))),
    },
    {
      pattern: 'config/urls',
      operations: ['update', 'create'],
      handler: async (ctx) => {
        const { values: v, warnings } = parseInput(ctx, urlFields);
        const r = await config.updateUrls(ctx.mount.id, {
          issuingCertificates: v.issuing_certificates,
          crlDistributionPoints: v.crl_distribution_points,
          ocspServers: v.ocsp_servers,
          deltaCrlDistributionPoints: v.delta_crl_distribution_points,
          enableTemplating: v.enable_templating,
        });
        return jsonResult(urlsData(r.urls), warnings, r.warnings);
      },
    },
    {
      pattern: 'config/cluster',
      operations: ['read'],
      handler: async (ctx) => jsonResult(clusterData(await config.getCluster(ctx.mount.id))),
    },
    {
      pattern: 'config/cluster',
      operations: ['update', 'create'],
      handler: async (ctx) => {
        const { values: v, warnings } = parseInput(ctx, clusterFields);
        return jsonResult(
          clusterData(await config.updateCluster(ctx.mount.id, { path: v.path, aiaPath: v.aia_path })),
          warnings,
        );
      },
    },
  ];
}
