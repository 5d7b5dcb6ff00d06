import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';

/** The data keys that encrypt stored content, each sealed by the master key (table data_keys). */
export class DataKeyRepo {
  constructor(private readonly deps: { db: Kysely<Database> }) {}

  async insert(id: string, sealed: string, now: Date): Promise<void> {
    await this.deps.db.insertInto('data_keys').values({ id, sealed, created_at: now.toISOString() }).execute();
  }

  async sealed(id: string): Promise<string | undefined> {
    const r = await this.deps.db.selectFrom('data_keys').select('sealed').where('id', '=', id).executeTakeFirst();
    return r?.sealed;
  }
}
