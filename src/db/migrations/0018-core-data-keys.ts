import type { Kysely } from 'kysely';

/**
 * The data keys that encrypt stored state content and output values, each sealed by the
 * master key (the content names its key by id; see secrets/content-cipher.ts).
 */
export function coreDataKeysMigration() {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .createTable('data_keys')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('sealed', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
    },
  };
}
