import type { Insertable, Kysely, Transaction } from 'kysely';
import { isUniqueViolation } from '../../db/constraint-errors.js';
import { fixedChunks } from '../../db/fixed-chunks.js';
import type { UnitsOfWork, WriteOnlyTx } from '../../db/unit-of-work.js';
import type { Database } from '../../db/schema.js';
import { RowsInsert } from '../../db/one-param-query.js';
import { PgJsonInsert, pgBytea } from '../../db/pg-json-rows.js';
import { certificateSearchNames } from '../crypto/cert-parser.js';
import type { PkiCertMetadataTable, PkiCertsTable } from '../../db/schema-pki-issuance.js';
import { conflict } from '../../shared/errors.js';
import type { IssuedCertificate, CertMetadata } from './cert.js';

export type Executor = Kysely<Database> | Transaction<Database>;

export { fixedChunks };

/** PostgreSQL: the certificates of a group commit as one JSON parameter (the DER as bytea's hex text). */
const PG_INSERT_CERTS = new PgJsonInsert('pki_certs');

/** SQL of stored certificates (pki_certs) and their metadata (pki_cert_metadata). */
export class CertRepo {
  // The group commit's inserts, compiled once per batch size.
  readonly #insertCerts = new RowsInsert<Insertable<PkiCertsTable>>(
    [
      'mount_id',
      'serial',
      'issuer_id',
      'certificate_der',
      'not_after',
      'revoked_at',
      'revocation_issuer_id',
      'created_at',
      'common_name',
      'names',
      'role',
    ],
    (rows) => this.deps.db.insertInto('pki_certs').values(rows),
    () => this.deps.units.kind !== 'sqlite',
  );
  readonly #insertMetadata = new RowsInsert<Insertable<PkiCertMetadataTable>>(
    ['mount_id', 'serial', 'issuer_id', 'role', 'not_after', 'metadata'],
    (rows) => this.deps.db.insertInto('pki_cert_metadata').values(rows),
    () => this.deps.units.kind !== 'sqlite',
  );

  constructor(
    private readonly deps: {
      db: Kysely<Database>;
      /** The units of work of `db`; its kind decides how rows are grouped into INSERTs (RowsInsert). */
      units: UnitsOfWork;
    },
  ) {}

  get executor(): Executor {
    return this.deps.db;
  }

  get units(): UnitsOfWork {
    return this.deps.units;
  }

  /** A read-write unit of work. */
  readWrite<T>(fn: (tx: Executor) => Promise<T>): Promise<T> {
    return this.deps.units.readWrite(fn);
  }

  /**
   * A write-only unit of work (on a SQLite file, committed on the writer thread); a unique
   * violation becomes a conflict.
   */
  async writeOnly(fn: (tx: WriteOnlyTx) => Promise<void>): Promise<void> {
    try {
      await this.deps.units.writeOnly(fn);
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict('a certificate with this serial already exists in this mount');
      throw err;
    }
  }

  async insertMany(
    ex: Executor,
    certs: readonly IssuedCertificate[],
    metadata: readonly CertMetadata[],
  ): Promise<void> {
    try {
      await this.#insertMany(ex, certs, metadata);
    } catch (err) {
      if (isUniqueViolation(err))
        throw conflict(
          `a certificate with serial ${certs.length === 1 ? certs[0]!.serial : ''} already exists in this mount`,
        );
      throw err;
    }
  }

  async #insertMany(
    ex: Executor,
    certs: readonly IssuedCertificate[],
    metadata: readonly CertMetadata[],
  ): Promise<void> {
    if (certs.length > 0) {
      const rows = certs.map((c) => {
        const found = certificateSearchNames(c.der);
        return {
          mount_id: c.mountId,
          serial: c.serial,
          issuer_id: c.issuerId,
          certificate_der: c.der,
          not_after: c.notAfter.toISOString(),
          revoked_at: null,
          revocation_issuer_id: null,
          created_at: c.createdAt.toISOString(),
          common_name: found.commonName,
          names: found.names,
          role: c.role ?? null,
        };
      });
      if (this.deps.units.kind === 'postgres')
        await PG_INSERT_CERTS.run(
          ex,
          rows.map((r) => ({ ...r, certificate_der: pgBytea(r.certificate_der) })),
        );
      else await this.#insertCerts.run(ex, rows);
    }
    if (metadata.length > 0) {
      await this.#insertMetadata.run(
        ex,
        metadata.map((m) => ({
          mount_id: m.mountId,
          serial: m.serial,
          issuer_id: m.issuerId,
          role: m.role,
          not_after: m.notAfter.toISOString(),
          metadata: m.metadata,
        })),
      );
    }
  }

  /** Sets revoked_at when not yet revoked; returns whether the row exists. */
  async markRevoked(
    ex: Executor,
    mountId: string,
    serial: string,
    at: Date,
  ): Promise<{ exists: boolean; revokedAt: Date | null }> {
    await ex
      .updateTable('pki_certs')
      .set((eb) => ({ revoked_at: at.toISOString(), revocation_issuer_id: eb.ref('issuer_id') }))
      .where('mount_id', '=', mountId)
      .where('serial', '=', serial)
      .where('revoked_at', 'is', null)
      .execute();
    const r = await ex
      .selectFrom('pki_certs')
      .select('revoked_at')
      .where('mount_id', '=', mountId)
      .where('serial', '=', serial)
      .executeTakeFirst();
    return { exists: r !== undefined, revokedAt: r?.revoked_at ? new Date(r.revoked_at) : null };
  }

  async listSerials(ex: Executor, mountId: string, opts: { after?: string; limit?: number }): Promise<string[]> {
    let q = ex.selectFrom('pki_certs').select('serial').where('mount_id', '=', mountId).orderBy('serial');
    if (opts.after) q = q.where('serial', '>', opts.after);
    if (opts.limit !== undefined && opts.limit > 0) q = q.limit(opts.limit);
    return (await q.execute()).map((r) => r.serial);
  }

  async metadata(ex: Executor, mountId: string, serial: string): Promise<CertMetadata | undefined> {
    const r = await ex
      .selectFrom('pki_cert_metadata')
      .selectAll()
      .where('mount_id', '=', mountId)
      .where('serial', '=', serial)
      .executeTakeFirst();
    return r
      ? {
          mountId: r.mount_id,
          serial: r.serial,
          issuerId: r.issuer_id,
          role: r.role,
          notAfter: new Date(r.not_after),
          metadata: r.metadata,
        }
      : undefined;
  }

  async metadataSerials(ex: Executor, mountId: string): Promise<string[]> {
    return (
      await ex
        .selectFrom('pki_cert_metadata')
        .select('serial')
        .where('mount_id', '=', mountId)
        .orderBy('serial')
        .execute()
    ).map((r) => r.serial);
  }

  // ---------------------------------------------------------------- tidy

  /** How many stored certificates (revoked or not) expired before `cutoff`. */
  async countExpired(ex: Executor, mountId: string, cutoff: Date, revoked: boolean): Promise<number> {
    const r = await ex
      .selectFrom('pki_certs')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('mount_id', '=', mountId)
      .where('not_after', '<', cutoff.toISOString())
      .where('revoked_at', revoked ? 'is not' : 'is', null)
      .executeTakeFirst();
    return Number(r?.n ?? 0);
  }

  /** Deletes up to `limit` stored certificates (revoked or not) that expired before `cutoff`; returns how many. */
  async deleteExpired(ex: Executor, mountId: string, cutoff: Date, revoked: boolean, limit: number): Promise<number> {
    const batch = ex
      .selectFrom('pki_certs')
      .select('serial')
      .where('mount_id', '=', mountId)
      .where('not_after', '<', cutoff.toISOString())
      .where('revoked_at', revoked ? 'is not' : 'is', null)
      .limit(limit);
    const r = await ex
      .deleteFrom('pki_certs')
      .where('mount_id', '=', mountId)
      .where('serial', 'in', batch)
      .executeTakeFirst();
    return Number(r.numDeletedRows);
  }

  async countExpiredMetadata(ex: Executor, mountId: string, cutoff: Date): Promise<number> {
    const r = await ex
      .selectFrom('pki_cert_metadata')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('mount_id', '=', mountId)
      .where('not_after', '<', cutoff.toISOString())
      .executeTakeFirst();
    return Number(r?.n ?? 0);
  }

  async deleteExpiredMetadata(ex: Executor, mountId: string, cutoff: Date, limit: number): Promise<number> {
    const batch = ex
      .selectFrom('pki_cert_metadata')
      .select('serial')
      .where('mount_id', '=', mountId)
      .where('not_after', '<', cutoff.toISOString())
      .limit(limit);
    const r = await ex
      .deleteFrom('pki_cert_metadata')
      .where('mount_id', '=', mountId)
      .where('serial', 'in', batch)
      .executeTakeFirst();
    return Number(r.numDeletedRows);
  }

  /** Revoked certificates after `afterSerial` whose revocation issuer is unset or not among `issuerIds`. */
  async revokedWithoutIssuer(
    ex: Executor,
    mountId: string,
    issuerIds: readonly string[],
    afterSerial: string,
    limit: number,
  ): Promise<{ serial: string; der: Buffer }[]> {
    let q = ex
      .selectFrom('pki_certs')
      .select(['serial', 'certificate_der'])
      .where('mount_id', '=', mountId)
      .where('revoked_at', 'is not', null)
      .where('serial', '>', afterSerial);
    q =
      issuerIds.length === 0
        ? q
        : q.where((eb) =>
            eb.or([eb('revocation_issuer_id', 'is', null), eb('revocation_issuer_id', 'not in', [...issuerIds])]),
          );
    const rows = await q.orderBy('serial').limit(limit).execute();
    return rows.map((r) => ({ serial: r.serial, der: Buffer.from(r.certificate_der) }));
  }

  async setRevocationIssuer(ex: Executor, mountId: string, serial: string, issuerId: string | null): Promise<void> {
    await ex
      .updateTable('pki_certs')
      .set({ revocation_issuer_id: issuerId })
      .where('mount_id', '=', mountId)
      .where('serial', '=', serial)
      .execute();
  }

  /** Stored certificates of a mount and how many of them are revoked. */
  async countStored(ex: Executor, mountId: string): Promise<{ total: number; revoked: number }> {
    const r = await ex
      .selectFrom('pki_certs')
      .select((eb) => [eb.fn.countAll<number>().as('total'), eb.fn.count<number>('revoked_at').as('revoked')])
      .where('mount_id', '=', mountId)
      .executeTakeFirst();
    return { total: Number(r?.total ?? 0), revoked: Number(r?.revoked ?? 0) };
  }

  async deleteAll(ex: Executor, mountId: string): Promise<void> {
    await ex.deleteFrom('pki_cert_metadata').where('mount_id', '=', mountId).execute();
  }
}
