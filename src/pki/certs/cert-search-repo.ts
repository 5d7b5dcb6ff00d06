import { sql } from 'kysely';
import type { Kysely } from 'kysely';
import type { DatabaseKind } from '../../db/database.js';
import type { Database } from '../../db/schema.js';
import type { CertSearchHit, CertSearchQuery } from './cert-search.js';

/** Fewer characters than a trigram: the FTS5 index cannot answer, a LIKE scan does. */
const TRIGRAM = 3;

const likePattern = (s: string): string => `%${s.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/**
 * SQL of certificate search over pki_certs (migration 0025). Substrings of names go
 * through the FTS5 trigram table on SQLite and through LIKE (pg_trgm's GIN index when
 * present) on PostgreSQL; pages are keyset pages in (sort column, serial) order.
 */
export class CertSearchRepo {
  constructor(private readonly deps: { db: Kysely<Database>; kind: DatabaseKind }) {}

  /** Up to `q.limit + 1` hits: the extra one tells that a next page exists. */
  async search(mountId: string, q: CertSearchQuery): Promise<CertSearchHit[]> {
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
    if (q.name !== undefined) {
      const pattern = likePattern(q.name);
      s = s.where(sql<boolean>`names like ${pattern} escape '\\'`);
      if (this.deps.kind === 'sqlite' && q.name.length >= TRIGRAM) {
        const phrase = `"${q.name.replace(/"/g, '""')}"`;
        s = s.where(
          sql<boolean>`rowid in (select rowid from pki_certs_names_fts where pki_certs_names_fts match ${phrase})`,
        );
      }
    }
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
}
