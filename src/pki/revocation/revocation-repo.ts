import type { Kysely, Transaction } from 'kysely';
import { fixedChunks } from '../../db/fixed-chunks.js';
import { ParamQuery } from '../../db/one-param-query.js';
import type { Database } from '../../db/schema.js';
import type { UnitsOfWork } from '../../db/unit-of-work.js';
import { DEFAULT_CRL_CONFIG } from './revocation.js';
import type { CrlConfig, CrlKind, StoredCrl } from './revocation.js';

export type Executor = Kysely<Database> | Transaction<Database>;

/** What revocation needs of a stored certificate (without its bytes). */
export interface CertState {
  serial: string;
  issuerId: string;
  notAfter: Date;
  revokedAt: Date | null;
}

/** A revoked row as a CRL build reads it: storage-form serial and the stored ISO time. */
export interface RevokedRow {
  serial: string;
  revoked_at: string;
}

const CRL_SETTING = 'crl';

/**
 * SQL of revocation: the revocation columns of pki_certs (kept there so a certificate and
 * its revocation are one row), the stored CRLs (pki_crls) and config/crl (pki_settings).
 */
export class RevocationRepo {
  constructor(private readonly deps: { db: Kysely<Database>; units: UnitsOfWork }) {}

  get executor(): Executor {
    return this.deps.db;
  }

  get units(): UnitsOfWork {
    return this.deps.units;
  }

  /** A read-write unit of work. */
  transaction<T>(fn: (tx: Executor) => Promise<T>): Promise<T> {
    return this.deps.units.readWrite(fn);
  }

  /** Compiled once: OCSP reads it on every request. */
  private readonly certStateQuery = new ParamQuery((mountId: string, serial: string) =>
    this.deps.db
      .selectFrom('pki_certs')
      .select(['serial', 'issuer_id', 'not_after', 'revoked_at'])
      .where('mount_id', '=', mountId)
      .where('serial', '=', serial),
  );

  /** Compiled once per IN-list size; a list is padded to the next size by repeating its last serial. */
  private readonly certStatesQueries = new Map(
    [1, 4, 16, 64].map(
      (n) =>
        [
          n,
          new ParamQuery((mountId: string, ...serials: string[]) =>
            this.deps.db
              .selectFrom('pki_certs')
              .select(['serial', 'issuer_id', 'not_after', 'revoked_at'])
              .where('mount_id', '=', mountId)
              .where('serial', 'in', serials),
          ),
        ] as const,
    ),
  );

  /** certState of many serials (distinct, storage form) in a few compiled queries. */
  async certStates(mountId: string, serials: readonly string[]): Promise<CertState[]> {
    const out: CertState[] = [];
    for (let i = 0; i < serials.length; i += 64) {
      const part = serials.slice(i, i + 64);
      const size = [1, 4, 16, 64].find((n) => n >= part.length)!;
      const padded = [...part, ...Array<string>(size - part.length).fill(part[part.length - 1]!)];
      for (const r of await this.certStatesQueries.get(size)!.execute(this.deps.db, mountId, ...padded)) {
        out.push({
          serial: r.serial,
          issuerId: r.issuer_id ?? '',
          notAfter: new Date(r.not_after),
          revokedAt: r.revoked_at ? new Date(r.revoked_at) : null,
        });
      }
    }
    return out;
  }

  async certState(ex: Executor, mountId: string, serial: string): Promise<CertState | undefined> {
    const r = await this.certStateQuery.first(ex, mountId, serial);
    return r
      ? {
          serial: r.serial,
          issuerId: r.issuer_id ?? '',
          notAfter: new Date(r.not_after),
          revokedAt: r.revoked_at ? new Date(r.revoked_at) : null,
        }
      : undefined;
  }

  async certDer(ex: Executor, mountId: string, serial: string): Promise<Buffer | undefined> {
    const r = await ex
      .selectFrom('pki_certs')
      .select('certificate_der')
      .where('mount_id', '=', mountId)
      .where('serial', '=', serial)
      .executeTakeFirst();
    return r?.certificate_der;
  }

