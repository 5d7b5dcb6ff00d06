import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { UnitsOfWork } from '../../db/unit-of-work.js';
import type { PkiRole } from './role.js';

export type Executor = Kysely<Database> | Transaction<Database>;

export interface StoredRole {
  name: string;
  role: PkiRole;
  version: number;
}

/** SQL of the roles table. */
export class RoleRepo {
  constructor(private readonly deps: { db: Kysely<Database>; units: UnitsOfWork }) {}

  get executor(): Executor {
    return this.deps.db;
  }

  /** A read-write unit of work. */
  transaction<T>(fn: (tx: Executor) => Promise<T>): Promise<T> {
    return this.deps.units.readWrite(fn);
  }

  async find(ex: Executor, mountId: string, name: string): Promise<StoredRole | undefined> {
    const r = await ex
      .selectFrom('pki_roles')
      .select(['name', 'config', 'version'])
      .where('mount_id', '=', mountId)
      .where('name', '=', name)
      .executeTakeFirst();
    return r ? { name: r.name, role: JSON.parse(r.config) as PkiRole, version: Number(r.version) } : undefined;
  }

  /** The row's version only: a cheap freshness check for caches. */
  async version(ex: Executor, mountId: string, name: string): Promise<number | undefined> {
    const r = await ex
      .selectFrom('pki_roles')
      .select('version')
      .where('mount_id', '=', mountId)
      .where('name', '=', name)
      .executeTakeFirst();
    return r ? Number(r.version) : undefined;
  }

  /** Inserts or replaces; returns the new version. */
  async upsert(ex: Executor, mountId: string, name: string, role: PkiRole, now: Date): Promise<number> {
    const at = now.toISOString();
    const row = await ex
      .insertInto('pki_roles')
      .values({ mount_id: mountId, name, config: JSON.stringify(role), version: 1, created_at: at, updated_at: at })
      .onConflict((oc) =>
        oc.columns(['mount_id', 'name']).doUpdateSet((eb) => ({
          config: eb.ref('excluded.config'),
          updated_at: eb.ref('excluded.updated_at'),
          version: eb(eb.ref('pki_roles.version'), '+', 1),
        })),
      )
      .returning('version')
      .executeTakeFirstOrThrow();
    return Number(row.version);
  }

  async list(ex: Executor, mountId: string, opts: { after?: string; limit?: number } = {}): Promise<string[]> {
    let q = ex.selectFrom('pki_roles').select('name').where('mount_id', '=', mountId).orderBy('name');
    if (opts.after) q = q.where('name', '>', opts.after);
    if (opts.limit !== undefined && opts.limit > 0) q = q.limit(opts.limit);
    return (await q.execute()).map((r) => r.name);
  }

  async delete(ex: Executor, mountId: string, name: string): Promise<void> {
    await ex.deleteFrom('pki_roles').where('mount_id', '=', mountId).where('name', '=', name).execute();
  }

  async deleteAll(ex: Executor, mountId: string): Promise<void> {
    await ex.deleteFrom('pki_roles').where('mount_id', '=', mountId).execute();
  }
}
