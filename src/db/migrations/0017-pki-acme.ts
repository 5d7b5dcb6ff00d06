import type { Kysely } from 'kysely';

/**
 * The ACME server of every PKI mount (RFC 8555): accounts, orders, their authorizations and
 * challenges, the nonces already used, and external account binding keys (sealed).
 */
export function pkiAcmeMigration() {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .createTable('pki_acme_accounts')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('mount_id', 'text', (c) => c.notNull())
        .addColumn('directory', 'text', (c) => c.notNull())
        .addColumn('thumbprint', 'text', (c) => c.notNull())
        .addColumn('jwk', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('contact', 'text', (c) => c.notNull())
        .addColumn('terms_agreed', 'integer', (c) => c.notNull())
        .addColumn('eab_id', 'text')
        .addColumn('eab_created_at', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .addColumn('revoked_at', 'text')
        .execute();
      await db.schema
        .createIndex('pki_acme_accounts_thumbprint_uq')
        .on('pki_acme_accounts')
        .columns(['mount_id', 'thumbprint'])
        .unique()
        .execute();

      await db.schema
        .createTable('pki_acme_orders')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('mount_id', 'text', (c) => c.notNull())
        .addColumn('account_id', 'text', (c) => c.notNull())
        .addColumn('directory', 'text', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('identifiers', 'text', (c) => c.notNull())
        .addColumn('authz_ids', 'text', (c) => c.notNull())
        .addColumn('not_before', 'text')
        .addColumn('not_after', 'text')
        .addColumn('expires_at', 'text', (c) => c.notNull())
        .addColumn('error', 'text')
        .addColumn('replaces', 'text')
        .addColumn('cert_serial', 'text')
        .addColumn('cert_not_after', 'text')
        .addColumn('cert_chain', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('pki_acme_orders_account_idx').on('pki_acme_orders').column('account_id').execute();
      await db.schema
        .createIndex('pki_acme_orders_mount_expiry_idx')
        .on('pki_acme_orders')
        .columns(['mount_id', 'expires_at'])
        .execute();
      await db.schema
        .createIndex('pki_acme_orders_serial_idx')
        .on('pki_acme_orders')
        .columns(['mount_id', 'cert_serial'])
        .execute();

      await db.schema
        .createTable('pki_acme_authorizations')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('mount_id', 'text', (c) => c.notNull())
        .addColumn('account_id', 'text', (c) => c.notNull())
        .addColumn('order_id', 'text', (c) => c.notNull())
        .addColumn('identifier_type', 'text', (c) => c.notNull())
        .addColumn('identifier_value', 'text', (c) => c.notNull())
        .addColumn('wildcard', 'integer', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('expires_at', 'text', (c) => c.notNull())
        .addColumn('token', 'text', (c) => c.notNull())
        .addColumn('challenges', 'text', (c) => c.notNull())
        .addColumn('validation_lease_until', 'text')
        .addColumn('version', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('pki_acme_authorizations_order_idx')
        .on('pki_acme_authorizations')
        .column('order_id')
        .execute();

      await db.schema
        .createTable('pki_acme_nonces')
        .addColumn('nonce', 'text', (c) => c.primaryKey())
        .addColumn('expires_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('pki_acme_nonces_expiry_idx').on('pki_acme_nonces').column('expires_at').execute();

      await db.schema
        .createTable('pki_acme_eab')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('mount_id', 'text', (c) => c.notNull())
        .addColumn('directory', 'text', (c) => c.notNull())
        .addColumn('key_type', 'text', (c) => c.notNull())
        .addColumn('sealed_key', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('pki_acme_eab_mount_idx').on('pki_acme_eab').column('mount_id').execute();
    },
  };
}