  /**
   * Stamps `at` on those of `serials` not yet revoked and not expired at `at`, attributing
   * each to its issuer; returns what this call revoked (serial and issuer id, '' if none).
   */
  async markRevoked(
    ex: Executor,
    mountId: string,
    serials: readonly string[],
    at: Date,
  ): Promise<{ serial: string; issuerId: string }[]> {
    const out: { serial: string; issuerId: string }[] = [];
    const iso = at.toISOString();
    for (const chunk of fixedChunks(serials)) {
      const rows = await ex
        .updateTable('pki_certs')
        .set((eb) => ({ revoked_at: iso, revocation_issuer_id: eb.ref('issuer_id') }))
        .where('mount_id', '=', mountId)
        .where('serial', 'in', chunk)
        .where('revoked_at', 'is', null)
        // Wrapped so that no planner prefers the (mount_id, not_after) index to the primary key.
        .where((eb) => eb(eb.fn.coalesce('not_after', eb.val('')), '>', iso))
        .returning(['serial', 'issuer_id'])
        .execute();
      for (const r of rows) out.push({ serial: r.serial, issuerId: r.issuer_id ?? '' });
    }
    return out;
  }

  /** States of these serials (those that exist), in the caller's transaction. */
  async statesIn(ex: Executor, mountId: string, serials: readonly string[]): Promise<Map<string, CertState>> {
    const out = new Map<string, CertState>();
    for (const chunk of fixedChunks(serials)) {
      const rows = await ex
        .selectFrom('pki_certs')
        .select(['serial', 'issuer_id', 'not_after', 'revoked_at'])
        .where('mount_id', '=', mountId)
        .where('serial', 'in', chunk)
        .execute();
      for (const r of rows) {
        out.set(r.serial, {
          serial: r.serial,
          issuerId: r.issuer_id ?? '',
          notAfter: new Date(r.not_after),
          revokedAt: r.revoked_at ? new Date(r.revoked_at) : null,
        });
      }
    }
    return out;
  }

  /** Revokes an issuer's own certificate row, if stored, attributing it to the issuer's parent. */
  async markIssuerCertRevoked(
    ex: Executor,
    mountId: string,
    serial: string,
    parentIssuerId: string | null,
    at: Date,
  ): Promise<void> {
    await ex
      .updateTable('pki_certs')
      .set({ revoked_at: at.toISOString(), revocation_issuer_id: parentIssuerId })
      .where('mount_id', '=', mountId)
      .where('serial', '=', serial)
      .where('revoked_at', 'is', null)
      .execute();
  }

  /**
   * Revoked rows attributed to `issuerIds` (and, with `orphans`, to no issuer), optionally
   * only those revoked at or after `since`. Reads the covering index pki_certs_revoked_idx.
   */
  async revokedRows(
    ex: Executor,
    mountId: string,
    issuerIds: readonly string[],
    opts: { orphans: boolean; since?: Date },
  ): Promise<RevokedRow[]> {
    // One query per issuer (and one for unattributed rows), each an index range scan.
    const parts: RevokedRow[][] = [];
    for (const issuerId of [...issuerIds, ...(opts.orphans ? [null] : [])]) {
      let q = ex.selectFrom('pki_certs').select(['serial', 'revoked_at']).where('mount_id', '=', mountId);
      q =
        issuerId === null
          ? q.where('revocation_issuer_id', 'is', null)
          : q.where('revocation_issuer_id', '=', issuerId);
      q = opts.since ? q.where('revoked_at', '>=', opts.since.toISOString()) : q.where('revoked_at', 'is not', null);
      parts.push((await q.execute()) as RevokedRow[]);
    }
    return parts.length === 1 ? parts[0]! : parts.flat();
  }

  /** Whether any row of these issuers was revoked at or after `since`. */
  async anyRevokedSince(ex: Executor, mountId: string, since: Date): Promise<boolean> {
    const r = await ex
      .selectFrom('pki_certs')
      .select('serial')
      .where('mount_id', '=', mountId)
      .where('revoked_at', '>=', since.toISOString())
      .limit(1)
      .executeTakeFirst();
    return r !== undefined;
  }

  async listRevokedSerials(ex: Executor, mountId: string, opts: { after?: string; limit?: number }): Promise<string[]> {
    let q = ex
      .selectFrom('pki_certs')
      .select('serial')
      .where('mount_id', '=', mountId)
      .where('revoked_at', 'is not', null)
      .orderBy('serial');
    if (opts.after) q = q.where('serial', '>', opts.after);
    if (opts.limit !== undefined && opts.limit > 0) q = q.limit(opts.limit);
    return (await q.execute()).map((r) => r.serial);
  }

  async getConfig(ex: Executor, mountId: string): Promise<CrlConfig> {
    const r = await ex
      .selectFrom('pki_settings')
      .select('value')
      .where('mount_id', '=', mountId)
      .where('name', '=', CRL_SETTING)
      .executeTakeFirst();
    return { ...DEFAULT_CRL_CONFIG, ...(r ? (JSON.parse(r.value) as Partial<CrlConfig>) : {}) };
  }

