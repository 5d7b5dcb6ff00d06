import type { Kysely } from 'kysely';
import type { MigrationContext } from '../migrate.js';

/** Tables of the PKI engine's mounts, tokens, policies and leases. */
export function pkiMigration(_ctx: MigrationContext) {
  return {
    async up(_db: Kysely<any>): Promise<void> {},
  };
}
