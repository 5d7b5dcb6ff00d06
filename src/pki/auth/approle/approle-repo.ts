import type { Kysely, Selectable } from 'kysely';
import { isUniqueViolation } from '../../../db/constraint-errors.js';
import type { Database } from '../../../db/schema.js';
import type { PkiAuthSecretIdsTable } from '../../../db/schema-pki-auth.js';
import { invalid } from '../../../shared/errors.js';
import type { SecretIdEntry } from './approle.js';

/** AppRole secret ids, stored only as hashes. */
export class AppRoleRepo {
  constructor(private readonly deps: { db: Kysely<Database> }) {}

  async insert(mountId: string, hash: string, s: SecretIdEntry): Promise<void> {
    try {
      await this.deps.db
        .insertInto('pki_auth_secret_ids')
        .values({
          secret_hash: hash,
          accessor: s.accessor,
          mount_id: mountId,
          role_name: s.roleName,
          uses_left: s.usesLeft,
          num_uses: s.numUses,
          ttl: s.ttl,
          expires_at: s.expiresAt ? s.expiresAt.toISOString() : null,
          cidr_list: JSON.stringify(s.cidrList),
          token_bound_cidrs: JSON.stringify(s.tokenBoundCidrs),
          metadata: JSON.stringify(s.metadata),
          created_at: s.createdAt.toISOString(),
          updated_at: s.updatedAt.toISOString(),
        })
        .execute();
    } catch (err) {
      if (isUniqueViolation(err)) throw invalid('SecretID is already registered', 'secret_id');
      throw err;
    }
  }

  async findByHash(mountId: string, hash: string): Promise<SecretIdEntry | undefined> {
    const row = await this.deps.db
      .selectFrom('pki_auth_secret_ids')
      .selectAll()
      .where('secret_hash', '=', hash)
      .where('mount_id', '=', mountId)
      .executeTakeFirst();
    return row ? toEntry(row) : undefined;
  }

  async findByAccessor(mountId: string, roleName: string, accessor: string): Promise<SecretIdEntry | undefined> {
    const row = await this.deps.db
      .selectFrom('pki_auth_secret_ids')
      .selectAll()
      .where('accessor', '=', accessor)
      .where('mount_id', '=', mountId)
      .where('role_name', '=', roleName)
      .executeTakeFirst();
    return row ? toEntry(row) : undefined;
  }

  async accessors(mountId: string, roleName: string): Promise<string[]> {
    const rows = await this.deps.db
      .selectFrom('pki_auth_secret_ids')
      .select('accessor')
      .where('mount_id', '=', mountId)
      .where('role_name', '=', roleName)
      .orderBy('accessor')
      .execute();
    return rows.map((r) => r.accessor);
  }

  /**
   * Takes one use of a limited secret id that has not expired. One conditional update, so
   * two nodes (or two requests) racing for the last use cannot both win. A spent secret id
   * is then removed.
   */
  async spendUse(hash: string, now: Date): Promise<boolean> {
    const res = await this.deps.db
      .updateTable('pki_auth_secret_ids')
      .set((eb) => ({ uses_left: eb('uses_left', '-', 1), updated_at: now.toISOString() }))
      .where('secret_hash', '=', hash)
      .where('uses_left', '>', 0)
      .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now.toISOString())]))
      .executeTakeFirst();
    if (Number(res.numUpdatedRows) === 0) return false;
    await this.deps.db
      .deleteFrom('pki_auth_secret_ids')
      .where('secret_hash', '=', hash)
      .where('uses_left', '<=', 0)
      .execute();
    return true;
  }

  async deleteByHash(mountId: string, roleName: string, hash: string): Promise<void> {
    await this.deps.db
      .deleteFrom('pki_auth_secret_ids')
      .where('secret_hash', '=', hash)
      .where('mount_id', '=', mountId)
      .where('role_name', '=', roleName)
      .execute();
  }

  async deleteByAccessor(mountId: string, roleName: string, accessor: string): Promise<void> {
    await this.deps.db
      .deleteFrom('pki_auth_secret_ids')
      .where('accessor', '=', accessor)
      .where('mount_id', '=', mountId)
      .where('role_name', '=', roleName)
      .execute();
  }

  async deleteRole(mountId: string, roleName: string): Promise<void> {
    await this.deps.db
      .deleteFrom('pki_auth_secret_ids')
      .where('mount_id', '=', mountId)
      .where('role_name', '=', roleName)
      .execute();
  }

  /** Removes expired secret ids (tidy). */
  async deleteExpired(now: Date): Promise<number> {
    const res = await this.deps.db
      .deleteFrom('pki_auth_secret_ids')
      .where('expires_at', 'is not', null)
      .where('expires_at', '<=', now.toISOString())
      .executeTakeFirst();
    return Number(res.numDeletedRows);
  }
}

function toEntry(r: Selectable<PkiAuthSecretIdsTable>): SecretIdEntry {
  return {
    accessor: r.accessor,
    roleName: r.role_name,
    usesLeft: r.uses_left === null ? null : Number(r.uses_left),
    numUses: Number(r.num_uses),
    ttl: Number(r.ttl),
    expiresAt: r.expires_at ? new Date(r.expires_at) : null,
    cidrList: JSON.parse(r.cidr_list) as string[],
    tokenBoundCidrs: JSON.parse(r.token_bound_cidrs) as string[],
    metadata: JSON.parse(r.metadata) as Record<string, string>,
    createdAt: new Date(r.created_at),
    updatedAt: new Date(r.updated_at),
  };
}
