import type { Kysely, Transaction } from 'kysely';
import { isUniqueViolation } from '../../db/constraint-errors.js';
import type { Database } from '../../db/schema.js';
import { invalid } from '../../shared/errors.js';

type Executor = Kysely<Database> | Transaction<Database>;

/** A stored role of any method: AppRole roles, JWT roles, trusted certificates (certs/:name). */
export interface StoredRole<T> {
  name: string;
  /** AppRole only. */
  roleId: string | null;
  data: T;
}

/** Roles of every auth method, keyed by mount id and name; the data is the method's JSON. */
export class AuthRoleRepo {
  constructor(private readonly deps: { db: Kysely<Database> }) {}

  async get<T>(mountId: string, name: string, ex: Executor = this.deps.db): Promise<StoredRole<T> | undefined> {
    const row = await ex
      .selectFrom('pki_auth_roles')
      .select(['name', 'role_id', 'data'])
      .where('mount_id', '=', mountId)
      .where('name', '=', name)
      .executeTakeFirst();
    return row ? { name: row.name, roleId: row.role_id, data: JSON.parse(row.data) as T } : undefined;
  }

  async findByRoleId<T>(mountId: string, roleId: string): Promise<StoredRole<T> | undefined> {
    const row = await this.deps.db
      .selectFrom('pki_auth_roles')
      .select(['name', 'role_id', 'data'])
      .where('mount_id', '=', mountId)
      .where('role_id', '=', roleId)
      .executeTakeFirst();
    return row ? { name: row.name, roleId: row.role_id, data: JSON.parse(row.data) as T } : undefined;
  }

  async all<T>(mountId: string): Promise<Array<StoredRole<T>>> {
    const rows = await this.deps.db
      .selectFrom('pki_auth_roles')
      .select(['name', 'role_id', 'data'])
      .where('mount_id', '=', mountId)
      .orderBy('name')
      .execute();
    return rows.map((r) => ({ name: r.name, roleId: r.role_id, data: JSON.parse(r.data) as T }));
  }

  async names(mountId: string): Promise<string[]> {
    const rows = await this.deps.db
      .selectFrom('pki_auth_roles')
      .select('name')
      .where('mount_id', '=', mountId)
      .orderBy('name')
      .execute();
    return rows.map((r) => r.name);
  }

  /** Creates or replaces a role. */
  async put<T>(mountId: string, role: StoredRole<T>, now: Date, ex: Executor = this.deps.db): Promise<void> {
    const at = now.toISOString();
    try {
      await ex
        .insertInto('pki_auth_roles')
        .values({
          mount_id: mountId,
          name: role.name,
          role_id: role.roleId,
          data: JSON.stringify(role.data),
          created_at: at,
          updated_at: at,
        })
        .onConflict((oc) =>
          oc
            .columns(['mount_id', 'name'])
            .doUpdateSet({ role_id: role.roleId, data: JSON.stringify(role.data), updated_at: at }),
        )
        .execute();
    } catch (err) {
      if (isUniqueViolation(err)) throw invalid('role_id already in use', 'role_id');
      throw err;
    }
  }

  async delete(mountId: string, name: string, ex: Executor = this.deps.db): Promise<boolean> {
    const res = await ex
      .deleteFrom('pki_auth_roles')
      .where('mount_id', '=', mountId)
      .where('name', '=', name)
      .executeTakeFirst();
    return Number(res.numDeletedRows) > 0;
  }

  async purgeMount(mountId: string): Promise<void> {
    await this.deps.db.deleteFrom('pki_auth_roles').where('mount_id', '=', mountId).execute();
    await this.deps.db.deleteFrom('pki_auth_secret_ids').where('mount_id', '=', mountId).execute();
  }
}
