import { sql } from 'kysely';
import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import type { UnitsOfWork } from '../db/unit-of-work.js';

export class AdminTokenRepo {
  constructor(private readonly deps: { db: Kysely<Database>; units: UnitsOfWork }) {}

  /**
   * Runs `fn` in one transaction that no other maker of admin tokens runs beside: on
   * PostgreSQL it locks the table against other writers (another node starting at the same
   * moment waits), on SQLite the transaction takes the write lock when it begins.
   */
  async exclusively<T>(fn: (repo: AdminTokenRepo) => Promise<T>): Promise<T> {
    return this.deps.units.readWrite(async (trx) => {
      if (this.deps.units.kind === 'postgres')
        await sql`lock table admin_tokens in share row exclusive mode`.execute(trx);
      return fn(new AdminTokenRepo({ db: trx, units: this.deps.units }));
    });
  }

  async count(): Promise<number> {
    const row = await this.deps.db
      .selectFrom('admin_tokens')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  async exists(tokenHash: string): Promise<boolean> {
    const row = await this.deps.db
      .selectFrom('admin_tokens')
      .select('token_hash')
      .where('token_hash', '=', tokenHash)
      .executeTakeFirst();
    return row !== undefined;
  }

  /** Inserts unless present; returns whether a row was added. */
  async insert(tokenHash: string, createdAt: Date): Promise<boolean> {
    const res = await this.deps.db
      .insertInto('admin_tokens')
      .values({ token_hash: tokenHash, created_at: createdAt.toISOString() })
      .onConflict((oc) => oc.column('token_hash').doNothing())
      .executeTakeFirst();
    return Number(res.numInsertedOrUpdatedRows ?? 0n) > 0;
  }

  /** Every admin token's hash and creation time, oldest first. */
  async list(): Promise<Array<{ tokenHash: string; createdAt: Date }>> {
    const rows = await this.deps.db
      .selectFrom('admin_tokens')
      .select(['token_hash', 'created_at'])
      .orderBy('created_at')
      .orderBy('token_hash')
      .execute();
    return rows.map((r) => ({ tokenHash: r.token_hash, createdAt: new Date(r.created_at) }));
  }

  /** Deletes one token by its hash; returns whether it was there. */
  async delete(tokenHash: string): Promise<boolean> {
    const res = await this.deps.db.deleteFrom('admin_tokens').where('token_hash', '=', tokenHash).executeTakeFirst();
    return Number(res.numDeletedRows) > 0;
  }
}
