import { sql } from 'kysely';
import type { Kysely, Selectable, Transaction } from 'kysely';
import { isUniqueViolation } from '../../db/constraint-errors.js';
import type { Database } from '../../db/schema.js';
import type { PkiTokensTable } from '../../db/schema-pki.js';
import { invalid } from '../../shared/errors.js';
import type { TokenEntry } from './token.js';

type Executor = Kysely<Database> | Transaction<Database>;

/** Parent chains and subtrees are bounded so a corrupted cycle can never loop forever. */
const MAX_DEPTH = 64;

export class TokenRepo {
  constructor(private readonly deps: { db: Kysely<Database> }) {}

  async insert(t: TokenEntry, ex: Executor = this.deps.db): Promise<void> {
    try {
      await ex.insertInto('pki_tokens').values(toRow(t)).execute();
    } catch (err) {
      if (isUniqueViolation(err)) throw invalid('cannot create a token with this id', 'id');
      throw err;
    }
  }

  /** The token and its ancestors, nearest first (an ancestor missing from the list was revoked). */
  async findWithAncestors(hash: string): Promise<TokenEntry[]> {
    const res = await sql<Selectable<PkiTokensTable> & { depth: number }>`
      with recursive chain as (
        select t.*, 0 as depth from pki_tokens t where t.token_hash = ${hash}
        union all
        select p.*, c.depth + 1 from pki_tokens p join chain c on p.accessor = c.parent_accessor
        where c.depth < ${MAX_DEPTH}
      )
      select * from chain order by depth`.execute(this.deps.db);
    return res.rows.map(toEntry);
  }

  async findByHash(hash: string, ex: Executor = this.deps.db): Promise<TokenEntry | undefined> {
    const row = await ex.selectFrom('pki_tokens').selectAll().where('token_hash', '=', hash).executeTakeFirst();
    return row ? toEntry(row) : undefined;
  }

  async findByAccessor(accessor: string, ex: Executor = this.deps.db): Promise<TokenEntry | undefined> {
    const row = await ex.selectFrom('pki_tokens').selectAll().where('accessor', '=', accessor).executeTakeFirst();
    return row ? toEntry(row) : undefined;
  }

  /** Accessors of the token and all of its descendants. */
  async subtreeAccessors(accessor: string, ex: Executor = this.deps.db): Promise<string[]> {
    const res = await sql<{ accessor: string }>`
      with recursive tree as (
        select accessor, 0 as depth from pki_tokens where accessor = ${accessor}
        union all
        select t.accessor, tree.depth + 1 from pki_tokens t join tree on t.parent_accessor = tree.accessor
        where tree.depth < ${MAX_DEPTH}
      )
      select accessor from tree`.execute(ex);
    return [...new Set(res.rows.map((r) => r.accessor))];
  }

  async deleteByAccessors(accessors: readonly string[], ex: Executor = this.deps.db): Promise<number> {
    if (accessors.length === 0) return 0;
    const res = await ex.deleteFrom('pki_tokens').where('accessor', 'in', accessors).executeTakeFirst();
    return Number(res.numDeletedRows);
  }

  /** Makes the children of a token orphans (revoke-orphan). */
  async orphanChildren(accessor: string, ex: Executor = this.deps.db): Promise<void> {
    await ex
      .updateTable('pki_tokens')
      .set({ parent_accessor: null, orphan: 1 })
      .where('parent_accessor', '=', accessor)
      .execute();
  }

  async updateExpiry(
    accessor: string,
    expiresAt: Date | null,
    renewedAt: Date,
    ex: Executor = this.deps.db,
  ): Promise<boolean> {
    const res = await ex
      .updateTable('pki_tokens')
      .set({ expires_at: expiresAt ? expiresAt.toISOString() : null, last_renewal_at: renewedAt.toISOString() })
      .where('accessor', '=', accessor)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  /** Spends one use if the count is still `expected`; false when another request spent it first. */
  async spendUse(accessor: string, expected: number, next: number): Promise<boolean> {
    const res = await this.deps.db
      .updateTable('pki_tokens')
      .set({ num_uses: next })
      .where('accessor', '=', accessor)
      .where('num_uses', '=', expected)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  /** Tokens past their expiry or out of uses, oldest first. */
  async listDeadAccessors(now: Date, limit: number): Promise<string[]> {
    const rows = await this.deps.db
      .selectFrom('pki_tokens')
      .select('accessor')
      .where((eb) =>
        eb.or([
          eb.and([eb('expires_at', 'is not', null), eb('expires_at', '<=', now.toISOString())]),
          eb('num_uses', '<', 0),
        ]),
      )
      .orderBy('expires_at')
      .limit(limit)
      .execute();
    return rows.map((r) => r.accessor);
  }

  /** Accessors of tokens created under a path prefix (the logins of one auth mount). */
  async accessorsByPathPrefix(prefix: string): Promise<string[]> {
    const like = `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    const rows = await this.deps.db
      .selectFrom('pki_tokens')
      .select('accessor')
      .where(sql<boolean>`path like ${like} escape '\\'`)
      .execute();
    return rows.map((r) => r.accessor);
  }

  async listAccessors(): Promise<string[]> {
    const rows = await this.deps.db.selectFrom('pki_tokens').select('accessor').orderBy('accessor').execute();
    return rows.map((r) => r.accessor);
  }
}

function toRow(t: TokenEntry): PkiTokensTable {
  return {
    token_hash: t.hash,
    accessor: t.accessor,
    parent_accessor: t.parentAccessor,
    policies: JSON.stringify(t.policies),
    meta: t.meta ? JSON.stringify(t.meta) : null,
    display_name: t.displayName,
    num_uses: t.numUses,
    renewable: t.renewable ? 1 : 0,
    orphan: t.orphan ? 1 : 0,
    ttl: t.ttl,
    explicit_max_ttl: t.explicitMaxTtl,
    period: t.period,
    path: t.path,
    created_at: t.createdAt.toISOString(),
    expires_at: t.expiresAt ? t.expiresAt.toISOString() : null,
    last_renewal_at: t.lastRenewalAt ? t.lastRenewalAt.toISOString() : null,
    bound_cidrs: t.boundCidrs ? JSON.stringify(t.boundCidrs) : null,
    max_ttl: t.maxTtl,
  };
}

function toEntry(r: Selectable<PkiTokensTable>): TokenEntry {
  return {
    hash: r.token_hash,
    accessor: r.accessor,
    parentAccessor: r.parent_accessor,
    policies: JSON.parse(r.policies) as string[],
    meta: r.meta ? (JSON.parse(r.meta) as Record<string, string>) : null,
    displayName: r.display_name,
    numUses: Number(r.num_uses),
    renewable: Number(r.renewable) === 1,
    orphan: Number(r.orphan) === 1,
    ttl: Number(r.ttl),
    explicitMaxTtl: Number(r.explicit_max_ttl),
    period: Number(r.period),
    path: r.path,
    createdAt: new Date(r.created_at),
    expiresAt: r.expires_at ? new Date(r.expires_at) : null,
    lastRenewalAt: r.last_renewal_at ? new Date(r.last_renewal_at) : null,
    boundCidrs: r.bound_cidrs ? (JSON.parse(r.bound_cidrs) as string[]) : null,
    maxTtl: Number(r.max_ttl ?? 0),
  };
}
