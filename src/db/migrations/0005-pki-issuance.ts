import type { Kysely } from 'kysely';
import { binaryType } from '../dialect.js';
import type { MigrationContext } from '../migrate.js';

/**
 * Tables of PKI keys, issuers, per-mount settings and stored certificates. Everything is
 * scoped by the mount id, so two mounts never see each other's keys, issuers or serials.
 */
export function pkiIssuanceMigration(ctx: MigrationContext) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .createTable('pki_keys')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('mount_id', 'text', (c) => c.notNull())
        .addColumn('name', 'text')
        .addColumn('key_type', 'text', (c) => c.notNull())
        .addColumn('key_bits', 'integer', (c) => c.notNull())
        .addColumn('sealed_private_key', 'text', (c) => c.notNull())
        .addColumn('public_key_sha256', 'text', (c) => c.notNull())
        .addColumn('subject_key_id', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('pki_keys_mount_id_name_key')
        .on('pki_keys')
        .columns(['mount_id', 'name'])
        .unique()
        .execute();
      await db.schema
        .createIndex('pki_keys_mount_id_public_key_sha256_key')
        .on('pki_keys')
        .columns(['mount_id', 'public_key_sha256'])
        .unique()
        .execute();

      await db.schema
        .createTable('pki_issuers')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('mount_id', 'text', (c) => c.notNull())
        .addColumn('name', 'text')
        .addColumn('key_id', 'text', (c) => c.references('pki_keys.id'))
        .addColumn('certificate_der', binaryType(ctx.kind), (c) => c.notNull())
        .addColumn('certificate_sha256', 'text', (c) => c.notNull())
        .addColumn('serial', 'text', (c) => c.notNull())
        .addColumn('subject_der', binaryType(ctx.kind), (c) => c.notNull())
        .addColumn('issuer_der', binaryType(ctx.kind), (c) => c.notNull())
        .addColumn('public_key_sha256', 'text', (c) => c.notNull())
        .addColumn('key_type', 'text', (c) => c.notNull())
        .addColumn('subject_key_id', 'text', (c) => c.notNull())
        .addColumn('authority_key_id', 'text', (c) => c.notNull())
        .addColumn('not_before', 'text', (c) => c.notNull())
        .addColumn('not_after', 'text', (c) => c.notNull())
        .addColumn('leaf_not_after_behavior', 'text', (c) => c.notNull())
        .addColumn('usage', 'text', (c) => c.notNull())
        .addColumn('manual_chain', 'text')
        .addColumn('ca_chain', 'text', (c) => c.notNull())
        .addColumn('revocation_signature_algorithm', 'text', (c) => c.notNull())
        .addColumn('aia', 'text', (c) => c.notNull())
        .addColumn('revoked_at', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('seq', 'integer', (c) => c.notNull())
        .execute();
      await db.schema
        .createIndex('pki_issuers_mount_id_name_key')
        .on('pki_issuers')
        .columns(['mount_id', 'name'])
        .unique()
        .execute();
      await db.schema
        .createIndex('pki_issuers_mount_id_certificate_sha256_key')
        .on('pki_issuers')
        .columns(['mount_id', 'certificate_sha256'])
        .unique()
        .execute();
      await db.schema.createIndex('pki_issuers_key_id_idx').on('pki_issuers').column('key_id').execute();

      // Mount-wide settings (default issuer and key, AIA URLs, cluster paths, CRL config):
      // one row per setting so each can be written conditionally on its own.
      await db.schema
        .createTable('pki_settings')
        .addColumn('mount_id', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('value', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('pki_settings_pkey', ['mount_id', 'name'])
        .execute();

      // Stored certificates (generated roots, signed intermediates, issued leaves without
      // no_store). The primary key makes serials unique across all issuers of a mount.
      await db.schema
        .createTable('pki_certs')
        .addColumn('mount_id', 'text', (c) => c.notNull())
        .addColumn('serial', 'text', (c) => c.notNull())
        .addColumn('issuer_id', 'text')
        .addColumn('certificate_der', binaryType(ctx.kind), (c) => c.notNull())
        .addColumn('not_after', 'text', (c) => c.notNull())
        .addColumn('revoked_at', 'text')
        .addColumn('revocation_issuer_id', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('pki_certs_pkey', ['mount_id', 'serial'])
        .execute();
      await db.schema
        .createIndex('pki_certs_mount_id_not_after_idx')
        .on('pki_certs')
        .columns(['mount_id', 'not_after'])
        .execute();

      // Roles: every Vault role field as one JSON document; `version` grows on each write so
      // caches on any node can tell a stale copy.
      await db.schema
        .createTable('pki_roles')
        .addColumn('mount_id', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('config', 'text', (c) => c.notNull())
        .addColumn('version', 'integer', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('pki_roles_pkey', ['mount_id', 'name'])
        .execute();

      // cert_metadata given at issuance (stored beside the certificate's serial).
      await db.schema
        .createTable('pki_cert_metadata')
        .addColumn('mount_id', 'text', (c) => c.notNull())
        .addColumn('serial', 'text', (c) => c.notNull())
        .addColumn('issuer_id', 'text', (c) => c.notNull())
        .addColumn('role', 'text', (c) => c.notNull())
        .addColumn('not_after', 'text', (c) => c.notNull())
        .addColumn('metadata', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('pki_cert_metadata_pkey', ['mount_id', 'serial'])
        .execute();
    },
  };
}
