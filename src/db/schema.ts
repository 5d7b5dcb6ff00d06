import type { Generated } from 'kysely';
import type { TfeTables } from './schema-tfe.js';
import type { PkiTables } from './schema-pki.js';
import type { TfeStateTables } from './schema-tfe-state.js';
import type { PkiIssuanceTables } from './schema-pki-issuance.js';
import type { PkiRevocationTables } from './schema-pki-revocation.js';
import type { PkiTidyTables } from './schema-pki-tidy.js';
import type { PkiExternalPolicyTables } from './schema-pki-external-policy.js';
import type { PkiAcmeTables } from './schema-pki-acme.js';
import type { PkiQuotaTables } from './schema-pki-quotas.js';
import type { PkiAuthTables } from './schema-pki-auth.js';

/**
 * Table types as both drivers return them. Instants are ISO-8601 UTC strings and
 * booleans are 0/1 integers on SQLite and PostgreSQL alike, so repos see one row type.
 * Each product keeps its tables in its own file beside this one.
 */
export interface CoreTables {
  jobs: JobsTable;
  blobs: BlobsTable;
  blob_chunks: BlobChunksTable;
  admin_tokens: AdminTokensTable;
  settings: SettingsTable;
  data_keys: DataKeysTable;
}

export interface JobsTable {
  id: string;
  kind: string;
  payload: string;
  status: 'queued' | 'running' | 'done' | 'dead';
  attempts: number;
  max_attempts: number;
  run_at: string;
  lease_until: string | null;
  locked_by: string | null;
  last_error: string | null;
  dedupe_key: string | null;
  created_at: string;
  updated_at: string;
}

/** Blobs stored inside PostgreSQL (the filesystem store keeps only files). */
export interface BlobsTable {
  sha256: string;
  size: number;
  upload_id: string;
  created_at: string;
}

export interface BlobChunksTable {
  upload_id: string;
  seq: number;
  data: Buffer;
}

/** Data keys of stored content, sealed by the master key (migration 0018). */
export interface DataKeysTable {
  id: string;
  sealed: string;
  created_at: string;
}

export interface AdminTokensTable {
  token_hash: string;
  created_at: string;
}

export interface SettingsTable {
  key: string;
  value: string;
}

export interface Database
  extends
    CoreTables,
    TfeTables,
    TfeStateTables,
    PkiTables,
    PkiIssuanceTables,
    PkiRevocationTables,
    PkiTidyTables,
    PkiExternalPolicyTables,
    PkiAcmeTables,
    PkiQuotaTables,
    PkiAuthTables {}

export type { Generated };
