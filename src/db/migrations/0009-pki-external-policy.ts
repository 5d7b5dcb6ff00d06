import type { Kysely } from 'kysely';

/**
 * Per-mount configuration of external-policy issuance (config/external-policy): where the
 * policy service is, how it is trusted, the client certificate for mutual TLS (its key
 * sealed with the SecretBox), and the status fields the read shows.
 */
export function pkiExternalPolicyMigration() {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .createTable('pki_external_policy')
        .addColumn('mount_id', 'text', (c) => c.primaryKey())
        .addColumn('enabled', 'integer', (c) => c.notNull())
        .addColumn('service_url', 'text', (c) => c.notNull())
        .addColumn('timeout_seconds', 'integer', (c) => c.notNull())
        .addColumn('trusted_ca', 'text', (c) => c.notNull())
        .addColumn('trusted_leaf_bundle', 'text', (c) => c.notNull())
        .addColumn('client_cert_bundle', 'text', (c) => c.notNull())
        .addColumn('sealed_client_key', 'text')
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .addColumn('validated_at', 'text')
        .addColumn('last_success_at', 'text')
        .execute();
    },
  };
}
