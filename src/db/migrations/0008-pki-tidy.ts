import type { Kysely } from 'kysely';
import type { MigrationContext } from '../migrate.js';

/**
 * One row per PKI mount for tidy: the auto-tidy configuration, the time the last tidy
 * finished (which auto-tidy counts its interval from), and the status of the current or
 * latest run. The row is shared by every node, so a run started on one node is seen (and
 * can be cancelled) from any other, and the conditional `state` update lets only one run
 * per mount start.
 */
export function pkiTidyMigration(_ctx: MigrationContext) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .createTable('pki_tidy')
        .addColumn('mount_id', 'text', (c) => c.primaryKey())
        .addColumn('auto_config', 'text')
        .addColumn('auto_enabled', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('last_auto_tidy_at', 'text')
        .addColumn('state', 'text', (c) => c.notNull().defaultTo('Inactive'))
        .addColumn('run_id', 'text')
        .addColumn('job_id', 'text')
        .addColumn('params', 'text')
        .addColumn('started_at', 'text')
        .addColumn('finished_at', 'text')
        .addColumn('message', 'text')
        .addColumn('error', 'text')
        .addColumn('counts', 'text', (c) => c.notNull().defaultTo('{}'))
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('pki_tidy_auto_enabled_idx').on('pki_tidy').column('auto_enabled').execute();
    },
  };
}
