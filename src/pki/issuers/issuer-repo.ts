import type { Kysely, Selectable, Transaction } from 'kysely';
import { isUniqueViolation } from '../../db/constraint-errors.js';
import type { Database } from '../../db/schema.js';
import type { PkiIssuersTable } from '../../db/schema-pki-issuance.js';
import { certificateSearchNames } from '../crypto/cert-parser.js';
import { conflict } from '../../shared/errors.js';
import type { AiaUrls } from '../config/mount-config.js';
import type { KeyType } from '../keys/key.js';
import type { IssuerUsage, LeafNotAfterBehavior, PkiIssuer } from './issuer.js';

export type Executor = Kysely<Database> | Transaction<Database>;

/** A certificate kept for `cert/:serial` and `certs` (roots, signed intermediates, issued leaves). */
export interface StoredCertificate {
  mountId: string;
  serial: string;
  issuerId: string;
  der: Buffer;
  notAfter: Date;
  revokedAt: Date | null;
  revocationIssuerId: string;
  createdAt: Date;
}

function toIssuer(r: Selectable<PkiIssuersTable>): PkiIssuer {
  return {
    id: r.id,
    mountId: r.mount_id,
    name: r.name ?? '',
    keyId: r.key_id ?? '',
    certificateDer: Buffer.from(r.certificate_der),
    certificateSha256: r.certificate_sha256,
    serial: r.serial,
    subjectDer: Buffer.from(r.subject_der),
    issuerDer: Buffer.from(r.issuer_der),
    publicKeySha256: r.public_key_sha256,
    keyType: r.key_type as KeyType,
    subjectKeyId: r.subject_key_id,
    authorityKeyId: r.authority_key_id,
    notBefore: new Date(r.not_before),
    notAfter: new Date(r.not_after),
    leafNotAfterBehavior: r.leaf_not_after_behavior as LeafNotAfterBehavior,
    usage: r.usage === '' ? [] : (r.usage.split(',') as IssuerUsage[]),
    manualChain: r.manual_chain === null ? null : (JSON.parse(r.manual_chain) as string[]),
    caChain: JSON.parse(r.ca_chain) as string[],
    revocationSignatureAlgorithm: r.revocation_signature_algorithm,
    aia: JSON.parse(r.aia) as AiaUrls,
    revokedAt: r.revoked_at === null ? null : new Date(r.revoked_at),
    createdAt: new Date(r.created_at),
    seq: r.seq,
  };
}

const aiaJson = (i: PkiIssuer): string => JSON.stringify(i.aia);

function nameConflict(err: unknown, name: string): never {
  if (isUniqueViolation(err, 'pki_issuers_mount_id_name_key'))
    throw conflict(`issuer name already in use: ${name}`, 'issuer_name');
  if (isUniqueViolation(err, 'pki_issuers_mount_id_certificate_sha256_key'))
    throw conflict('this issuer certificate already exists in the mount');
  throw err;
}

export class IssuerRepo {
  readonly #db: Kysely<Database>;
  constructor(deps: { db: Kysely<Database> }) {
    this.#db = deps.db;
  }

  get executor(): Executor {
    return this.#db;
  }

  async nextSeq(ex: Executor, mountId: string): Promise<number> {
    const r = await ex
      .selectFrom('pki_issuers')
      .select((eb) => eb.fn.max('seq').as('m'))
      .where('mount_id', '=', mountId)
      .executeTakeFirst();
    return Number(r?.m ?? 0) + 1;
  }

  async insert(ex: Executor, i: PkiIssuer): Promise<void> {
    try {
      await ex
        .insertInto('pki_issuers')
        .values({
          id: i.id,
          mount_id: i.mountId,
          name: i.name === '' ? null : i.name,
          key_id: i.keyId === '' ? null : i.keyId,
          certificate_der: i.certificateDer,
          certificate_sha256: i.certificateSha256,
          serial: i.serial,
          subject_der: i.subjectDer,
          issuer_der: i.issuerDer,
          public_key_sha256: i.publicKeySha256,
          key_type: i.keyType,
          subject_key_id: i.subjectKeyId,
          authority_key_id: i.authorityKeyId,
          not_before: i.notBefore.toISOString(),
          not_after: i.notAfter.toISOString(),
          leaf_not_after_behavior: i.leafNotAfterBehavior,
          usage: i.usage.join(','),
          manual_chain: i.manualChain === null ? null : JSON.stringify(i.manualChain),
          ca_chain: JSON.stringify(i.caChain),
          revocation_signature_algorithm: i.revocationSignatureAlgorithm,
          aia: aiaJson(i),
          revoked_at: i.revokedAt?.toISOString() ?? null,
          created_at: i.createdAt.toISOString(),
          seq: i.seq,
        })
        .execute();
    } catch (err) {
      nameConflict(err, i.name);
    }
  }

  /** Writes the editable fields (issuer update). */
  async update(ex: Executor, i: PkiIssuer): Promise<void> {
    try {
      await ex
        .updateTable('pki_issuers')
        .set({
          name: i.name === '' ? null : i.name,
          key_id: i.keyId === '' ? null : i.keyId,
          leaf_not_after_behavior: i.leafNotAfterBehavior,
          usage: i.usage.join(','),
          manual_chain: i.manualChain === null ? null : JSON.stringify(i.manualChain),
          revocation_signature_algorithm: i.revocationSignatureAlgorithm,
          aia: aiaJson(i),
        })
        .where('mount_id', '=', i.mountId)
        .where('id', '=', i.id)
        .execute();
    } catch (err) {
      nameConflict(err, i.name);
    }
  }

