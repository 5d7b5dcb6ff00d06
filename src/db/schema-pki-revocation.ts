/** Tables of PKI revocation (migration 0006). */
export interface PkiRevocationTables {
  pki_crls: PkiCrlsTable;
}

/** The CRL an issuer currently serves, one row per kind (complete, delta). */
export interface PkiCrlsTable {
  mount_id: string;
  issuer_id: string;
  kind: 'complete' | 'delta';
  /** Grows on every build of either kind for the issuer's CRL (one sequence per issuer). */
  crl_number: number;
  /** Delta CRLs: the number of the complete CRL they update; null on complete CRLs. */
  base_crl_number: number | null;
  this_update: string;
  next_update: string;
  /**
   * Complete CRLs: revocations recorded at or after this instant may be missing from it,
   * so a delta CRL over it lists every revocation from here on.
   */
  watermark: string;
  entry_count: number;
  der: Buffer;
  created_at: string;
}
