import type { Kysely } from 'kysely';
import type { MigrationContext } from '../migrate.js';

/** Tables of the Terraform state service. */
export function tfeMigration(_ctx: MigrationContext) {
  return {
    async up(_db: Kysely<any>): Promise<void> {},
  };
}
