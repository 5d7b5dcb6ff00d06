/**
 * Issuers: CA certificates of a mount, optionally linked to a key, with their usage,
 * chain, leaf NotAfter behaviour and per-issuer AIA URLs.
 * https://developer.hashicorp.com/vault/api-docs/secret/pki#read-issuer
 */
import { invalid } from '../../shared/errors.js';
import { validateAiaUrls } from '../config/mount-config.js';
import type { AiaUrls } from '../config/mount-config.js';
import { validateObjectName } from '../keys/key.js';
import type { KeyType } from '../keys/key.js';

export type LeafNotAfterBehavior = 'err' | 'truncate' | 'permit';
export type IssuerUsage = 'read-only' | 'issuing-certificates' | 'crl-signing' | 'ocsp-signing';

export const ALL_USAGES: readonly IssuerUsage[] = ['crl-signing', 'issuing-certificates', 'ocsp-signing', 'read-only'];

export interface PkiIssuer {
  id: string;
  mountId: string;
  /** '' when unnamed. */
  name: string;
  /** '' when the mount holds no key for this certificate. */
  keyId: string;
  certificateDer: Buffer;
  certificateSha256: string;
  /** Lowercase hex serial. */
  serial: string;
  subjectDer: Buffer;
  issuerDer: Buffer;
  publicKeySha256: string;
  /** Type of the certificate's public key. */
  keyType: KeyType;
  /** Lowercase hex. */
  subjectKeyId: string;
  /** Lowercase hex, '' when absent. */
  authorityKeyId: string;
  notBefore: Date;
  notAfter: Date;
  leafNotAfterBehavior: LeafNotAfterBehavior;
  usage: IssuerUsage[];
  /** Issuer ids set by the operator, or null for automatic chain building. */
  manualChain: string[] | null;
  /** Computed chain: this issuer's id, then its parents up to the root. */
  caChain: string[];
  revocationSignatureAlgorithm: string;
  /** Per-issuer AIA; used instead of config/urls when any of its three lists is set. */
  aia: AiaUrls;
  revokedAt: Date | null;
  createdAt: Date;
  seq: number;
}

export function parseLeafNotAfterBehavior(v: string): LeafNotAfterBehavior {
  const s = v.trim().toLowerCase();
  if (s === 'err' || s === 'truncate' || s === 'permit') return s;
  throw invalid(
    `Unknown value for field 'leaf_not_after_behavior'. Possible values are 'err', 'truncate', 'permit'. Got ${v}`,
    'leaf_not_after_behavior',
  );
}

/** Parses usage names; `read-only` is always implied. Sorted alphabetically as current Vault shows them. */
export function parseUsage(names: readonly string[]): IssuerUsage[] {
  const set = new Set<IssuerUsage>(['read-only']);
  for (const raw of names) {
    const n = raw.trim().toLowerCase();
    if (!(ALL_USAGES as readonly string[]).includes(n)) {
      throw invalid(`Unknown issuer usage: ${raw}. Possible values are: ${ALL_USAGES.join(', ')}`, 'usage');
    }
    set.add(n as IssuerUsage);
  }
  return ALL_USAGES.filter((u) => set.has(u));
}

export const formatUsage = (usage: readonly IssuerUsage[]): string => [...usage].sort().join(',');

export const hasUsage = (issuer: Pick<PkiIssuer, 'usage'>, u: IssuerUsage): boolean => issuer.usage.includes(u);

/** Go-style signature algorithm names an issuer may sign CRLs with, by key type. */
const REVOCATION_ALGS: Readonly<Record<KeyType, readonly string[]>> = {
  rsa: ['SHA256WithRSA', 'SHA384WithRSA', 'SHA512WithRSA', 'SHA256WithRSAPSS', 'SHA384WithRSAPSS', 'SHA512WithRSAPSS'],
  ec: ['ECDSAWithSHA256', 'ECDSAWithSHA384', 'ECDSAWithSHA512'],
  ed25519: ['PureEd25519'],
};

/** Canonical spelling of a revocation signature algorithm, checked against the issuer key type ('' = key default). */
export function parseRevocationSignatureAlgorithm(v: string, keyType: KeyType): string {
  const s = v.trim();
  if (s === '') return '';
  const all = Object.values(REVOCATION_ALGS).flat();
  const canonical = all.find((a) => a.toLowerCase() === s.toLowerCase());
  if (!canonical) throw invalid(`Unknown signature algorithm value: ${v}`, 'revocation_signature_algorithm');
  if (!REVOCATION_ALGS[keyType].includes(canonical)) {
    throw invalid(`Invalid signature algorithm ${canonical} for ${keyType} key`, 'revocation_signature_algorithm');
  }
  return canonical;
}

