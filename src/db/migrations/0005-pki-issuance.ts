import type { Kysely } from 'kysely';
import type { MigrationContext } from '../migrate.js';

/** Tables of PKI keys, issuers, roles and certificates. */
export function pkiIssuanceMigration(_ctx: MigrationContext) {
  return {
    async up(_db: Kysely<any>): Promise<void> {},
  };
}
