/** Tables of the PKI engine's plumbing: mounts, ACL policies, tokens and leases. */
export interface PkiTables {
  pki_mounts: PkiMountsTable;
  pki_policies: PkiPoliciesTable;
  pki_tokens: PkiTokensTable;
  pki_leases: PkiLeasesTable;
}

export interface PkiMountsTable {
  /** UUID; other PKI tables key their rows by it, so a re-enabled path never sees old data. */
  id: string;
  /** Without slashes at either end: "pki", "pki/int". */
  path: string;
  type: string;
  description: string;
  /** Seconds; 0 means the system value. */
  default_lease_ttl: number;
  max_lease_ttl: number;
  /** JSON: tunable settings kept verbatim (header lists, listing_visibility, ...). */
  config: string;
  /** JSON map of mount options. */
  options: string;
  local: number;
  seal_wrap: number;
  created_at: string;
  updated_at: string;
}

export interface PkiPoliciesTable {
  /** Lowercased. `root` is never stored; `default` is stored only once edited. */
  name: string;
  policy: string;
  created_at: string;
  updated_at: string;
}

export interface PkiTokensTable {
  /** SHA-256 hex of the token; the token itself is never stored. */
  token_hash: string;
  accessor: string;
  /** Accessor of the parent token; null for orphans and children of the admin token. */
  parent_accessor: string | null;
  /** JSON array of policy names. */
  policies: string;
  /** JSON map of string metadata, or null. */
  meta: string | null;
  display_name: string;
  num_uses: number;
  renewable: number;
  orphan: number;
  /** Seconds the token was created with (0 = no expiry). */
  ttl: number;
  explicit_max_ttl: number;
  period: number;
  path: string;
  created_at: string;
  /** Null: never expires. */
  expires_at: string | null;
  last_renewal_at: string | null;
  /** JSON array of CIDRs the token may be used from (tokens made by a login), or null. */
  bound_cidrs: string | null;
  /** Renewals never take the token past created_at + max_ttl (0: the system maximum). */
  max_ttl: number;
}

export interface PkiLeasesTable {
  /** `<mount>/<path>/<random>`, as Vault shapes lease ids. */
  id: string;
  mount_id: string;
  /** Which revoker handles it (e.g. a certificate lease). */
  kind: string;
  /** JSON given by the module that created the lease. */
  data: string;
  /** Accessor of the token that obtained the secret; revoking that token revokes the lease. */
  token_accessor: string | null;
  issued_at: string;
  expires_at: string;
}