  async setChain(ex: Executor, mountId: string, id: string, chain: string[]): Promise<void> {
    await ex
      .updateTable('pki_issuers')
      .set({ ca_chain: JSON.stringify(chain) })
      .where('mount_id', '=', mountId)
      .where('id', '=', id)
      .execute();
  }

  async setKey(ex: Executor, mountId: string, id: string, keyId: string): Promise<void> {
    await ex
      .updateTable('pki_issuers')
      .set({ key_id: keyId })
      .where('mount_id', '=', mountId)
      .where('id', '=', id)
      .where('key_id', 'is', null)
      .execute();
  }

  /** Marks the issuer revoked and takes away its issuing usage; false when it already was. */
  async markRevoked(ex: Executor, mountId: string, id: string, at: Date, usage: string): Promise<boolean> {
    const r = await ex
      .updateTable('pki_issuers')
      .set({ revoked_at: at.toISOString(), usage })
      .where('mount_id', '=', mountId)
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  async byId(ex: Executor, mountId: string, id: string): Promise<PkiIssuer | undefined> {
    const r = await ex
      .selectFrom('pki_issuers')
      .selectAll()
      .where('mount_id', '=', mountId)
      .where('id', '=', id)
      .executeTakeFirst();
    return r ? toIssuer(r) : undefined;
  }

  async byName(ex: Executor, mountId: string, name: string): Promise<PkiIssuer | undefined> {
    const r = await ex
      .selectFrom('pki_issuers')
      .selectAll()
      .where('mount_id', '=', mountId)
      .where('name', '=', name)
      .executeTakeFirst();
    return r ? toIssuer(r) : undefined;
  }

  async byCertificateSha256(ex: Executor, mountId: string, sha: string): Promise<PkiIssuer | undefined> {
    const r = await ex
      .selectFrom('pki_issuers')
      .selectAll()
      .where('mount_id', '=', mountId)
      .where('certificate_sha256', '=', sha)
      .executeTakeFirst();
    return r ? toIssuer(r) : undefined;
  }

  async byIds(ex: Executor, mountId: string, ids: readonly string[]): Promise<PkiIssuer[]> {
    if (ids.length === 0) return [];
    const rows = await ex
      .selectFrom('pki_issuers')
      .selectAll()
      .where('mount_id', '=', mountId)
      .where('id', 'in', [...ids])
      .execute();
    return rows.map(toIssuer);
  }

  async list(ex: Executor, mountId: string): Promise<PkiIssuer[]> {
    const rows = await ex
      .selectFrom('pki_issuers')
      .selectAll()
      .where('mount_id', '=', mountId)
      .orderBy('seq')
      .orderBy('id')
      .execute();
    return rows.map(toIssuer);
  }

  async delete(ex: Executor, mountId: string, id: string): Promise<boolean> {
    const r = await ex
      .deleteFrom('pki_issuers')
      .where('mount_id', '=', mountId)
      .where('id', '=', id)
      .executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }

  async deleteAll(ex: Executor, mountId: string): Promise<void> {
    await ex.deleteFrom('pki_issuers').where('mount_id', '=', mountId).execute();
  }

  // ---------------------------------------------------------------- stored certificates

  async insertCertificate(ex: Executor, c: StoredCertificate): Promise<void> {
    try {
      await ex
        .insertInto('pki_certs')
        .values({
          mount_id: c.mountId,
          serial: c.serial,
          issuer_id: c.issuerId === '' ? null : c.issuerId,
          certificate_der: c.der,
          not_after: c.notAfter.toISOString(),
          revoked_at: c.revokedAt?.toISOString() ?? null,
          revocation_issuer_id: c.revocationIssuerId === '' ? null : c.revocationIssuerId,
          created_at: c.createdAt.toISOString(),
          ...searchColumns(c.der),
        })
        .execute();
    } catch (err) {
      if (isUniqueViolation(err)) throw conflict(`a certificate with serial ${c.serial} already exists in this mount`);
      throw err;
    }
  }

  async certificate(ex: Executor, mountId: string, serial: string): Promise<StoredCertificate | undefined> {
    const r = await ex
      .selectFrom('pki_certs')
      .selectAll()
      .where('mount_id', '=', mountId)
      .where('serial', '=', serial)
      .executeTakeFirst();
    if (!r) return undefined;
    return {
      mountId: r.mount_id,
      serial: r.serial,
      issuerId: r.issuer_id ?? '',
      der: Buffer.from(r.certificate_der),
      notAfter: new Date(r.not_after),
      revokedAt: r.revoked_at === null ? null : new Date(r.revoked_at),
      revocationIssuerId: r.revocation_issuer_id ?? '',
      createdAt: new Date(r.created_at),
    };
  }

  async certificateSerials(ex: Executor, mountId: string): Promise<string[]> {
    const rows = await ex
      .selectFrom('pki_certs')
      .select('serial')
      .where('mount_id', '=', mountId)
      .orderBy('serial')
      .execute();
    return rows.map((r) => r.serial);
  }

  async deleteAllCertificates(ex: Executor, mountId: string): Promise<void> {
    await ex.deleteFrom('pki_certs').where('mount_id', '=', mountId).execute();
  }
}

function searchColumns(der: Buffer): { common_name: string; names: string; role: null } {
  const found = certificateSearchNames(der);
  return { common_name: found.commonName, names: found.names, role: null };
}
