import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { sql } from 'kysely';
import type { TestServer } from './test-server.js';

function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? filesUnder(p) : [p];
  });
}

/**
 * Everything a copy of the server's storage holds, as a thief would take it: the SQLite
 * file and its WAL (no checkpoint first) and every blob file, or the text of every row
 * of every PostgreSQL table and the raw bytes of its binary columns.
 */
export async function storedBytes(srv: TestServer): Promise<Array<[string, Buffer]>> {
  const out: Array<[string, Buffer]> = [];
  if (srv.config.databaseKind === 'sqlite') {
    const dbFile = srv.config.databaseUrl.replace(/^sqlite:/, '');
    for (const p of [dbFile, `${dbFile}-wal`]) if (existsSync(p)) out.push([p, readFileSync(p)]);
    for (const p of filesUnder(join(srv.config.dataDir, 'blobs'))) out.push([p, readFileSync(p)]);
    return out;
  }
  const db = srv.deps.core.db.kysely;
  const tables = await sql<{ table_name: string }>`
    select table_name from information_schema.tables where table_schema = current_schema()`.execute(db);
  for (const { table_name } of tables.rows) {
    const rows = await sql<{ t: string }>`select t::text as t from ${sql.table(table_name)} t`.execute(db);
    out.push([table_name, Buffer.from(rows.rows.map((x) => x.t).join('\n'))]);
    if (table_name === 'blob_chunks' || table_name === 'tfe_state_blobs') {
      const raw = await sql<{ data: Buffer | null }>`select data from ${sql.table(table_name)}`.execute(db);
      for (const x of raw.rows) if (x.data) out.push([`${table_name} bytes`, Buffer.from(x.data)]);
    }
  }
  return out;
}

/** The secrets found in the stored bytes, with where. */
export function foundIn(stored: Array<[string, Buffer]>, secrets: string[]): string[] {
  const found: string[] = [];
  for (const s of secrets)
    for (const [where, b] of stored) if (b.includes(Buffer.from(s))) found.push(`${s} in ${where}`);
  return found;
}

/** A state holding four secrets: two output values (one sensitive) and two resource attributes. */
export function secretState(serial: number, lineage: string, secrets: string[], padTo = 0): Buffer {
  const [outputSecret, sensitiveSecret, attrSecret, keySecret] = secrets;
  const state = {
    version: 4,
    terraform_version: '1.9.5',
    serial,
    lineage,
    outputs: {
      db_password: { value: outputSecret, type: 'string' },
      api_key: { value: { nested: sensitiveSecret }, type: ['object', { nested: 'string' }], sensitive: true },
    },
    resources: [
      {
        mode: 'managed',
        type: 'tls_private_key',
        name: 'k',
        provider: 'provider["registry.terraform.io/hashicorp/tls"]',
        instances: [{ schema_version: 0, attributes: { id: 'k1', password: attrSecret, private_key_pem: keySecret } }],
      },
    ],
    padding: 'x'.repeat(padTo),
  };
  return Buffer.from(JSON.stringify(state));
}
