import { sql } from 'kysely';
import type { Kysely, SelectQueryBuilder } from 'kysely';
import type { DatabaseKind } from '../../db/database.js';
import type { UnitsOfWork } from '../../db/unit-of-work.js';
import type { Database } from '../../db/schema.js';
import type { CertSearchHit, CertSearchQuery, NamePlan } from './cert-search.js';

const likePattern = (s: string): string => `%${s.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

type Select = SelectQueryBuilder<Database, 'pki_certs', Record<string, unknown>>;

/**
 * SQL of certificate search over pki_certs (migrations 0025 and 0031). Substrings of names
 * go through the FTS5 trigram table on SQLite (filled after the commit, up to the mark in
 * pki_cert_search_mark) and through LIKE (pg_trgm's GIN index when present) on PostgreSQL;
 * pages are keyset pages in (sort column, serial) order.
 */
export class CertSearchRepo {
  constructor(
    private readonly deps: {
      db: Kysely<Database>;
      kind: DatabaseKind;
      /** Units of work of `db` (the index is written in write-only units: on SQLite, the writer thread). */
      units: UnitsOfWork;
    },
  ) {}

  /** Whether names are found through the FTS5 table that the indexer fills (SQLite). */
  get deferredIndex(): boolean {
    return this.deps.kind === 'sqlite';
  }

  /** Rows stored but not yet in the trigram index (always none on PostgreSQL, whose index is kept in the commit). */
  async unindexedRows(): Promise<number> {
    if (!this.deferredIndex) return 0;
    const r = await sql<{ n: number | null }>`SELECT (SELECT coalesce(max(rowid), 0) FROM pki_certs)
      - (SELECT indexed_rowid FROM pki_cert_search_mark) AS n`.execute(this.deps.db);
    return Number(r.rows[0]?.n ?? 0);
  }

  /** Adds the rows in the next `span` rowids above the mark to the trigram index and moves the mark past them. */
  async indexNext(span: number): Promise<void> {
    await this.deps.units.writeOnly(async (tx) => {
      await sql`INSERT INTO pki_certs_names_fts (rowid, names)
        SELECT rowid, names FROM pki_certs
        WHERE rowid > (SELECT indexed_rowid FROM pki_cert_search_mark)
          AND rowid <= (SELECT indexed_rowid FROM pki_cert_search_mark) + ${span}
          AND names IS NOT NULL`.execute(tx);
      await sql`UPDATE pki_cert_search_mark
        SET indexed_rowid = min(indexed_rowid + ${span}, (SELECT coalesce(max(rowid), 0) FROM pki_certs))
        WHERE indexed_rowid < (SELECT coalesce(max(rowid), 0) FROM pki_certs)`.execute(tx);
    });
  }

  /** The names of about `size` certificates picked at random (all mounts): what the trigram plan is based on. */
  async sampleNames(size: number): Promise<string[]> {
    if (this.deps.kind === 'postgres') {
      // Whole pages at random (cheap); the share of pages from the planner's row estimate, all of a small table.
      const r = await sql<{ names: string | null }>`SELECT names FROM pki_certs TABLESAMPLE SYSTEM ((
          SELECT least(100, greatest(0.01, 200.0 * ${size} / greatest(reltuples, 1)))::real
          FROM pg_class WHERE oid = 'pki_certs'::regclass)) LIMIT ${size}`.execute(this.deps.db);
      return r.rows.map((x) => x.names ?? '');
    }
    const r = await sql<{ names: string | null }>`SELECT names FROM pki_certs WHERE rowid IN (
      SELECT abs(random()) % (SELECT coalesce(max(rowid), 0) FROM pki_certs) + 1
      FROM (WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${size})
            SELECT i FROM n))`.execute(this.deps.db);
    return r.rows.map((x) => x.names ?? '');
  }

  /** Up to `q.limit + 1` hits: the extra one tells that a next page exists. */
  async search(mountId: string, q: CertSearchQuery, plan: NamePlan = {}): Promise<CertSearchHit[]> {
    const col = q.sort === 'serial' ? 'serial' : 'not_after';
    const dir = q.descending ? 'desc' : 'asc';
    let s = this.deps.db
      .selectFrom('pki_certs')
      .select(['serial', 'common_name', 'names', 'issuer_id', 'role', 'not_after', 'created_at', 'revoked_at'])
      .where('mount_id', '=', mountId);
    if (q.serialPrefix !== undefined)
      s = s.where('serial', '>=', q.serialPrefix).where('serial', '<', `${q.serialPrefix}g`);
    if (q.issuerId !== undefined) s = s.where('issuer_id', '=', q.issuerId);
    if (q.role !== undefined) s = s.where('role', '=', q.role);
    if (q.notAfterFrom) s = s.where('not_after', '>=', q.notAfterFrom.toISOString());
    if (q.notAfterTo) s = s.where('not_after', '<', q.notAfterTo.toISOString());
    if (q.revoked !== undefined) s = s.where('revoked_at', q.revoked ? 'is not' : 'is', null);
    if (q.name !== undefined) s = this.#whereName(s, q.name, plan);
    if (q.after) {
      const { value, serial } = q.after;
      const op = q.descending ? '<' : '>';
      s =
        col === 'serial'
          ? s.where('serial', op, serial)
          : s.where((eb) => eb.or([eb(col, op, value), eb.and([eb(col, '=', value), eb('serial', op, serial)])]));
    }
    s = col === 'serial' ? s.orderBy('serial', dir) : s.orderBy(col, dir).orderBy('serial', dir);
    const rows = await s.limit(q.limit + 1).execute();
    return rows.map((r) => ({
      serial: r.serial,
      commonName: r.common_name ?? '',
      names: r.names ? r.names.split('\n') : [],
      issuerId: r.issuer_id,
      role: r.role,
      notAfter: new Date(r.not_after),
      createdAt: new Date(r.created_at),
      revokedAt: r.revoked_at ? new Date(r.revoked_at) : null,
    }));
  }

  /**
   * The name condition: the whole substring checked on each row (instr/strpos: no pattern syntax, and on
   * PostgreSQL no index condition of its own), narrowed through the trigram index as the plan says.
   */
  #whereName<S extends Select>(s: S, name: string, plan: NamePlan): S {
    if (this.deps.kind === 'sqlite') {
      let out = s.where(sql<boolean>`instr(names, ${name}) > 0`);
      if (plan.trigrams) {
        const match = plan.trigrams.map((t) => `"${t.replace(/"/g, '""')}"`).join(' AND ');
        out = out.where(
          sql<boolean>`rowid in (select rowid from pki_certs_names_fts where pki_certs_names_fts match ${match})`,
        );
      }
      return out as S;
    }
    let out = s.where(sql<boolean>`strpos(names, ${name}) > 0`);
    if (plan.trigrams)
      for (const t of plan.trigrams) out = out.where(sql<boolean>`names like ${likePattern(t)} escape '\\'`);
    else if (!plan.common) out = out.where(sql<boolean>`names like ${likePattern(name)} escape '\\'`);
    return out as S;
  }
}
