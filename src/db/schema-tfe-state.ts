/** Tables of the state versions module (created by migration 0004-tfe-state-versions). */
export interface TfeStateTables {
  tfe_state_versions: TfeStateVersionsTable;
  tfe_state_heads: TfeStateHeadsTable;
  tfe_state_version_outputs: TfeStateVersionOutputsTable;
  tfe_state_blobs: TfeStateBlobsTable;
}

export interface TfeStateVersionsTable {
  id: string;
  workspace_id: string;
  /** Position in the workspace's history: 1, 2, 3 … without gaps. */
  seq: number;
  serial: number;
  lineage: string | null;
  md5: string;
  status: string;
  size: number | null;
  state_format_version: number | null;
  terraform_version: string | null;
  state_sha256: string | null;
  json_sha256: string | null;
  /** SHA-256 of the one-time upload secret (the lookup key of the upload URL). */
  upload_token_hash: string | null;
  /** The same secret sealed with the SecretBox, so reads can show the URL again. */
  upload_token_sealed: string | null;
  json_upload_token_hash: string | null;
  json_upload_token_sealed: string | null;
  upload_expires_at: string | null;
  resources_processed: number;
  /** Why extraction could not read the content (the version is still marked processed). */
  processing_error?: string | null;
  /** JSON text. */
  resources: string | null;
  modules: string | null;
  providers: string | null;
  billable_rum_count: number | null;
  created_by_kind: string | null;
  created_by_id: string | null;
  run_id: string | null;
  rollback_of_id: string | null;
  delete_older_than_n_days: number | null;
  soft_deleted_at: string | null;
  /**
   * Soft-deleted with an explicit delete-older-than-n-days: when the data is purged (otherwise the configured days
   * apply).
   */
  purge_after: string | null;
  created_at: string;
}

export interface TfeStateHeadsTable {
  workspace_id: string;
  current_id: string | null;
  head_seq: number;
  /** Rows of the workspace in tfe_state_versions (head_seq minus those retention removed). */
  version_count: number;
}

export interface TfeStateVersionOutputsTable {
  id: string;
  state_version_id: string;
  position: number;
  name: string;
  sensitive: number;
  type: string;
  /** JSON text of the cty type, or null. */
  detailed_type: string | null;
  /** JSON text of the value. */
  value: string | null;
}

export interface TfeStateBlobsTable {
  sha256: string;
  size: number;
  deleting: number;
  updated_at: string;
  /** The bytes of a blob stored inline (migration 0011); null when they are in the blob store. */
  data?: Buffer | null;
}
