/** Configuration of external-policy issuance, one row per PKI mount (migration 0009). */
export interface PkiExternalPolicyTables {
  pki_external_policy: PkiExternalPolicyTable;
}

export interface PkiExternalPolicyTable {
  mount_id: string;
  /** 0 or 1. */
  enabled: number;
  /** https URL the CIEPS requests are POSTed to; '' when never set. */
  service_url: string;
  timeout_seconds: number;
  /** PEM CA certificates that verify the service; '' when the leaf bundle is used. */
  trusted_ca: string;
  /** PEM of the pinned service certificates; '' when trusted_ca is used. */
  trusted_leaf_bundle: string;
  /** PEM certificates of the client certificate for mutual TLS (no key); '' when none. */
  client_cert_bundle: string;
  /** PEM private key of the client certificate, sealed with the SecretBox; null when none. */
  sealed_client_key: string | null;
  /** When the service settings last changed (external_service_last_updated). */
  updated_at: string;
  /** Last well-formed answer of the service since the settings changed; null when none yet. */
  validated_at: string | null;
  /** Last well-formed answer of the service ever (last_successful_request). */
  last_success_at: string | null;
}
