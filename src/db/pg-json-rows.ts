import { CompiledQuery } from 'kysely';
import type { QueryRunner } from './one-param-query.js';

/**
 * Rows as one JSON array parameter, for PostgreSQL statements of constant text
 * (`json_populate_recordset`). A multi-row VALUES of many columns makes the server parse and
 * plan a new statement of hundreds of parameters for every group of rows, and the driver
 * encode each one; a JSON array is one parameter whatever the number of rows.
 *
 * PostgreSQL's json refuses a lone UTF-16 surrogate escape, which JSON.stringify writes for
 * such a code unit; those become U+FFFD, which is what the driver's UTF-8 encoding of a text
 * parameter would have stored.
 */
function pgJsonRows(rows: readonly object[]): string {
  const text = JSON.stringify(rows);
  if (!/\\u[dD][89a-fA-F]/.test(text)) return text;
  return JSON.stringify(rows, (_key, v: unknown) =>
    typeof v === 'string' ? v.replace(/\p{Surrogate}/gu, '\ufffd') : v,
  );
}

/** A bytea value as PgJsonInsert's rows carry it: PostgreSQL's hex input form. */
export function pgBytea(b: Buffer): string {
  return `\\x${b.toString('hex')}`;
}

/**
 * Inserts rows into `table` (PostgreSQL) by one statement of constant text. Each row's keys
 * are column names; a column a row leaves out is NULL (not its default), so rows carry every
 * column. `suffix` follows the SELECT (e.g. an ON CONFLICT clause).
 */
export class PgJsonInsert {
  readonly #sql: string;

  constructor(table: string, suffix = '') {
    if (!/^[a-z_][a-z0-9_]*$/.test(table)) throw new Error(`not a plain table name: ${table}`);
    const rows = `select * from json_populate_recordset(null::${table}, $1::json)`;
    this.#sql = `insert into ${table} ${rows}${suffix ? ` ${suffix}` : ''}`;
  }

  async run(runner: QueryRunner, rows: readonly object[]): Promise<void> {
    if (rows.length === 0) return;
    await runner.executeQuery(CompiledQuery.raw(this.#sql, [pgJsonRows(rows)]));
  }
}
