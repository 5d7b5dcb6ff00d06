import type { Kysely } from 'kysely';

/** Audit devices enabled through sys/audit: one row each, shared by every node; the HMAC salt sealed. */
export function auditDevicesMigration() {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .createTable('audit_devices')
        .addColumn('path', 'text', (c) => c.primaryKey())
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('description', 'text', (c) => c.notNull())
        .addColumn('options', 'text', (c) => c.notNull())
        .addColumn('local', 'integer', (c) => c.notNull())
        .addColumn('salt', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
    },
  };
}
