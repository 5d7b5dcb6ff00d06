import type { Kysely } from 'kysely';

/**
 * Rate-limit quotas (sys/quotas/rate-limit) and the per-window counts through which nodes sharing a PostgreSQL
 * database hold one limit between them. The quota configuration (sys/quotas/config) is a row of `settings`.
 */
export function pkiQuotasMigration() {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .createTable('vault_quotas')
        .addColumn('name', 'text', (c) => c.primaryKey())
        .addColumn('path', 'text', (c) => c.notNull())
        .addColumn('rate', 'double precision', (c) => c.notNull())
        .addColumn('interval_seconds', 'integer', (c) => c.notNull())
        .addColumn('block_interval_seconds', 'integer', (c) => c.notNull())
        .addColumn('inheritable', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('vault_quota_usage')
        .addColumn('quota_name', 'text', (c) => c.notNull())
        .addColumn('client', 'text', (c) => c.notNull())
        .addColumn('window_start', 'bigint', (c) => c.notNull())
        .addColumn('count', 'integer', (c) => c.notNull())
        .addPrimaryKeyConstraint('vault_quota_usage_pk', ['quota_name', 'client', 'window_start'])
        .execute();
      await db.schema
        .createIndex('vault_quota_usage_window_idx')
        .on('vault_quota_usage')
        .column('window_start')
        .execute();
    },
  };
}
