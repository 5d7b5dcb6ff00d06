import type { Kysely } from 'kysely';
import { binaryType } from '../dialect.js';
import type { MigrationContext } from '../migrate.js';

/**
 * Small state files kept inside the database: `tfe_state_blobs.data` holds the bytes of
 * a blob written inline with the version that references it (one commit makes both
 * durable), and is null for blobs whose bytes are in the blob store.
 */
export function tfeInlineStateMigration(ctx: MigrationContext) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema.alterTable('tfe_state_blobs').addColumn('data', binaryType(ctx.kind)).execute();
    },
  };
}
