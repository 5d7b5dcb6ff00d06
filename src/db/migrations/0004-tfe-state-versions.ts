import type { Kysely } from 'kysely';
import type { MigrationContext } from '../migrate.js';

/** Tables of the state versions module. */
export function tfeStateVersionsMigration(_ctx: MigrationContext) {
  return {
    async up(_db: Kysely<any>): Promise<void> {},
  };
}
