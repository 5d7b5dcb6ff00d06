import { sql } from 'kysely';
import type { Kysely } from 'kysely';
import type { MigrationContext } from '../migrate.js';

/**
 * Certificate search, second step (decision 0042).
 *
 * - SQLite: the trigram index (pki_certs_names_fts) is no longer written inside the commit that stores a
 *   certificate. A one-row table holds the highest rowid indexed; the server indexes the rows above it in batches
 *   after issuance commits and before every name search. Deletes and name updates of rows already indexed still
 *   reach the index through triggers, and a delete lowers the mark to the highest rowid left, so a rowid that
 *   SQLite hands out again is indexed again.
 * - Both: a partial index over revoked certificates in expiry order (`revoked=true` no longer sorts every
 *   revoked row of the mount).
 */
export function pkiCertSearchDeferredMigration(ctx: MigrationContext) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await sql`CREATE INDEX pki_certs_revoked_not_after_idx ON pki_certs (mount_id, not_after)
        WHERE revoked_at IS NOT NULL`.execute(db);
      if (ctx.kind !== 'sqlite') return;
      await sql`CREATE TABLE pki_cert_search_mark (
        id integer PRIMARY KEY CHECK (id = 1), indexed_rowid integer NOT NULL)`.execute(db);
      await sql`INSERT INTO pki_cert_search_mark (id, indexed_rowid)
        SELECT 1, coalesce(max(rowid), 0) FROM pki_certs`.execute(db);
      await sql`DROP TRIGGER pki_certs_names_ai`.execute(db);
      await sql`DROP TRIGGER pki_certs_names_ad`.execute(db);
      await sql`DROP TRIGGER pki_certs_names_au`.execute(db);
      await sql`CREATE TRIGGER pki_certs_names_ad AFTER DELETE ON pki_certs BEGIN
        INSERT INTO pki_certs_names_fts(pki_certs_names_fts, rowid, names)
          SELECT 'delete', old.rowid, old.names
          WHERE old.names IS NOT NULL AND old.rowid <= (SELECT indexed_rowid FROM pki_cert_search_mark);
        UPDATE pki_cert_search_mark SET indexed_rowid = (SELECT coalesce(max(rowid), 0) FROM pki_certs)
          WHERE indexed_rowid > (SELECT coalesce(max(rowid), 0) FROM pki_certs);
        END`.execute(db);
      await sql`CREATE TRIGGER pki_certs_names_au AFTER UPDATE OF names ON pki_certs
        WHEN old.rowid <= (SELECT indexed_rowid FROM pki_cert_search_mark) BEGIN
        INSERT INTO pki_certs_names_fts(pki_certs_names_fts, rowid, names)
          SELECT 'delete', old.rowid, old.names WHERE old.names IS NOT NULL;
        INSERT INTO pki_certs_names_fts(rowid, names) SELECT new.rowid, new.names WHERE new.names IS NOT NULL;
        END`.execute(db);
    },
  };
}
