import { sql } from 'kysely';
import type { Kysely } from 'kysely';

/**
 * Leases obtained with the admin (root) token carry no token accessor, and they are most of
 * the leases a busy mount writes. The token-accessor index only serves "the leases this
 * token obtained", which never asks for NULL, so it now leaves those rows out: one index
 * update fewer per issued certificate.
 */
export function pkiLeaseTokenIndexMigration() {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema.dropIndex('pki_leases_token_accessor_idx').execute();
      await db.schema
        .createIndex('pki_leases_token_accessor_idx')
        .on('pki_leases')
        .column('token_accessor')
        .where(sql.ref('token_accessor'), 'is not', null)
        .execute();
    },
  };
}
