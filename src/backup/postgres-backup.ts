import pg from 'pg';
import type { ArchiveSource, PostgresTableInfo } from './backup-archive.js';

/** Entries of a PostgreSQL backup: `postgres/<table>/<part>.jsonl`, one JSON array of column texts per row. */
export const POSTGRES_PREFIX = 'postgres/';
/** Rows are gathered into parts of about this many bytes (each part an archive entry). */
const PART_BYTES = 4 * 1024 * 1024;
/**
 * Rows per FETCH: few at first, then as many as make about a part (state chunks are 1 MB rows, most rows are small).
 */
const FETCH_FIRST = 16;
const FETCH_MAX = 1000;

/**
 * Every value travels as PostgreSQL's own text form (bytea as `\x…` hex, timestamps, JSON,
 * numbers as PostgreSQL prints them), which it reads back exactly into a column of the same
 * type, as COPY's text format does.
 */
const TEXT_TYPES = { getTypeParser: () => (v: string) => v };

export function connectRaw(url: string): pg.Client {
  return new pg.Client({ connectionString: url, types: TEXT_TYPES, application_name: 'strongroom-backup' });
}

export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** Tables of the database's schema (the one the server migrates), by name. */
export async function listTables(client: pg.Client): Promise<string[]> {
  const r = await client.query<{ tablename: string }>(
    'SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename',
  );
  return r.rows.map((x) => x.tablename);
}

export interface PostgresSnapshot {
  tables: PostgresTableInfo[];
  migrations: string[];
  /** The entries, streamed from the snapshot transaction; the table infos are complete once it is drained. */
  sources(): AsyncIterable<ArchiveSource>;
  /** Ends the snapshot transaction and the connection. */
  dispose(): Promise<void>;
}

/**
 * Opens one REPEATABLE READ, READ ONLY transaction: every table is read in the same snapshot,
 * so the export is the database as committed when its first statement ran, blobs
 * (`blob_chunks`, inline state rows) included, while the servers go on writing. Rows are
 * read through a cursor, a part at a time, so memory stays bounded.
 */
export async function snapshotPostgres(url: string): Promise<PostgresSnapshot> {
  const client = connectRaw(url);
  await client.connect();
  let open = true;
  const dispose = async () => {
    if (!open) return;
    open = false;
    await client.query('ROLLBACK').catch(() => {});
    await client.end().catch(() => {});
  };
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const names = await listTables(client);
    if (!names.includes('kysely_migration'))
      throw new Error('the database holds no Strongroom schema (no kysely_migration table)');
    const migrations = (
      await client.query<{ name: string }>('SELECT name FROM kysely_migration ORDER BY name')
    ).rows.map((r) => r.name);
    const tables: PostgresTableInfo[] = [];
    for (const name of names) {
      const cols = await client.query<{ column_name: string }>(
        `SELECT column_name FROM information_schema.columns
          WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position`,
        [name],
      );
      tables.push({ name, columns: cols.rows.map((c) => c.column_name), rows: 0 });
    }
    return { tables, migrations, sources: () => tableParts(client, tables), dispose };
  } catch (err) {
    await dispose();
    throw err;
  }
}

async function* tableParts(client: pg.Client, tables: PostgresTableInfo[]): AsyncGenerator<ArchiveSource> {
  for (const t of tables) {
    const cols = t.columns.map(quoteIdent).join(', ');
    await client.query(`DECLARE backup_rows NO SCROLL CURSOR FOR SELECT ${cols} FROM ${quoteIdent(t.name)}`);
    let part = 0;
    let lines: Buffer[] = [];
    let size = 0;
    const emit = (): ArchiveSource => {
      const body = lines;
      const src = {
        name: `${POSTGRES_PREFIX}${t.name}/${String(part++).padStart(6, '0')}.jsonl`,
        size,
        body: () => body,
      };
      lines = [];
      size = 0;
      return src;
    };
    let fetch = FETCH_FIRST;
    for (;;) {
      const r = await client.query<unknown[]>({ text: `FETCH ${fetch} FROM backup_rows`, rowMode: 'array' });
      let fetched = 0;
      for (const row of r.rows) {
        const line = Buffer.from(JSON.stringify(row) + '\n');
        lines.push(line);
        size += line.length;
        fetched += line.length;
        t.rows++;
      }
      if (size >= PART_BYTES) yield emit();
      if (r.rows.length < fetch) break;
      fetch = Math.max(1, Math.min(FETCH_MAX, Math.floor(PART_BYTES / Math.max(1, fetched / r.rows.length))));
    }
    await client.query('CLOSE backup_rows');
    if (size > 0) yield emit();
  }
}
