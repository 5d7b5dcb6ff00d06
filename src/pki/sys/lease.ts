/**
 * Leases: secrets handed out with a lifetime (PKI certificates issued or signed under a
 * role, see docs/decisions/0007-a-lease-for-every-role-certificate.md). Revoking a lease revokes the secret through the
 * revoker registered for its kind; revoking the token that obtained it revokes it too.
 * https://developer.hashicorp.com/vault/api-docs/system/leases
 */
export interface Lease {
  /** `<mount>/<path>/<random>`, e.g. `pki/issue/web/3Fq…`. */
  id: string;
  mountId: string;
  kind: string;
  data: unknown;
  tokenAccessor: string | null;
  issuedAt: Date;
  expiresAt: Date;
}

/**
 * The keys a prefix listing shows, as Vault lists storage: the next path element after
 * the prefix, with a trailing `/` when more follows.
 */
export function leaseListKeys(ids: readonly string[], prefix: string): string[] {
  const keys = new Set<string>();
  for (const id of ids) {
    if (!id.startsWith(prefix)) continue;
    const rest = id.slice(prefix.length);
    const slash = rest.indexOf('/');
    keys.add(slash < 0 ? rest : rest.slice(0, slash + 1));
  }
  return [...keys].filter((k) => k !== '').sort();
}

export function leaseTtl(l: Pick<Lease, 'expiresAt'>, now: Date): number {
  return Math.max(0, Math.floor((l.expiresAt.getTime() - now.getTime()) / 1000));
}

/** The lease fields of a response envelope: the id and the whole lifetime in seconds. */
export function leaseEnvelope(l: Pick<Lease, 'id' | 'issuedAt' | 'expiresAt'>): {
  leaseId: string;
  leaseDuration: number;
} {
  return {
    leaseId: l.id,
    leaseDuration: Math.max(0, Math.floor((l.expiresAt.getTime() - l.issuedAt.getTime()) / 1000)),
  };
}
