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
import { tfeCurrentFinalizedMigration } from './migrations/0014-tfe-current-finalized.js';
import { tfeProjectsMigration } from './migrations/0015-tfe-projects.js';
import { pkiAcmeMigration } from './migrations/0017-pki-acme.js';
import { auditDevicesMigration } from './migrations/0023-audit-devices.js';
import { tfeAuditTrailMigration } from './migrations/0024-tfe-audit-trail.js';
import { coreDataKeysMigration } from './migrations/0018-core-data-keys.js';
import { pkiAuthMethodsMigration } from './migrations/0021-pki-auth-methods.js';
import { pkiCertSearchMigration } from './migrations/0025-pki-cert-search.js';
import { tfeLoginCodesMigration } from './migrations/0026-tfe-login-codes.js';
import { pkiQuotasMigration } from './migrations/0030-pki-quotas.js';
import { pkiCertSearchDeferredMigration } from './migrations/0031-pki-cert-search-deferred.js';
import { pgChangeNotifyMigration } from './migrations/0036-pg-change-notify.js';
import { tfeStateVersionsPartialIndexesMigration } from './migrations/0037-tfe-state-versions-partial-indexes.js';

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
    '0014-tfe-current-finalized': tfeCurrentFinalizedMigration(),
    '0015-tfe-projects': tfeProjectsMigration(),
    '0017-pki-acme': pkiAcmeMigration(),
    '0023-audit-devices': auditDevicesMigration(),
    '0024-tfe-audit-trail': tfeAuditTrailMigration(),
    '0018-core-data-keys': coreDataKeysMigration(),
    '0021-pki-auth-methods': pkiAuthMethodsMigration(),
    '0025-pki-cert-search': pkiCertSearchMigration(ctx),
    '0026-tfe-login-codes': tfeLoginCodesMigration(),
    '0030-pki-quotas': pkiQuotasMigration(),
    '0031-pki-cert-search-deferred': pkiCertSearchDeferredMigration(ctx),
    '0036-pg-change-notify': pgChangeNotifyMigration(ctx),
    '0037-tfe-state-versions-partial-indexes': tfeStateVersionsPartialIndexesMigration(),
  };
}

/** Names of the migrations this version knows, in the order the migrator applies them (by name). */
export function knownMigrations(): string[] {
  return Object.keys(allMigrations({ kind: 'sqlite' })).sort();
}

/** Applies the migrations up to and including `name` (a restore rebuilds a backup's schema with it). */
export async function migrateUpTo(db: Db, name: string): Promise<void> {
  const { error } = await migrator(db).migrateTo(name);
  if (error) throw error instanceof Error ? error : new Error(String(error));
}

function migrator(db: Db): Migrator {
  const provider: MigrationProvider = { getMigrations: async () => allMigrations({ kind: db.kind }) };
  // Unordered: a migration numbered below one a database already has (work that landed in another order) still runs.
  return new Migrator({ db: db.kysely as unknown as Kysely<unknown>, provider, allowUnorderedMigrations: true });
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

/** One step of migrateWithProgress: before (`ms` undefined) and after each migration. */
export interface MigrationStep {
  name: string;
  index: number;
  total: number;
  ms?: number;
}

/**
 * Applies pending migrations one at a time, reporting each before and after it runs (the
 * `migrate` command shows this on a terminal). Same result as migrateToLatest.
 */
export async function migrateWithProgress(db: Db, onStep: (step: MigrationStep) => void): Promise<string[]> {
  const m = migrator(db);
  const pending = (await m.getMigrations()).filter((x) => x.executedAt === undefined).map((x) => x.name);
  const applied: string[] = [];
  for (const [i, name] of pending.entries()) {
    onStep({ name, index: i + 1, total: pending.length });
    const started = performance.now();
    const { error, results } = await m.migrateUp();
    if (error) throw error instanceof Error ? error : new Error(String(error));
    const done = (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
    applied.push(...done);
    onStep({ name, index: i + 1, total: pending.length, ms: Math.round(performance.now() - started) });
    // Another node applied the rest meanwhile.
    if (done.length === 0) break;
  }
  return applied;
}

/** Applies migrations up to and including `name` (tests of data migrations start from an older schema). */
export async function migrateTo(db: Db, name: string): Promise<string[]> {
  const { error, results } = await migrator(db).migrateTo(name);
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
