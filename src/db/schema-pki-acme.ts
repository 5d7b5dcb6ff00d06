/** The ACME tables (migration 0017-pki-acme). Instants are ISO strings, JSON columns are text. */
export interface PkiAcmeTables {
  pki_acme_accounts: PkiAcmeAccountsTable;
  pki_acme_orders: PkiAcmeOrdersTable;
  pki_acme_authorizations: PkiAcmeAuthorizationsTable;
  pki_acme_nonces: PkiAcmeNoncesTable;
  pki_acme_eab: PkiAcmeEabTable;
}

export interface PkiAcmeAccountsTable {
  id: string;
  mount_id: string;
  /** The directory the account was created in, relative to the mount: `acme/`, `roles/web/acme/`… */
  directory: string;
  /** RFC 7638 thumbprint of the account key (base64url), unique per mount. */
  thumbprint: string;
  /** The account's public JWK as JSON. */
  jwk: string;
  /** valid, deactivated or revoked. */
  status: string;
  /** JSON array of contact URLs. */
  contact: string;
  terms_agreed: number;
  eab_id: string | null;
  eab_created_at: string | null;
  created_at: string;
  updated_at: string;
  revoked_at: string | null;
}

export interface PkiAcmeOrdersTable {
  id: string;
  mount_id: string;
  account_id: string;
  directory: string;
  /** pending, ready, processing, valid or invalid. */
  status: string;
  /** JSON array of {type, value}. */
  identifiers: string;
  /** JSON array of authorization ids, in the order of the identifiers. */
  authz_ids: string;
  not_before: string | null;
  not_after: string | null;
  expires_at: string;
  /** JSON problem of an invalid order. */
  error: string | null;
  /** ARI: the certificate id this order replaces. */
  replaces: string | null;
  cert_serial: string | null;
  cert_not_after: string | null;
  /** PEM of the certificate followed by its issuer chain. */
  cert_chain: string | null;
  created_at: string;
  updated_at: string;
}

export interface PkiAcmeAuthorizationsTable {
  id: string;
  mount_id: string;
  account_id: string;
  order_id: string;
  /** dns or ip. */
  identifier_type: string;
  identifier_value: string;
  wildcard: number;
  /** pending, valid, invalid, deactivated, expired or revoked. */
  status: string;
  expires_at: string;
  /** The challenge token (shared by the authorization's challenges). */
  token: string;
  /** JSON array of {type, status, validated, error, attempts}. */
  challenges: string;
  /** While a validation runs: until when the node running it holds it. */
  validation_lease_until: string | null;
  /** Bumped by every change: conditional updates compare it. */
  version: number;
  created_at: string;
  updated_at: string;
}

export interface PkiAcmeNoncesTable {
  /** A nonce already used. */
  nonce: string;
  expires_at: string;
}

export interface PkiAcmeEabTable {
  id: string;
  mount_id: string;
  /** The directory the key is bound to, relative to the mount. */
  directory: string;
  key_type: string;
  /** The HMAC key, sealed with the SecretBox. */
  sealed_key: string;
  created_at: string;
}
