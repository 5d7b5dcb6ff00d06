import type { Kysely } from 'kysely';
import type { MigrationContext } from '../migrate.js';

/** Tables of the PKI engine's mounts, tokens, policies and leases. */
export function pkiMigration(_ctx: MigrationContext) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .createTable('pki_mounts')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('path', 'text', (c) => c.notNull())
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
        .addColumn('default_lease_ttl', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('max_lease_ttl', 'bigint', (c) => c.notNull().defaultTo(0))
        .addColumn('config', 'text', (c) => c.notNull().defaultTo('{}'))
        .addColumn('options', 'text', (c) => c.notNull().defaultTo('{}'))
        .addColumn('local', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('seal_wrap', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('pki_mounts_path_key').on('pki_mounts').column('path').unique().execute();

      await db.schema
        .createTable('pki_policies')
        .addColumn('name', 'text', (c) => c.primaryKey())
        .addColumn('policy', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();

      await db.schema
        .createTable('pki_tokens')
        .addColumn('token_hash', 'text', (c) => c.primaryKey())
        .addColumn('accessor', 'text', (c) => c.notNull())
        .addColumn('parent_accessor', 'text')
        .addColumn('policies', 'text', (c) => c.notNull())
        .addColumn('meta', 'text')
        .addColumn('display_name', 'text', (c) => c.notNull())
        .addColumn('num_uses', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('renewable', 'integer', (c) => c.notNull())
        .addColumn('orphan', 'integer', (c) => c.notNull())
        .addColumn('ttl', 'bigint', (c) => c.notNull())
        .addColumn('explicit_max_ttl', 'bigint', (c) => c.notNull())
        .addColumn('period', 'bigint', (c) => c.notNull())
        .addColumn('path', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'text')
        .addColumn('last_renewal_at', 'text')
        .execute();
      await db.schema.createIndex('pki_tokens_accessor_key').on('pki_tokens').column('accessor').unique().execute();
      await db.schema
        .createIndex('pki_tokens_parent_accessor_idx')
        .on('pki_tokens')
        .column('parent_accessor')
        .execute();

      await db.schema
        .createTable('pki_leases')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('mount_id', 'text', (c) => c.notNull())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('data', 'text', (c) => c.notNull())
        .addColumn('token_accessor', 'text')
        .addColumn('issued_at', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('pki_leases_mount_id_idx').on('pki_leases').column('mount_id').execute();
      await db.schema.createIndex('pki_leases_token_accessor_idx').on('pki_leases').column('token_accessor').execute();
    },
  };
}
