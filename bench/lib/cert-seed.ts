import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import type { Strongroom } from './strongroom.js';

/** Roles the seeded certificates spread over. */
export const SEED_ROLES = 20;
/** Hosts share one of this many `svcN` zones, so a zone name matches count / SEED_ZONES certificates. */
export const SEED_ZONES = 1000;

/**
 * Generates `count` certificate rows of the mount that holds `templateSerial`, inside the
 * database (a recursive CTE on SQLite, generate_series on PostgreSQL): row i is
 * `host-i.svc(i % 1000).example.com` with the SAN `alt-i.internal.example`, role
 * `role-(i % 20)`, expiring over the next two years, one in fifty revoked. The rows carry
 * the template's DER (search never reads it). Returns null when the layout is unknown.
 */
export async function seedSearchableCerts(
  sr: Strongroom,
  templateSerial: string,
  count: number,
): Promise<number | null> {
  if (sr.db === 'sqlite') return seedSqlite(sr, templateSerial, count);
  if (sr.databaseUrl) return seedPostgres(sr.databaseUrl, templateSerial, count);
  return null;
}

function seedSqlite(sr: Strongroom, templateSerial: string, count: number): number | null {
  const dir = sr.dataDir();
  if (!dir) return null;
  const db = new Database(join(dir, 'strongroom.db'), { fileMustExist: true });
  try {
    db.pragma('busy_timeout = 10000');
    const t = db.prepare('select mount_id, issuer_id from pki_certs where serial = ?').get(templateSerial) as
      { mount_id: string; issuer_id: string } | undefined;
    if (!t) return null;
    const now = Math.floor(Date.now() / 1000);
    const insert = db.prepare(
      `with recursive s(i) as (select 1 union all select i + 1 from s where i < @count)
       insert into pki_certs (mount_id, serial, issuer_id, certificate_der, not_after, revoked_at,
                              revocation_issuer_id, created_at, common_name, names, role)
       select @mount, lower(hex(randomblob(20))), @issuer,
              (select certificate_der from pki_certs where mount_id = @mount and serial = @template),
              strftime('%Y-%m-%dT%H:%M:%S.000Z', @now + 600 + (i * 7919) % (730 * 86400), 'unixepoch'),
              case when i % 50 = 0 then strftime('%Y-%m-%dT%H:%M:%S.000Z', @now, 'unixepoch') end,
              case when i % 50 = 0 then @issuer end,
              strftime('%Y-%m-%dT%H:%M:%S.000Z', @now, 'unixepoch'),
              'host-' || i || '.svc' || (i % ${SEED_ZONES}) || '.example.com',
              'host-' || i || '.svc' || (i % ${SEED_ZONES}) || '.example.com' || char(10)
                || 'alt-' || i || '.internal.example',
              'role-' || (i % ${SEED_ROLES})
       from s`,
    );
    // The rows and their trigram index in one transaction, the index built once after the rows (as the server's
    // indexer would, in batches, for certificates it did not store itself: migration 0031).
    db.transaction(() => {
      insert.run({ count, mount: t.mount_id, issuer: t.issuer_id, template: templateSerial, now });
      db.exec(`insert into pki_certs_names_fts (pki_certs_names_fts) values ('rebuild');
               update pki_cert_search_mark set indexed_rowid = (select max(rowid) from pki_certs);`);
    })();
    db.exec('analyze');
    return count;
  } finally {
    db.close();
  }
}

async function seedPostgres(url: string, templateSerial: string, count: number): Promise<number | null> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const t = await client.query('select mount_id, issuer_id from pki_certs where serial = $1', [templateSerial]);
    const row = t.rows[0] as { mount_id: string; issuer_id: string } | undefined;
    if (!row) return null;
    // Building the trigram index once after the rows is much faster than maintaining it per row.
    const idx = await client.query(
      "select indexdef from pg_indexes where tablename = 'pki_certs' and indexname = 'pki_certs_names_trgm_idx'",
    );
    const trgm = (idx.rows[0] as { indexdef: string } | undefined)?.indexdef;
    if (trgm) await client.query('drop index pki_certs_names_trgm_idx');
    await client.query(
      `insert into pki_certs (mount_id, serial, issuer_id, certificate_der, not_after, revoked_at,
                              revocation_issuer_id, created_at, common_name, names, role)
       select $1, encode(gen_random_bytes_or(i), 'hex'), $2,
              (select certificate_der from pki_certs where mount_id = $1 and serial = $3),
              to_char(to_timestamp($4 + 600 + (i::bigint * 7919) % (730 * 86400)) at time zone 'UTC',
                      'YYYY-MM-DD"T"HH24:MI:SS".000Z"'),
              case when i % 50 = 0
                   then to_char(to_timestamp($4) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS".000Z"') end,
              case when i % 50 = 0 then $2 end,
              to_char(to_timestamp($4) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS".000Z"'),
              'host-' || i || '.svc' || (i % ${SEED_ZONES}) || '.example.com',
              'host-' || i || '.svc' || (i % ${SEED_ZONES}) || '.example.com' || chr(10)
                || 'alt-' || i || '.internal.example',
              'role-' || (i % ${SEED_ROLES})
       from generate_series(1, $5::int) as i`.replace(
        'gen_random_bytes_or(i)',
        "decode(md5(i::text || random()::text) || substr(md5(random()::text), 1, 8), 'hex')",
      ),
      [row.mount_id, row.issuer_id, templateSerial, Math.floor(Date.now() / 1000), count],
    );
    if (trgm) await client.query(trgm);
    await client.query('analyze pki_certs');
    return count;
  } finally {
    await client.end();
  }
}
