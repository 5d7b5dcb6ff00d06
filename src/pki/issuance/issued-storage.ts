import type { Clock } from '../../shared/clock.js';
import { CERT_LEASE_KIND } from '../certs/cert.js';
import type { CertMetadata } from '../certs/cert.js';
import type { CertService, InTransaction } from '../certs/cert-service.js';
import type { BuiltCertificate } from '../crypto/cert-builder.js';
import type { MountInfo } from '../pki-route.js';
import type { LeaseService } from '../sys/lease-service.js';

export interface StoreIssuedInput {
  mount: MountInfo;
  /** Path relative to the mount, for the lease id (e.g. `sign-verbatim/web`). */
  path: string;
  built: BuiltCertificate;
  issuerId: string;
  /** no_store: the certificate itself is not kept (its metadata still is). */
  store: boolean;
  /** Attach a lease (in the certificate's transaction); only honoured when the certificate is stored. */
  lease: boolean;
  metadata: { role: string; value: string } | undefined;
  tokenAccessor: string | undefined;
}

/**
 * Records an issued certificate the way reference 16.13 and 12 describe: the certificate
 * unless no_store, a lease with it when asked (both in one transaction, so a lease exists
 * exactly when its certificate does), and cert_metadata beside the serial even when the
 * certificate itself is not stored.
 */
export async function storeIssued(
  deps: { certs: CertService; leases: LeaseService; clock: Clock },
  input: StoreIssuedInput,
): Promise<{ leaseId: string; leaseDuration: number } | undefined> {
  const { built, mount } = input;
  const now = deps.clock.now();
  const metadata: CertMetadata | undefined = input.metadata
    ? { mountId: mount.id, serial: built.serialHex, issuerId: input.issuerId, role: input.metadata.role, notAfter: built.notAfter, metadata: input.metadata.value }
    : undefined;
  if (!input.store) {
    if (metadata) await deps.certs.storeMetadata(metadata);
    return undefined;
  }
  let lease: { leaseId: string; leaseDuration: number } | undefined;
  const withLease: InTransaction | undefined = input.lease
    ? async (tx) => {
        lease = await deps.leases.create(
          {
            mount, path: input.path, kind: CERT_LEASE_KIND, data: { serial: built.serialHex },
            ttlSeconds: Math.floor((built.notAfter.getTime() - now.getTime()) / 1000), tokenAccessor: input.tokenAccessor,
          },
          tx,
        );
      }
    : undefined;
  await deps.certs.store({ mountId: mount.id, serial: built.serialHex, issuerId: input.issuerId, der: built.der, notAfter: built.notAfter, createdAt: now }, metadata, withLease);
  return lease;
}
