import type { Kysely, Selectable, Transaction } from 'kysely';
import { isUniqueViolation } from '../../db/constraint-errors.js';
import type { Database } from '../../db/schema.js';
import type { PkiAuthMountsTable } from '../../db/schema-pki-auth.js';
import { conflict } from '../../shared/errors.js';
import type { AuthMethodType, AuthMount } from './auth-mount.js';

type Executor = Kysely<Database> | Transaction<Database>;

export class AuthMountRepo {
  constructor(private readonly deps: { db: Kysely<Database> }) {}

  async list(ex: Executor = this.deps.db): Promise<AuthMount[]> {
    const rows = await ex.selectFrom('pki_auth_mounts').selectAll().orderBy('path').execute();
    return rows.map(toMount);
  }

  async findByPath(path: string, ex: Executor = this.deps.db): Promise<AuthMount | undefined> {
    const row = await ex.selectFrom('pki_auth_mounts').selectAll().where('path', '=', path).executeTakeFirst();
    return row ? toMount(row) : undefined;
  }

  async insert(m: AuthMount, ex: Executor = this.deps.db): Promise<void> {
    try {
      await ex.insertInto('pki_auth_mounts').values(toRow(m)).execute();
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict(`path is already in use at auth/${m.path}/`, 'path');
      throw err;
    }
  }

  /** Writes tunables and the method configuration; false when the mount is gone. */
  async update(m: AuthMount, ex: Executor = this.deps.db): Promise<boolean> {
    const { id: _id, path: _path, type: _type, created_at: _c, ...rest } = toRow(m);
    const res = await ex.updateTable('pki_auth_mounts').set(rest).where('id', '=', m.id).executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  async delete(id: string, ex: Executor = this.deps.db): Promise<boolean> {
    const res = await ex.deleteFrom('pki_auth_mounts').where('id', '=', id).executeTakeFirst();
    return Number(res.numDeletedRows) > 0;
  }
}

function toRow(m: AuthMount): PkiAuthMountsTable {
  return {
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
    method_config: m.methodConfig ? JSON.stringify(m.methodConfig) : null,
    created_at: m.createdAt.toISOString(),
    updated_at: m.updatedAt.toISOString(),
  };
}

function toMount(r: Selectable<PkiAuthMountsTable>): AuthMount {
  return {
    id: r.id,
    path: r.path,
    type: r.type as AuthMethodType,
    description: r.description,
    defaultLeaseTtl: Number(r.default_lease_ttl),
    maxLeaseTtl: Number(r.max_lease_ttl),
    config: JSON.parse(r.config) as Record<string, unknown>,
    options: JSON.parse(r.options) as Record<string, string>,
    local: Number(r.local) === 1,
    sealWrap: Number(r.seal_wrap) === 1,
    methodConfig: r.method_config ? (JSON.parse(r.method_config) as Record<string, unknown>) : null,
    createdAt: new Date(r.created_at),
    updatedAt: new Date(r.updated_at),
  };
}
