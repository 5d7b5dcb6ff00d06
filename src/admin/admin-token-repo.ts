import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';

export class AdminTokenRepo {
  constructor(private readonly deps: { db: Kysely<Database> }) {}

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
}
