import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';

export interface StoredPolicy {
  name: string;
  text: string;
  updatedAt: Date;
}

export class PolicyRepo {
  constructor(private readonly deps: { db: Kysely<Database> }) {}

  async listNames(): Promise<string[]> {
    const rows = await this.deps.db.selectFrom('pki_policies').select('name').orderBy('name').execute();
    return rows.map((r) => r.name);
  }

  async find(name: string): Promise<StoredPolicy | undefined> {
    const r = await this.deps.db.selectFrom('pki_policies').selectAll().where('name', '=', name).executeTakeFirst();
    return r ? { name: r.name, text: r.policy, updatedAt: new Date(r.updated_at) } : undefined;
  }

  async findMany(names: readonly string[]): Promise<StoredPolicy[]> {
    if (names.length === 0) return [];
    const rows = await this.deps.db.selectFrom('pki_policies').selectAll().where('name', 'in', names).execute();
    return rows.map((r) => ({ name: r.name, text: r.policy, updatedAt: new Date(r.updated_at) }));
  }

  /** Insert or replace, in one statement on both databases. */
  async upsert(name: string, text: string, now: Date): Promise<void> {
    const at = now.toISOString();
    await this.deps.db
      .insertInto('pki_policies')
      .values({ name, policy: text, created_at: at, updated_at: at })
      .onConflict((oc) => oc.column('name').doUpdateSet({ policy: text, updated_at: at }))
      .execute();
  }

  async delete(name: string): Promise<void> {
    await this.deps.db.deleteFrom('pki_policies').where('name', '=', name).execute();
  }
}
