/**
 * Issued certificates as they are stored for `cert/:serial`, `certs` and revocation
 * (reference 6.3 and 16.13), and the cert_metadata kept beside a serial (reference 12).
 */
export interface IssuedCertificate {
  mountId: string;
  /** Storage-form lowercase hex. */
  serial: string;
  issuerId: string;
  der: Buffer;
  notAfter: Date;
  createdAt: Date;
  /** The role it was issued under (certificate search filters on it). */
  role?: string;
}

export interface CertMetadata {
  mountId: string;
  serial: string;
  issuerId: string;
  role: string;
  notAfter: Date;
  /** Base64 as given. */
  metadata: string;
}

/** Lease kind of certificates issued or signed under a role (and by sign-verbatim). */
export const CERT_LEASE_KIND = 'pki-certificate';

export interface CertLeaseData {
  serial: string;
  /**
   * Only for certificates that are not stored (no_store): what revoking the lease needs to
   * record the revocation, the issuer id and the certificate as base64 DER.
   */
  issuerId?: string;
  certificate?: string;
}
