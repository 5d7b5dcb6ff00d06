/** Vault's rate-limit quotas (migration 0030-pki-quotas). */
export interface PkiQuotaTables {
  vault_quotas: VaultQuotasTable;
  vault_quota_usage: VaultQuotaUsageTable;
}

export interface VaultQuotasTable {
  name: string;
  /** Relative to /v1, no slashes at either end; '' for the global quota. */
  path: string;
  rate: number;
  interval_seconds: number;
  block_interval_seconds: number;
  /** 0/1 */
  inheritable: number;
  created_at: string;
  updated_at: string;
}

/** Requests admitted per quota, client and window, summed over the nodes that share the database. */
export interface VaultQuotaUsageTable {
  quota_name: string;
  client: string;
  /** Milliseconds since the epoch at which the window began. */
  window_start: number;
  count: number;
}
