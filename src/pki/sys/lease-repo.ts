import { sql } from 'kysely';
import type { Insertable, Kysely, Selectable, Transaction } from 'kysely';
import { RowsInsert } from '../../db/one-param-query.js';
import { PgJsonInsert } from '../../db/pg-json-rows.js';
import type { DatabaseKind } from '../../db/database.js';
import type { Database } from '../../db/schema.js';
import type { PkiLeasesTable } from '../../db/schema-pki.js';
import type { Lease } from './lease.js';

type Executor = Kysely<Database> | Transaction<Database>;

/** PostgreSQL: the rows of a group commit as one JSON parameter of a statement of constant text. */
const PG_INSERT_LEASES = new PgJsonInsert('pki_leases');

export class LeaseRepo {
  readonly #insert = new RowsInsert<Insertable<PkiLeasesTable>>(
    ['id', 'mount_id', 'kind', 'data', 'token_accessor', 'issued_at', 'expires_at'],
    (rows) => this.deps.db.insertInto('pki_leases').values(rows),
    () => this.deps.kind !== 'sqlite',
  );

  constructor(private readonly deps: { db: Kysely<Database>; kind?: DatabaseKind }) {}

  async insert(l: Lease, ex: Executor = this.deps.db): Promise<void> {
    await this.insertMany(ex, [l]);
  }

  /** Several leases in a few multi-row INSERTs (one transaction's worth, e.g. a group commit). */
  async insertMany(ex: Executor, leases: readonly Lease[]): Promise<void> {
    await (this.deps.kind === 'postgres' ? PG_INSERT_LEASES : this.#insert).run(
      ex,
      leases.map((l) => ({
        id: l.id,
        mount_id: l.mountId,
        kind: l.kind,
        data: JSON.stringify(l.data ?? null),
        token_accessor: l.tokenAccessor,
        issued_at: l.issuedAt.toISOString(),
        expires_at: l.expiresAt.toISOString(),
      })),
    );
  }

  async find(id: string): Promise<Lease | undefined> {
    const row = await this.deps.db.selectFrom('pki_leases').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toLease(row) : undefined;
  }

  /** Leases whose id starts with `prefix` (compared exactly: no LIKE wildcards, no collation). */
  async listByPrefix(prefix: string): Promise<Lease[]> {
    const rows = await this.deps.db
      .selectFrom('pki_leases')
      .selectAll()
      .where(sql<boolean>`substr(id, 1, ${prefix.length}) = ${prefix}`)
      .orderBy('id')
      .execute();
    return rows.map(toLease).filter((l) => l.id.startsWith(prefix));
  }

  async listByTokens(accessors: readonly string[]): Promise<Lease[]> {
    if (accessors.length === 0) return [];
    const rows = await this.deps.db
      .selectFrom('pki_leases')
      .selectAll()
      .where('token_accessor', 'in', accessors)
      .execute();
    return rows.map(toLease);
  }

  async delete(id: string): Promise<boolean> {
    const res = await this.deps.db.deleteFrom('pki_leases').where('id', '=', id).executeTakeFirst();
    return Number(res.numDeletedRows) > 0;
  }

  async deleteExpired(now: Date): Promise<number> {
    const res = await this.deps.db
      .deleteFrom('pki_leases')
      .where('expires_at', '<=', now.toISOString())
      .executeTakeFirst();
    return Number(res.numDeletedRows);
  }

  async deleteByMount(mountId: string): Promise<void> {
    await this.deps.db.deleteFrom('pki_leases').where('mount_id', '=', mountId).execute();
  }
}

function toLease(r: Selectable<PkiLeasesTable>): Lease {
  return {
    id: r.id,
    mountId: r.mount_id,
    kind: r.kind,
    data: JSON.parse(r.data) as unknown,
    tokenAccessor: r.token_accessor,
    issuedAt: new Date(r.issued_at),
    expiresAt: new Date(r.expires_at),
  };
}