/** What chain building needs to know of an issuer. */
export interface ChainNode {
  id: string;
  subjectDer: Buffer;
  issuerDer: Buffer;
  subjectKeyId: string;
  authorityKeyId: string;
  manualChain: string[] | null;
  seq: number;
}

/**
 * Builds every issuer's `ca_chain`: itself, then its parents found among the mount's
 * issuers (parent subject = child issuer name, AKI = parent SKI when present, and the
 * signature verifies), breadth first up to the roots, each issuer once. A manual chain
 * replaces the computed one.
 */
export function buildChains(
  nodes: readonly ChainNode[],
  verifies: (child: ChainNode, parent: ChainNode) => boolean,
): Map<string, string[]> {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const parentsCache = new Map<string, ChainNode[]>();
  const parentsOf = (n: ChainNode): ChainNode[] => {
    let p = parentsCache.get(n.id);
    if (!p) {
      p = nodes
        .filter((c) => c.id !== n.id && c.subjectDer.equals(n.issuerDer))
        .filter((c) => n.authorityKeyId === '' || c.subjectKeyId === '' || c.subjectKeyId === n.authorityKeyId)
        .filter((c) => verifies(n, c))
        .sort((a, b) => a.seq - b.seq);
      parentsCache.set(n.id, p);
    }
    return p;
  };
  const out = new Map<string, string[]>();
  for (const n of nodes) {
    if (n.manualChain && n.manualChain.length > 0) {
      out.set(
        n.id,
        n.manualChain.filter((id) => byId.has(id)),
      );
      continue;
    }
    const chain = [n.id];
    const seen = new Set(chain);
    const queue = [n];
    while (queue.length > 0) {
      const cur = queue.shift()!;
      for (const p of parentsOf(cur)) {
        if (seen.has(p.id)) continue;
        seen.add(p.id);
        chain.push(p.id);
        queue.push(p);
      }
    }
    out.set(n.id, chain);
  }
  return out;
}

/** Editable issuer fields; undefined = unchanged. */
export interface IssuerUpdate {
  issuerName?: string;
  leafNotAfterBehavior?: string;
  /** References, resolved by the service. */
  manualChain?: string[];
  usage?: string[];
  revocationSignatureAlgorithm?: string;
  issuingCertificates?: string[];
  crlDistributionPoints?: string[];
  ocspServers?: string[];
  deltaCrlDistributionPoints?: string[];
  enableAiaUrlTemplating?: boolean;
}

/**
 * Applies an update to an issuer's editable fields (all but the manual chain, whose
 * references the service resolves). `certAllowsCrlSigning` tells whether the certificate
 * carries the CRLSign key usage, which `crl-signing` requires; a revoked issuer cannot
 * regain `issuing-certificates`.
 */
export function applyIssuerUpdate(
  current: PkiIssuer,
  patch: IssuerUpdate,
  certAllowsCrlSigning: () => boolean,
): PkiIssuer {
  const next: PkiIssuer = { ...current, aia: { ...current.aia } };
  if (patch.issuerName !== undefined) {
    validateObjectName('issuer', patch.issuerName);
    next.name = patch.issuerName;
  }
  if (patch.leafNotAfterBehavior !== undefined)
    next.leafNotAfterBehavior = parseLeafNotAfterBehavior(patch.leafNotAfterBehavior);
  if (patch.usage !== undefined) {
    next.usage = parseUsage(patch.usage);
    if (next.usage.includes('crl-signing') && !certAllowsCrlSigning()) {
      throw invalid('Unable to set crl-signing usage: the issuer certificate lacks the CRLSign key usage', 'usage');
    }
    if (
      current.revokedAt &&
      next.usage.includes('issuing-certificates') &&
      !current.usage.includes('issuing-certificates')
    ) {
      throw invalid('Unable to re-enable issuing-certificates usage on a revoked issuer', 'usage');
    }
  }
  if (patch.revocationSignatureAlgorithm !== undefined) {
    next.revocationSignatureAlgorithm = parseRevocationSignatureAlgorithm(
      patch.revocationSignatureAlgorithm,
      current.keyType,
    );
  }
  const aia = next.aia;
  if (patch.issuingCertificates !== undefined) aia.issuingCertificates = patch.issuingCertificates;
  if (patch.crlDistributionPoints !== undefined) aia.crlDistributionPoints = patch.crlDistributionPoints;
  if (patch.ocspServers !== undefined) aia.ocspServers = patch.ocspServers;
  if (patch.deltaCrlDistributionPoints !== undefined) aia.deltaCrlDistributionPoints = patch.deltaCrlDistributionPoints;
  if (patch.enableAiaUrlTemplating !== undefined) aia.enableTemplating = patch.enableAiaUrlTemplating;
  validateAiaUrls(aia);
  return next;
}
