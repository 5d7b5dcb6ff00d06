/**
 * Mount-wide authority settings: global AIA URLs (config/urls) and the cluster paths
 * used to expand URL templates (config/cluster).
 * https://developer.hashicorp.com/vault/api-docs/secret/pki#set-urls
 * https://developer.hashicorp.com/vault/api-docs/secret/pki#set-cluster-configuration
 */
import { invalid } from '../../shared/errors.js';

export interface AiaUrls {
  issuingCertificates: string[];
  crlDistributionPoints: string[];
  ocspServers: string[];
  deltaCrlDistributionPoints: string[];
  enableTemplating: boolean;
}

export interface ClusterConfig {
  path: string;
  aiaPath: string;
}

export const EMPTY_AIA: Readonly<AiaUrls> = Object.freeze({
  issuingCertificates: [],
  crlDistributionPoints: [],
  ocspServers: [],
  deltaCrlDistributionPoints: [],
  enableTemplating: false,
});

const TEMPLATE_TOKENS = ['{{issuer_id}}', '{{cluster_path}}', '{{cluster_aia_path}}'];

/** Whether the string parses as an absolute URL with a scheme and a host. */
export function isAbsoluteUrl(text: string): boolean {
  try {
    const u = new URL(text);
    return u.protocol.length > 1 && u.host.length > 0;
  } catch {
    return false;
  }
}

/**
 * Checks AIA lists as Vault does when they are written: without templating each URL must
 * be absolute and free of template tokens; with templating the check happens at use.
 */
export function validateAiaUrls(urls: AiaUrls): void {
  if (urls.enableTemplating) return;
  const lists: [string, string[]][] = [
    ['issuing_certificates', urls.issuingCertificates],
    ['crl_distribution_points', urls.crlDistributionPoints],
    ['ocsp_servers', urls.ocspServers],
    ['delta_crl_distribution_points', urls.deltaCrlDistributionPoints],
  ];
  for (const [field, list] of lists) {
    for (const url of list) {
      if (!isAbsoluteUrl(url) || TEMPLATE_TOKENS.some((t) => url.includes(t))) {
        throw invalid(`invalid URL found in Authority Information Access (AIA) parameter ${field}: ${url}`, field);
      }
    }
  }
}

export function validateClusterConfig(c: ClusterConfig): void {
  if (c.path !== '' && !isAbsoluteUrl(c.path)) throw invalid(`failed to parse path as a URL: ${c.path}`, 'path');
  if (c.aiaPath !== '' && !isAbsoluteUrl(c.aiaPath))
    throw invalid(`failed to parse aia_path as a URL: ${c.aiaPath}`, 'aia_path');
}

/** True when all three certificate-facing lists are empty (delta URLs alone do not count). */
export function aiaIsEmpty(urls: AiaUrls): boolean {
  return (
    urls.issuingCertificates.length === 0 && urls.crlDistributionPoints.length === 0 && urls.ocspServers.length === 0
  );
}

/**
 * Expands `{{issuer_id}}`, `{{cluster_path}}` and `{{cluster_aia_path}}` when templating is
 * on; a token without a value is an error, as Vault refuses to issue with a broken URL.
 */
export function expandAiaUrls(urls: AiaUrls, vars: { issuerId: string; cluster: ClusterConfig }): AiaUrls {
  if (!urls.enableTemplating) return urls;
  const expand = (u: string): string => {
    let out = u;
    if (out.includes('{{cluster_path}}')) {
      if (vars.cluster.path === '')
        throw invalid('unable to template AIA URLs as we lack local cluster address information (path)');
      out = out.replaceAll('{{cluster_path}}', vars.cluster.path);
    }
    if (out.includes('{{cluster_aia_path}}')) {
      if (vars.cluster.aiaPath === '')
        throw invalid('unable to template AIA URLs as we lack local cluster address information (aia_path)');
      out = out.replaceAll('{{cluster_aia_path}}', vars.cluster.aiaPath);
    }
    out = out.replaceAll('{{issuer_id}}', vars.issuerId);
    if (!isAbsoluteUrl(out))
      throw invalid(`invalid URL found in Authority Information Access (AIA) after templating: ${out}`);
    return out;
  };
  return {
    issuingCertificates: urls.issuingCertificates.map(expand),
    crlDistributionPoints: urls.crlDistributionPoints.map(expand),
    ocspServers: urls.ocspServers.map(expand),
    deltaCrlDistributionPoints: urls.deltaCrlDistributionPoints.map(expand),
    enableTemplating: false,
  };
}

/** Whether templated URLs could be expanded now (for the warning on write). */
export function templatingWarning(urls: AiaUrls, cluster: ClusterConfig): string | undefined {
  if (!urls.enableTemplating) return undefined;
  try {
    expandAiaUrls(urls, { issuerId: '00000000-0000-0000-0000-000000000000', cluster });
    return undefined;
  } catch (err) {
    return `issuance may fail: ${(err as Error).message}`;
  }
}
