import type { Kysely } from 'kysely';

/**
 * Auth methods mounted under auth/ (AppRole, JWT/OIDC, TLS certificates): the mount table,
 * one row per role (AppRole roles, JWT roles, trusted certificates), AppRole secret ids
 * (hashes only) and, on tokens, what a login adds: bound CIDRs and a maximum TTL.
 */
export function pkiAuthMethodsMigration() {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .createTable('pki_auth_mounts')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('path', 'text', (c) => c.notNull().unique())
        .addColumn('type', 'text', (c) => c.notNull())
        .addColumn('description', 'text', (c) => c.notNull())
        .addColumn('default_lease_ttl', 'integer', (c) => c.notNull())
        .addColumn('max_lease_ttl', 'integer', (c) => c.notNull())
        .addColumn('config', 'text', (c) => c.notNull())
        .addColumn('options', 'text', (c) => c.notNull())
        .addColumn('local', 'integer', (c) => c.notNull())
        .addColumn('seal_wrap', 'integer', (c) => c.notNull())
        .addColumn('method_config', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();

      await db.schema
        .createTable('pki_auth_roles')
        .addColumn('mount_id', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('role_id', 'text')
        .addColumn('data', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('pki_auth_roles_pkey', ['mount_id', 'name'])
        .execute();
      await db.schema
        .createIndex('pki_auth_roles_role_id_uq')
        .on('pki_auth_roles')
        .columns(['mount_id', 'role_id'])
        .unique()
        .execute();

      await db.schema
        .createTable('pki_auth_secret_ids')
        .addColumn('secret_hash', 'text', (c) => c.primaryKey())
        .addColumn('accessor', 'text', (c) => c.notNull().unique())
        .addColumn('mount_id', 'text', (c) => c.notNull())
        .addColumn('role_name', 'text', (c) => c.notNull())
        .addColumn('uses_left', 'integer')
        .addColumn('num_uses', 'integer', (c) => c.notNull())
        .addColumn('ttl', 'integer', (c) => c.notNull())
        .addColumn('expires_at', 'text')
        .addColumn('cidr_list', 'text', (c) => c.notNull())
        .addColumn('token_bound_cidrs', 'text', (c) => c.notNull())
        .addColumn('metadata', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('pki_auth_secret_ids_role_idx')
        .on('pki_auth_secret_ids')
        .columns(['mount_id', 'role_name'])
        .execute();

      await db.schema.alterTable('pki_tokens').addColumn('bound_cidrs', 'text').execute();
      await db.schema
        .alterTable('pki_tokens')
        .addColumn('max_ttl', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
    },
  };
}
