/** Auth method tables (migration 0021-pki-auth-methods). Instants are ISO strings, JSON columns are text. */
export interface PkiAuthTables {
  pki_auth_mounts: PkiAuthMountsTable;
  pki_auth_roles: PkiAuthRolesTable;
  pki_auth_secret_ids: PkiAuthSecretIdsTable;
}

export interface PkiAuthMountsTable {
  /** UUID; roles and secret ids are keyed by it, so a re-enabled path never sees old data. */
  id: string;
  /** Below auth/, without slashes at either end: "approle", "ci/jwt". */
  path: string;
  /** approle, jwt (also mounted as oidc) or cert. */
  type: string;
  description: string;
  default_lease_ttl: number;
  max_lease_ttl: number;
  /** JSON: tunables kept verbatim. */
  config: string;
  options: string;
  local: number;
  seal_wrap: number;
  /** JSON: the method's own configuration (auth/jwt/config), or null. */
  method_config: string | null;
  created_at: string;
  updated_at: string;
}

export interface PkiAuthRolesTable {
  mount_id: string;
  name: string;
  /** AppRole's role_id (unique per mount); null for other methods. */
  role_id: string | null;
  /** JSON of the role as the method defines it. */
  data: string;
  created_at: string;
  updated_at: string;
}

export interface PkiAuthSecretIdsTable {
  /** SHA-256 hex of the mount id and the secret id; the secret id itself is never stored. */
  secret_hash: string;
  accessor: string;
  mount_id: string;
  role_name: string;
  /** Logins left; null for unlimited. A login takes one with a conditional update. */
  uses_left: number | null;
  num_uses: number;
  ttl: number;
  expires_at: string | null;
  /** JSON arrays. */
  cidr_list: string;
  token_bound_cidrs: string;
  /** JSON map of strings. */
  metadata: string;
  created_at: string;
  updated_at: string;
}
