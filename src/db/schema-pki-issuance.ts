/** Tables of PKI keys, issuers, mount settings and stored certificates (migration 0005). */
export interface PkiIssuanceTables {
  pki_keys: PkiKeysTable;
  pki_issuers: PkiIssuersTable;
  pki_settings: PkiSettingsTable;
  pki_certs: PkiCertsTable;
  pki_roles: PkiRolesTable;
  pki_cert_metadata: PkiCertMetadataTable;
}

export interface PkiKeysTable {
  id: string;
  mount_id: string;
  name: string | null;
  key_type: string;
  key_bits: number;
  /** PEM private key sealed with the SecretBox under `pki-key:<id>`. */
  sealed_private_key: string;
  /** SHA-256 hex of the SubjectPublicKeyInfo, to match keys with certificates. */
  public_key_sha256: string;
  subject_key_id: string;
  created_at: string;
}

export interface PkiIssuersTable {
  id: string;
  mount_id: string;
  name: string | null;
  key_id: string | null;
  certificate_der: Buffer;
  certificate_sha256: string;
  serial: string;
  subject_der: Buffer;
  issuer_der: Buffer;
  public_key_sha256: string;
  /** Type of the certificate's public key: rsa, ec or ed25519. */
  key_type: string;
  /** Lowercase hex. */
  subject_key_id: string;
  /** Lowercase hex, '' when the certificate has none. */
  authority_key_id: string;
  not_before: string;
  not_after: string;
  leaf_not_after_behavior: string;
  /** Comma-joined usage names. */
  usage: string;
  /** JSON array of issuer ids, or null. */
  manual_chain: string | null;
  /** JSON array of issuer ids from this issuer up to its root (computed). */
  ca_chain: string;
  revocation_signature_algorithm: string;
  /**
   * JSON object: issuing_certificates, crl_distribution_points, ocsp_servers, delta_crl_distribution_points,
   * enable_templating.
   */
  aia: string;
  revoked_at: string | null;
  created_at: string;
  /** Creation order within the mount (latest issuer = highest). */
  seq: number;
}

export interface PkiSettingsTable {
  mount_id: string;
  name: string;
  /** JSON value. */
  value: string;
  updated_at: string;
}

export interface PkiCertsTable {
  mount_id: string;
  /** Lowercase hex of the minimal serial bytes. */
  serial: string;
  issuer_id: string | null;
  certificate_der: Buffer;
  not_after: string;
  revoked_at: string | null;
  revocation_issuer_id: string | null;
  created_at: string;
  /** The subject's CN ('' without one); null only where the name could not be read. */
  common_name: string | null;
  /** Lowercased CN and SANs, one a line: what certificate search matches substrings in. */
  names: string | null;
  /** The role it was issued under, null for certificates issued without one. */
  role: string | null;
}

export interface PkiRolesTable {
  mount_id: string;
  name: string;
  /** JSON object with every role field under its Vault name. */
  config: string;
  /** Grows by one on every write. */
  version: number;
  created_at: string;
  updated_at: string;
}

export interface PkiCertMetadataTable {
  mount_id: string;
  serial: string;
  issuer_id: string;
  role: string;
  not_after: string;
  /** Base64 text as the client sent it. */
  metadata: string;
}
