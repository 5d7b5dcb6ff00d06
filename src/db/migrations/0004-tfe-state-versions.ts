import type { Kysely } from 'kysely';
import type { MigrationContext } from '../migrate.js';

/**
 * Tables of the state versions module.
 *
 * `tfe_state_heads` holds one row per workspace with state: the current version and the
 * last history sequence number. Every create bumps `head_seq` with one conditional
 * UPDATE, which serialises writers of one workspace on any number of PostgreSQL nodes,
 * and the unique (workspace_id, seq) index keeps the history gap-free and ordered.
 */
export function tfeStateVersionsMigration(_ctx: MigrationContext) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .createTable('tfe_state_versions')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('workspace_id', 'text', (c) => c.notNull())
        .addColumn('seq', 'integer', (c) => c.notNull())
        .addColumn('serial', 'bigint', (c) => c.notNull())
        .addColumn('lineage', 'text')
        .addColumn('md5', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('size', 'bigint')
        .addColumn('state_format_version', 'integer')
        .addColumn('terraform_version', 'text')
        .addColumn('state_sha256', 'text')
        .addColumn('json_sha256', 'text')
        .addColumn('upload_token_hash', 'text')
        .addColumn('upload_token_sealed', 'text')
        .addColumn('json_upload_token_hash', 'text')
        .addColumn('json_upload_token_sealed', 'text')
        .addColumn('upload_expires_at', 'text')
        .addColumn('resources_processed', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('processing_error', 'text')
        .addColumn('resources', 'text')
        .addColumn('modules', 'text')
        .addColumn('providers', 'text')
        .addColumn('billable_rum_count', 'integer')
        .addColumn('created_by_kind', 'text')
        .addColumn('created_by_id', 'text')
        .addColumn('run_id', 'text')
        .addColumn('rollback_of_id', 'text')
        .addColumn('delete_older_than_n_days', 'integer')
        .addColumn('soft_deleted_at', 'text')
        .addColumn('purge_after', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('tfe_state_versions_workspace_id_seq_key')
        .on('tfe_state_versions')
        .columns(['workspace_id', 'seq'])
        .unique()
        .execute();
      await db.schema
        .createIndex('tfe_state_versions_workspace_id_status_seq_idx')
        .on('tfe_state_versions')
        .columns(['workspace_id', 'status', 'seq'])
        .execute();
      await db.schema
        .createIndex('tfe_state_versions_upload_token_hash_key')
        .on('tfe_state_versions')
        .column('upload_token_hash')
        .unique()
        .execute();
      await db.schema
        .createIndex('tfe_state_versions_json_upload_token_hash_key')
        .on('tfe_state_versions')
        .column('json_upload_token_hash')
        .unique()
        .execute();
      await db.schema
        .createIndex('tfe_state_versions_state_sha256_idx')
        .on('tfe_state_versions')
        .column('state_sha256')
        .execute();
      await db.schema
        .createIndex('tfe_state_versions_json_sha256_idx')
        .on('tfe_state_versions')
        .column('json_sha256')
        .execute();
      await db.schema
        .createIndex('tfe_state_versions_created_at_idx')
        .on('tfe_state_versions')
        .column('created_at')
        .execute();
      // Finds finalized versions still waiting for extraction (the start-up backfill).
      await db.schema
        .createIndex('tfe_state_versions_resources_processed_status_idx')
        .on('tfe_state_versions')
        .columns(['resources_processed', 'status'])
        .execute();
      await db.schema
        .createIndex('tfe_state_versions_status_purge_after_idx')
        .on('tfe_state_versions')
        .columns(['status', 'purge_after'])
        .execute();

      await db.schema
        .createTable('tfe_state_heads')
        .addColumn('workspace_id', 'text', (c) => c.primaryKey())
        .addColumn('current_id', 'text')
        .addColumn('head_seq', 'integer', (c) => c.notNull())
        .addColumn('version_count', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();

      await db.schema
        .createTable('tfe_state_version_outputs')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('state_version_id', 'text', (c) => c.notNull())
        .addColumn('position', 'integer', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('sensitive', 'integer', (c) => c.notNull())
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('detailed_type', 'text')
        .addColumn('value', 'text')
        .execute();
      await db.schema
        .createIndex('tfe_state_version_outputs_state_version_id_name_key')
        .on('tfe_state_version_outputs')
        .columns(['state_version_id', 'name'])
        .unique()
        .execute();

      // Blobs this module wrote. `deleting` = 1 is a tombstone: the collector removed the
      // bytes, so a writer that finds it must store them again (see state-blob-repo).
      await db.schema
        .createTable('tfe_state_blobs')
        .addColumn('sha256', 'text', (c) => c.primaryKey())
        .addColumn('size', 'bigint', (c) => c.notNull())
        .addColumn('deleting', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
    },
  };
}
