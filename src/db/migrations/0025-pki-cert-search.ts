import { X509Certificate } from 'node:crypto';
import { sql } from 'kysely';
import type { Kysely } from 'kysely';
import type { MigrationContext } from '../migrate.js';

/**
 * Certificate search (GET <mount>/certs/search): each stored certificate keeps its common
 * name, its role and its names (CN and SANs, lowercased, one a line); indexes serve the
 * issuer and role filters in expiry order, and a trigram index serves substring matches on
 * names: an FTS5 table kept by triggers on SQLite, pg_trgm on PostgreSQL when the server
 * has it (without it the same LIKE query scans). Certificates stored before are filled in
 * here.
 */
export function pkiCertSearchMigration(ctx: MigrationContext) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      await db.schema.alterTable('pki_certs').addColumn('common_name', 'text').execute();
      await db.schema.alterTable('pki_certs').addColumn('names', 'text').execute();
      await db.schema.alterTable('pki_certs').addColumn('role', 'text').execute();
      await backfill(db);
      await db.schema
        .createIndex('pki_certs_issuer_not_after_idx')
        .on('pki_certs')
        .columns(['mount_id', 'issuer_id', 'not_after'])
        .execute();
      await db.schema
        .createIndex('pki_certs_role_not_after_idx')
        .on('pki_certs')
        .columns(['mount_id', 'role', 'not_after'])
        .execute();
      if (ctx.kind === 'sqlite') {
        await sql`CREATE VIRTUAL TABLE pki_certs_names_fts USING fts5(names, content='pki_certs', content_rowid='rowid', tokenize='trigram')`.execute(
          db,
        );
        await sql`INSERT INTO pki_certs_names_fts(pki_certs_names_fts) VALUES ('rebuild')`.execute(db);
        await sql`CREATE TRIGGER pki_certs_names_ai AFTER INSERT ON pki_certs WHEN new.names IS NOT NULL BEGIN
          INSERT INTO pki_certs_names_fts(rowid, names) VALUES (new.rowid, new.names); END`.execute(db);
        await sql`CREATE TRIGGER pki_certs_names_ad AFTER DELETE ON pki_certs WHEN old.names IS NOT NULL BEGIN
          INSERT INTO pki_certs_names_fts(pki_certs_names_fts, rowid, names) VALUES ('delete', old.rowid, old.names); END`.execute(
          db,
        );
        await sql`CREATE TRIGGER pki_certs_names_au AFTER UPDATE OF names ON pki_certs BEGIN
          INSERT INTO pki_certs_names_fts(pki_certs_names_fts, rowid, names) SELECT 'delete', old.rowid, old.names WHERE old.names IS NOT NULL;
          INSERT INTO pki_certs_names_fts(rowid, names) SELECT new.rowid, new.names WHERE new.names IS NOT NULL; END`.execute(
          db,
        );
      } else if (await createTrigramExtension(db)) {
        await sql`CREATE INDEX pki_certs_names_trgm_idx ON pki_certs USING gin (names gin_trgm_ops)`.execute(db);
      }
    },
  };
}

/** pg_trgm when the server ships it and we may create it; a failure leaves the migration's transaction usable. */
async function createTrigramExtension(db: Kysely<any>): Promise<boolean> {
  const available = await sql<{
    n: number;
  }>`SELECT count(*)::int AS n FROM pg_available_extensions WHERE name = 'pg_trgm'`.execute(db);
  if ((available.rows[0]?.n ?? 0) === 0) return false;
  await sql`SAVEPOINT pki_cert_search_trgm`.execute(db);
  try {
    await sql`CREATE EXTENSION IF NOT EXISTS pg_trgm`.execute(db);
    await sql`RELEASE SAVEPOINT pki_cert_search_trgm`.execute(db);
    return true;
  } catch {
    await sql`ROLLBACK TO SAVEPOINT pki_cert_search_trgm`.execute(db);
    return false;
  }
}

async function backfill(db: Kysely<any>): Promise<void> {
  let after = { mount: '', serial: '' };
  for (;;) {
    const rows: { mount_id: string; serial: string; certificate_der: Uint8Array }[] = await db
      .selectFrom('pki_certs')
      .select(['mount_id', 'serial', 'certificate_der'])
      .where((eb: any) =>
        eb.or([
          eb('mount_id', '>', after.mount),
          eb.and([eb('mount_id', '=', after.mount), eb('serial', '>', after.serial)]),
        ]),
      )
      .orderBy('mount_id')
      .orderBy('serial')
      .limit(1000)
      .execute();
    if (rows.length === 0) return;
    for (const r of rows) {
      const { commonName, names } = namesOf(Buffer.from(r.certificate_der));
      await db
        .updateTable('pki_certs')
        .set({ common_name: commonName, names })
        .where('mount_id', '=', r.mount_id)
        .where('serial', '=', r.serial)
        .execute();
    }
    const last = rows[rows.length - 1]!;
    after = { mount: last.mount_id, serial: last.serial };
  }
}

function namesOf(der: Buffer): { commonName: string; names: string } {
  try {
    const x = new X509Certificate(der);
    const cn = /^CN=(.*)$/m.exec(x.subject)?.[1] ?? '';
    const all = cn === '' ? [] : [cn];
    for (const part of (x.subjectAltName ?? '').split(', ')) {
      const v = part.slice(part.indexOf(':') + 1);
      if (part.includes(':') && v !== '' && !all.includes(v)) all.push(v);
    }
    return { commonName: cn, names: all.join('\n').toLowerCase() };
  } catch {
    return { commonName: '', names: '' };
  }
}
