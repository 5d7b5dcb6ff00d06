import type { Kysely, Selectable, Transaction } from 'kysely';
import { isUniqueViolation } from '../../db/constraint-errors.js';
import type { Database } from '../../db/schema.js';
import type { PkiMountsTable } from '../../db/schema-pki.js';
import { conflict } from '../../shared/errors.js';
import type { Mount, MountConfigExtras, MountType } from './mount.js';

type Executor = Kysely<Database> | Transaction<Database>;

export class MountRepo {
  constructor(private readonly deps: { db: Kysely<Database> }) {}

  async list(ex: Executor = this.deps.db): Promise<Mount[]> {
    const rows = await ex.selectFrom('pki_mounts').selectAll().orderBy('path').execute();
    return rows.map(toMount);
  }

  async findByPath(path: string, ex: Executor = this.deps.db): Promise<Mount | undefined> {
    const row = await ex.selectFrom('pki_mounts').selectAll().where('path', '=', path).executeTakeFirst();
    return row ? toMount(row) : undefined;
  }

  async insert(m: Mount, ex: Executor = this.deps.db): Promise<void> {
    try {
      await ex
        .insertInto('pki_mounts')
        .values({
          id: m.id,
          path: m.path,
          type: m.type,
          description: m.description,
          default_lease_ttl: m.defaultLeaseTtl,
          max_lease_ttl: m.maxLeaseTtl,
          config: JSON.stringify(m.config),
          options: JSON.stringify(m.options),
          local: m.local ? 1 : 0,
          seal_wrap: m.sealWrap ? 1 : 0,
          created_at: m.createdAt.toISOString(),
          updated_at: m.updatedAt.toISOString(),
        })
        .execute();
    } catch (err) {
      if (isUniqueViolation(err, 'pki_mounts_path_key')) throw conflict(`path is already in use at ${m.path}/`, 'path');
      throw err;
    }
  }

  /** Writes the tunable fields; false when the mount is gone. */
  async update(m: Mount, ex: Executor = this.deps.db): Promise<boolean> {
    const res = await ex
      .updateTable('pki_mounts')
      .set({
        description: m.description,
        default_lease_ttl: m.defaultLeaseTtl,
        max_lease_ttl: m.maxLeaseTtl,
        config: JSON.stringify(m.config),
        options: JSON.stringify(m.options),
        updated_at: m.updatedAt.toISOString(),
      })
      .where('id', '=', m.id)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  async delete(id: string, ex: Executor = this.deps.db): Promise<boolean> {
    const res = await ex.deleteFrom('pki_mounts').where('id', '=', id).executeTakeFirst();
    return Number(res.numDeletedRows) > 0;
  }
}

function toMount(r: Selectable<PkiMountsTable>): Mount {
  return {
    id: r.id,
    path: r.path,
    type: r.type as MountType,
    description: r.description,
    defaultLeaseTtl: Number(r.default_lease_ttl),
    maxLeaseTtl: Number(r.max_lease_ttl),
    config: JSON.parse(r.config) as MountConfigExtras,
    options: JSON.parse(r.options) as Record<string, string>,
    local: r.local === 1,
    sealWrap: r.seal_wrap === 1,
    createdAt: new Date(r.created_at),
    updatedAt: new Date(r.updated_at),
  };
}