  async putConfig(ex: Executor, mountId: string, config: CrlConfig, at: Date): Promise<void> {
    const value = JSON.stringify(config);
    await ex
      .insertInto('pki_settings')
      .values({ mount_id: mountId, name: CRL_SETTING, value, updated_at: at.toISOString() })
      .onConflict((oc) => oc.columns(['mount_id', 'name']).doUpdateSet({ value, updated_at: at.toISOString() }))
      .execute();
  }

  async getCrl(ex: Executor, mountId: string, issuerId: string, kind: CrlKind): Promise<StoredCrl | undefined> {
    const r = await ex
      .selectFrom('pki_crls')
      .selectAll()
      .where('mount_id', '=', mountId)
      .where('issuer_id', '=', issuerId)
      .where('kind', '=', kind)
      .executeTakeFirst();
    return r ? toStoredCrl(r) : undefined;
  }

  /** Everything but the bytes, for every stored CRL of the mount. */
  async crlHeaders(ex: Executor, mountId: string): Promise<Omit<StoredCrl, 'der'>[]> {
    const rows = await ex
      .selectFrom('pki_crls')
      .select([
        'mount_id',
        'issuer_id',
        'kind',
        'crl_number',
        'base_crl_number',
        'this_update',
        'next_update',
        'watermark',
        'entry_count',
        'created_at',
      ])
      .where('mount_id', '=', mountId)
      .execute();
    return rows.map((r) => toStoredCrl({ ...r, der: Buffer.alloc(0) }));
  }

  /**
   * Stores a CRL for each of `issuerIds` unless a CRL with a number at least as high is
   * already stored there (another node built a newer one). Returns whether ours was kept.
   */
  async putCrl(
    ex: Executor,
    crl: Omit<StoredCrl, 'issuerId'>,
    issuerIds: readonly string[],
    at: Date,
  ): Promise<boolean> {
    let kept = true;
    for (const issuerId of issuerIds) {
      const row = {
        mount_id: crl.mountId,
        issuer_id: issuerId,
        kind: crl.kind,
        crl_number: crl.crlNumber,
        base_crl_number: crl.baseCrlNumber,
        this_update: crl.thisUpdate.toISOString(),
        next_update: crl.nextUpdate.toISOString(),
        watermark: crl.watermark.toISOString(),
        entry_count: crl.entryCount,
        der: crl.der,
        created_at: at.toISOString(),
      };
      const res = await ex
        .insertInto('pki_crls')
        .values(row)
        .onConflict((oc) =>
          oc
            .columns(['mount_id', 'issuer_id', 'kind'])
            .doUpdateSet((eb) => ({
              crl_number: eb.ref('excluded.crl_number'),
              base_crl_number: eb.ref('excluded.base_crl_number'),
              this_update: eb.ref('excluded.this_update'),
              next_update: eb.ref('excluded.next_update'),
              watermark: eb.ref('excluded.watermark'),
              entry_count: eb.ref('excluded.entry_count'),
              der: eb.ref('excluded.der'),
              created_at: eb.ref('excluded.created_at'),
            }))
            .where('pki_crls.crl_number', '<', crl.crlNumber),
        )
        .executeTakeFirst();
      if (Number(res.numInsertedOrUpdatedRows ?? 0n) === 0) kept = false;
    }
    return kept;
  }

  async deleteCrls(
    ex: Executor,
    mountId: string,
    opts: { kind?: CrlKind; keepIssuers?: readonly string[] } = {},
  ): Promise<void> {
    let q = ex.deleteFrom('pki_crls').where('mount_id', '=', mountId);
    if (opts.kind) q = q.where('kind', '=', opts.kind);
    if (opts.keepIssuers && opts.keepIssuers.length > 0) q = q.where('issuer_id', 'not in', opts.keepIssuers);
    await q.execute();
  }
}

function toStoredCrl(r: Database['pki_crls']): StoredCrl {
  return {
    mountId: r.mount_id,
    issuerId: r.issuer_id,
    kind: r.kind,
    crlNumber: Number(r.crl_number),
    baseCrlNumber: r.base_crl_number === null ? null : Number(r.base_crl_number),
    thisUpdate: new Date(r.this_update),
    nextUpdate: new Date(r.next_update),
    watermark: new Date(r.watermark),
    entryCount: r.entry_count,
    der: r.der,
  };
}
