import { Migrator } from 'kysely';
import type { Kysely, Migration, MigrationProvider } from 'kysely';
import type { Db, DatabaseKind } from './database.js';
import { coreMigration } from './migrations/0001-core.js';
import { tfeMigration } from './migrations/0002-tfe.js';
import { pkiMigration } from './migrations/0003-pki.js';
import { tfeStateVersionsMigration } from './migrations/0004-tfe-state-versions.js';
import { pkiIssuanceMigration } from './migrations/0005-pki-issuance.js';
import { pkiRevocationMigration } from './migrations/0006-pki-revocation.js';
import { pkiTidyMigration } from './migrations/0008-pki-tidy.js';
import { pkiExternalPolicyMigration } from './migrations/0009-pki-external-policy.js';
import { tfeInlineStateMigration } from './migrations/0011-tfe-inline-state.js';
import { tfePurgedOutputsMigration } from './migrations/0012-tfe-purged-outputs.js';
import { pkiLeaseTokenIndexMigration } from './migrations/0013-pki-lease-token-index.js';
import { pkiAcmeMigration } from './migrations/0017-pki-acme.js';

export interface MigrationContext {
  kind: DatabaseKind;
}

/** Ordered and append-only: once a migration has shipped it is never edited. */
function allMigrations(ctx: MigrationContext): Record<string, Migration> {
  return {
    '0001-core': coreMigration(ctx),
    '0002-tfe': tfeMigration(ctx),
    '0003-pki': pkiMigration(ctx),
    '0004-tfe-state-versions': tfeStateVersionsMigration(ctx),
    '0005-pki-issuance': pkiIssuanceMigration(ctx),
    '0006-pki-revocation': pkiRevocationMigration(ctx),
    '0008-pki-tidy': pkiTidyMigration(ctx),
    '0009-pki-external-policy': pkiExternalPolicyMigration(),
    '0011-tfe-inline-state': tfeInlineStateMigration(ctx),
    '0012-tfe-purged-outputs': tfePurgedOutputsMigration(),
    '0013-pki-lease-token-index': pkiLeaseTokenIndexMigration(),
    '0017-pki-acme': pkiAcmeMigration(),
  };
}

function migrator(db: Db): Migrator {
  const provider: MigrationProvider = { getMigrations: async () => allMigrations({ kind: db.kind }) };
  return new Migrator({ db: db.kysely as unknown as Kysely<unknown>, provider });
}

/** Applies every pending migration (PostgreSQL serialises concurrent nodes with a lock). */
export async function migrateToLatest(db: Db): Promise<string[]> {
  const { error, results } = await migrator(db).migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/** Names of migrations not yet applied; empty when the schema is current. */
export async function pendingMigrations(db: Db): Promise<string[]> {
  const list = await migrator(db).getMigrations();
  return list.filter((m) => m.executedAt === undefined).map((m) => m.name);
}
