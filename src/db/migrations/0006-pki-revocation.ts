import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import { binaryType } from '../dialect.js';
import type { MigrationContext } from '../migrate.js';

/**
 * Revocation: the CRLs each issuer currently serves (built once, stored, served by every
 * node as stored) and an index that lets a CRL build read only the revoked rows of
 * pki_certs, in revocation order, without touching the certificate bytes.
 */
export function pkiRevocationMigration(ctx: MigrationContext) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema
        .createTable('pki_crls')
        .addColumn('mount_id', 'text', (c) => c.notNull())
        .addColumn('issuer_id', 'text', (c) => c.notNull())
        .addColumn('kind', 'text', (c) => c.notNull())
        .addColumn('crl_number', 'bigint', (c) => c.notNull())
        .addColumn('base_crl_number', 'bigint')
        .addColumn('this_update', 'text', (c) => c.notNull())
        .addColumn('next_update', 'text', (c) => c.notNull())
        .addColumn('watermark', 'text', (c) => c.notNull())
        .addColumn('entry_count', 'integer', (c) => c.notNull())
        .addColumn('der', binaryType(ctx.kind), (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('pki_crls_pkey', ['mount_id', 'issuer_id', 'kind'])
        .execute();

      // Covering and partial: a full CRL reads (serial, revoked_at) of one issuer's revoked
      // rows from the index alone; a delta CRL reads a revoked_at range of it.
      await db.schema
        .createIndex('pki_certs_revoked_idx')
        .on('pki_certs')
        .columns(['mount_id', 'revocation_issuer_id', 'revoked_at', 'serial'])
        .where(sql.ref('revoked_at'), 'is not', null)
        .execute();
    },
  };
}
