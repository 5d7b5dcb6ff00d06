import type { Kysely } from 'kysely';

/**
 * The state service's audit trail: who read or wrote what, with the outcome. Read by
 * organization and time (HCP's audit-trail API), newest last.
 */
export function tfeAuditTrailMigration() {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .createTable('tfe_audit_events')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('timestamp', 'text', (c) => c.notNull())
        .addColumn('organization_id', 'text', (c) => c.notNull())
        .addColumn('organization', 'text', (c) => c.notNull())
        .addColumn('workspace_id', 'text')
        .addColumn('actor_type', 'text', (c) => c.notNull())
        .addColumn('actor_id', 'text', (c) => c.notNull())
        .addColumn('actor_description', 'text', (c) => c.notNull())
        .addColumn('token_id', 'text')
        .addColumn('action', 'text', (c) => c.notNull())
        .addColumn('resource_type', 'text', (c) => c.notNull())
        .addColumn('resource_id', 'text')
        .addColumn('outcome', 'text', (c) => c.notNull())
        .addColumn('status', 'integer', (c) => c.notNull())
        .addColumn('source_ip', 'text', (c) => c.notNull())
        .addColumn('request_id', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('tfe_audit_events_org_time')
        .on('tfe_audit_events')
        .columns(['organization_id', 'timestamp', 'id'])
        .execute();
    },
  };
}
