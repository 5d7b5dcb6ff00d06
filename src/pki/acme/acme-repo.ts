import { sql } from 'kysely';
import type { Kysely, Transaction } from 'kysely';
import { ParamQuery } from '../../db/one-param-query.js';
import { write } from '../../db/unit-of-work.js';
import type { UnitsOfWork } from '../../db/unit-of-work.js';
import type { Database } from '../../db/schema.js';
import type { PkiAcmeAuthorizationsTable, PkiAcmeOrdersTable } from '../../db/schema-pki-acme.js';
import type {
  AccountStatus,
  AcmeAccount,
  AcmeAuthorization,
  AcmeChallenge,
  AcmeOrder,
  AcmeProblem,
  AuthzStatus,
  Identifier,
  OrderStatus,
} from './acme.js';

export type Executor = Kysely<Database> | Transaction<Database>;

const iso = (d: Date): string => d.toISOString();
const dateOr = (s: string | null): Date | undefined => (s === null ? undefined : new Date(s));

/** An authorization with the version its conditional updates compare against. */
export type VersionedAuthz = AcmeAuthorization & { version: number };

/** A stored EAB key (its HMAC key still sealed). */
export interface StoredEab {
  id: string;
  mountId: string;
  directory: string;
  keyType: string;
  sealedKey: string;
  createdAt: Date;
}

/** All SQL of the ACME server. */
export class AcmeRepo {
  readonly #db: Kysely<Database>;
  readonly #units: UnitsOfWork;

  constructor(deps: { db: Kysely<Database>; units: UnitsOfWork }) {
    this.#db = deps.db;
    this.#units = deps.units;
  }

  get executor(): Executor {
    return this.#db;
  }

  get units(): UnitsOfWork {
    return this.#units;
  }

  /** One read-write unit of work, durable when it resolves (on a SQLite file, fsynced off the event loop). */
  transaction<T>(fn: (tx: Executor) => Promise<T>): Promise<T> {
    return this.#units.readWrite(fn);
  }

  // The statements every ACME request runs, compiled once.
  readonly #useNonce = new ParamQuery((nonce: string, expiresAt: string) =>
    this.#db
      .insertInto('pki_acme_nonces')
      .values({ nonce, expires_at: expiresAt })
      .onConflict((oc) => oc.column('nonce').doNothing()),
  );
  readonly #order = new ParamQuery((id: string, mountId: string) =>
    this.#db.selectFrom('pki_acme_orders').selectAll().where('id', '=', id).where('mount_id', '=', mountId),
  );
  readonly #authz = new ParamQuery((id: string, mountId: string) =>
    this.#db.selectFrom('pki_acme_authorizations').selectAll().where('id', '=', id).where('mount_id', '=', mountId),
  );

  readonly #readyOrder = new ParamQuery((at: string, orderId: string) =>
    this.#db
      .updateTable('pki_acme_orders')
      .set({ status: sql.lit('ready'), updated_at: at })
      .where('id', '=', orderId)
      .where('status', '=', sql.lit('pending'))
      .where((eb) =>
        eb.not(
          eb.exists(
            eb
              .selectFrom('pki_acme_authorizations')
              .select('id')
              .where('order_id', '=', orderId)
              .where('status', '!=', sql.lit('valid')),
          ),
        ),
      ),
  );

  // ----- nonces

  /** Records a nonce as used; false when it already was. */
  async useNonce(ex: Executor, nonce: string, expiresAt: Date): Promise<boolean> {
    const r = await this.#useNonce.run(ex, nonce, iso(expiresAt));
    return Number(r.numAffectedRows ?? 0n) === 1;
  }

  async deleteExpiredNonces(now: Date): Promise<number> {
    const r = await this.#db.deleteFrom('pki_acme_nonces').where('expires_at', '<', iso(now)).executeTakeFirst();
    return Number(r.numDeletedRows);
  }

  // ----- accounts

  async insertAccount(ex: Executor, a: AcmeAccount): Promise<void> {
    await ex
      .insertInto('pki_acme_accounts')
      .values({
        id: a.id,
        mount_id: a.mountId,
        directory: a.directory,
        thumbprint: a.thumbprint,
        jwk: JSON.stringify(a.jwk),
        status: a.status,
        contact: JSON.stringify(a.contact),
        terms_agreed: a.termsAgreed ? 1 : 0,
        eab_id: a.eab?.id ?? null,
        eab_created_at: a.eab ? iso(a.eab.createdAt) : null,
        created_at: iso(a.createdAt),
        updated_at: iso(a.createdAt),
        revoked_at: null,
      })
      .execute();
  }

  async account(ex: Executor, mountId: string, id: string): Promise<AcmeAccount | undefined> {
    const r = await ex
      .selectFrom('pki_acme_accounts')
      .selectAll()
      .where('id', '=', id)
      .where('mount_id', '=', mountId)
      .executeTakeFirst();
    return r && toAccount(r);
  }

  async accountByThumbprint(ex: Executor, mountId: string, thumbprint: string): Promise<AcmeAccount | undefined> {
    const r = await ex
      .selectFrom('pki_acme_accounts')
      .selectAll()
      .where('mount_id', '=', mountId)
      .where('thumbprint', '=', thumbprint)
      .executeTakeFirst();
    return r && toAccount(r);
  }

  async accountIds(mountId: string): Promise<string[]> {
    const rows = await this.#db
      .selectFrom('pki_acme_accounts')
      .select('id')
      .where('mount_id', '=', mountId)
      .orderBy('id')
      .execute();
    return rows.map((r) => r.id);
  }

  /** Changes contacts and/or status of an account still `valid`; false when it no longer is. */
  async updateAccount(
    ex: Executor,
    id: string,
    patch: { contact?: string[]; status?: AccountStatus; at: Date; from?: AccountStatus[] },
  ): Promise<boolean> {
    const r = await ex
      .updateTable('pki_acme_accounts')
      .set({
        ...(patch.contact ? { contact: JSON.stringify(patch.contact) } : {}),
        ...(patch.status ? { status: patch.status } : {}),
        ...(patch.status === 'revoked' ? { revoked_at: iso(patch.at) } : {}),
        ...(patch.status === 'valid' ? { revoked_at: null } : {}),
        updated_at: iso(patch.at),
      })
      .where('id', '=', id)
      .where('status', 'in', patch.from ?? ['valid'])
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  /** Replaces the account key if it is still `oldThumbprint` (key rollover). */
  async replaceKey(
    ex: Executor,
    id: string,
    oldThumbprint: string,
    next: { thumbprint: string; jwk: Record<string, unknown> },
    at: Date,
  ): Promise<boolean> {
    const r = await ex
      .updateTable('pki_acme_accounts')
      .set({ thumbprint: next.thumbprint, jwk: JSON.stringify(next.jwk), updated_at: iso(at) })
      .where('id', '=', id)
      .where('thumbprint', '=', oldThumbprint)
      .where('status', '=', 'valid')
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  // ----- orders and authorizations

  async insertOrder(ex: Executor, o: AcmeOrder, authzs: readonly AcmeAuthorization[]): Promise<void> {
    await ex.insertInto('pki_acme_orders').values(orderRow(o)).execute();
    await ex
      .insertInto('pki_acme_authorizations')
      .values(authzs.map((a) => authzRow(a, o.createdAt)))
      .execute();
  }

  async order(ex: Executor, mountId: string, id: string): Promise<AcmeOrder | undefined> {
    const r = await this.#order.first(ex, id, mountId);
    return r && toOrder(r);
  }

  async orderBySerial(ex: Executor, mountId: string, serial: string): Promise<AcmeOrder | undefined> {
    const r = await ex
      .selectFrom('pki_acme_orders')
      .selectAll()
      .where('mount_id', '=', mountId)
      .where('cert_serial', '=', serial)
      .executeTakeFirst();
    return r && toOrder(r);
  }

  async ordersOfAccount(ex: Executor, accountId: string): Promise<AcmeOrder[]> {
    const rows = await ex
      .selectFrom('pki_acme_orders')
      .selectAll()
      .where('account_id', '=', accountId)
      .orderBy('created_at')
      .execute();
    return rows.map(toOrder);
  }

  /** Moves an order from one of `from` to `to` with the given fields; false when it was not in `from`. */
  async moveOrder(
    ex: Executor,
    id: string,
    from: readonly OrderStatus[],
    to: OrderStatus,
    at: Date,
    fields: {
      error?: AcmeProblem;
      cert?: { serial: string; notAfter: Date; chain: string };
    } = {},
  ): Promise<boolean> {
    const set: Partial<PkiAcmeOrdersTable> = { status: to, updated_at: iso(at) };
    if (fields.error) set.error = JSON.stringify(fields.error);
    if (fields.cert) {
      set.cert_serial = fields.cert.serial;
      set.cert_not_after = iso(fields.cert.notAfter);
      set.cert_chain = fields.cert.chain;
    }
    const r = await ex
      .updateTable('pki_acme_orders')
      .set(set)
      .where('id', '=', id)
      .where('status', 'in', [...from])
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  /**
   * The processing order becomes valid with its certificate, reading nothing: it runs in the
   * certificate's write-only unit (decision 0045).
   */
  async recordOrderValid(
    tx: Executor,
    id: string,
    at: Date,
    cert: { serial: string; notAfter: Date; chain: string },
  ): Promise<void> {
    await write(
      tx,
      tx
        .updateTable('pki_acme_orders')
        .set({
          status: 'valid',
          updated_at: iso(at),
          cert_serial: cert.serial,
          cert_not_after: iso(cert.notAfter),
          cert_chain: cert.chain,
        })
        .where('id', '=', id)
        .where('status', '=', 'processing'),
    );
  }

  /**
   * A pending order becomes ready when none of its authorizations is left other than valid
   * (run after an authorization became valid, in the same transaction).
   */
  async readyOrderIfAuthorized(ex: Executor, orderId: string, at: Date): Promise<void> {
    await this.#readyOrder.run(ex, iso(at), orderId);
  }

  async authorization(ex: Executor, mountId: string, id: string): Promise<VersionedAuthz | undefined> {
    const r = await this.#authz.first(ex, id, mountId);
    return r && toAuthz(r);
  }

  async authorizationsOfOrder(ex: Executor, orderId: string): Promise<VersionedAuthz[]> {
    const rows = await ex.selectFrom('pki_acme_authorizations').selectAll().where('order_id', '=', orderId).execute();
    return rows.map(toAuthz);
  }

  /**
   * Writes an authorization's status, challenges and validation lease if its stored version
   * is still the one read (nobody else changed it meanwhile); false otherwise.
   */
  async updateAuthz(ex: Executor, a: VersionedAuthz, at: Date): Promise<boolean> {
    const r = await ex
      .updateTable('pki_acme_authorizations')
      .set({
        status: a.status,
        challenges: JSON.stringify(a.challenges.map(challengeJson)),
        validation_lease_until: a.validationLeaseUntil ? iso(a.validationLeaseUntil) : null,
        version: a.version + 1,
        updated_at: iso(at),
      })
      .where('id', '=', a.id)
      .where('version', '=', a.version)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) === 1;
  }

  // ----- external account binding

  async insertEab(e: StoredEab): Promise<void> {
    await this.#db
      .insertInto('pki_acme_eab')
      .values({
        id: e.id,
        mount_id: e.mountId,
        directory: e.directory,
        key_type: e.keyType,
        sealed_key: e.sealedKey,
        created_at: iso(e.createdAt),
      })
      .execute();
  }

  async eab(ex: Executor, mountId: string, id: string): Promise<StoredEab | undefined> {
    const r = await ex
      .selectFrom('pki_acme_eab')
      .selectAll()
      .where('id', '=', id)
      .where('mount_id', '=', mountId)
      .executeTakeFirst();
    return r && toEab(r);
  }

  async listEab(mountId: string): Promise<StoredEab[]> {
    const rows = await this.#db
      .selectFrom('pki_acme_eab')
      .selectAll()
      .where('mount_id', '=', mountId)
      .orderBy('id')
      .execute();
    return rows.map(toEab);
  }

  /** Deletes an EAB key; false when it was already gone (used or deleted). */
  async deleteEab(ex: Executor, mountId: string, id: string): Promise<boolean> {
    const r = await ex
      .deleteFrom('pki_acme_eab')
      .where('id', '=', id)
      .where('mount_id', '=', mountId)
      .executeTakeFirst();
    return Number(r.numDeletedRows) === 1;
  }

  // ----- tidy and purge

  /** Orders (and their authorizations) whose certificate, or whose own expiry, is before `cutoff`. */
  async deleteOrdersBefore(mountId: string, cutoff: Date, limit: number): Promise<number> {
    const c = iso(cutoff);
    const ids = await this.#db
      .selectFrom('pki_acme_orders')
      .select('id')
      .where('mount_id', '=', mountId)
      .where((eb) =>
        eb.or([
          eb.and([eb('cert_not_after', 'is not', null), eb('cert_not_after', '<', c)]),
          eb.and([eb('cert_not_after', 'is', null), eb('expires_at', '<', c)]),
        ]),
      )
      .limit(limit)
      .execute();
    if (ids.length === 0) return 0;
    const list = ids.map((r) => r.id);
    await this.transaction(async (tx) => {
      await tx.deleteFrom('pki_acme_authorizations').where('order_id', 'in', list).execute();
      await tx.deleteFrom('pki_acme_orders').where('id', 'in', list).execute();
    });
    return list.length;
  }

  /** Accounts with no order at all, created (or revoked) before `cutoff`. */
  async idleAccounts(mountId: string, cutoff: Date): Promise<AcmeAccount[]> {
    const rows = await this.#db
      .selectFrom('pki_acme_accounts as a')
      .selectAll('a')
      .where('a.mount_id', '=', mountId)
      .where('a.created_at', '<', iso(cutoff))
      .where((eb) =>
        eb.not(eb.exists(eb.selectFrom('pki_acme_orders as o').select('o.id').whereRef('o.account_id', '=', 'a.id'))),
      )
      .execute();
    return rows.map(toAccount);
  }

  async deleteAccount(id: string): Promise<void> {
    await this.#db.deleteFrom('pki_acme_accounts').where('id', '=', id).execute();
  }

  async countAccounts(mountId: string): Promise<number> {
    const r = await this.#db
      .selectFrom('pki_acme_accounts')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('mount_id', '=', mountId)
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  async purgeMount(mountId: string): Promise<void> {
    await this.transaction(async (tx) => {
      await tx.deleteFrom('pki_acme_authorizations').where('mount_id', '=', mountId).execute();
      await tx.deleteFrom('pki_acme_orders').where('mount_id', '=', mountId).execute();
      await tx.deleteFrom('pki_acme_accounts').where('mount_id', '=', mountId).execute();
      await tx.deleteFrom('pki_acme_eab').where('mount_id', '=', mountId).execute();
    });
  }
}

type AccountRow = Database['pki_acme_accounts'];

function toAccount(r: AccountRow): AcmeAccount {
  return {
    id: r.id,
    mountId: r.mount_id,
    directory: r.directory,
    thumbprint: r.thumbprint,
    jwk: JSON.parse(r.jwk) as Record<string, unknown>,
    status: r.status as AccountStatus,
    contact: JSON.parse(r.contact) as string[],
    termsAgreed: r.terms_agreed === 1,
    eab: r.eab_id !== null ? { id: r.eab_id, createdAt: new Date(r.eab_created_at ?? r.created_at) } : undefined,
    createdAt: new Date(r.created_at),
    revokedAt: dateOr(r.revoked_at),
  };
}

function orderRow(o: AcmeOrder): PkiAcmeOrdersTable {
  return {
    id: o.id,
    mount_id: o.mountId,
    account_id: o.accountId,
    directory: o.directory,
    status: o.status,
    identifiers: JSON.stringify(o.identifiers),
    authz_ids: JSON.stringify(o.authzIds),
    not_before: o.notBefore ? iso(o.notBefore) : null,
    not_after: o.notAfter ? iso(o.notAfter) : null,
    expires_at: iso(o.expiresAt),
    error: o.error ? JSON.stringify(o.error) : null,
    replaces: o.replaces ?? null,
    cert_serial: null,
    cert_not_after: null,
    cert_chain: null,
    created_at: iso(o.createdAt),
    updated_at: iso(o.createdAt),
  };
}

function toOrder(r: PkiAcmeOrdersTable): AcmeOrder {
  return {
    id: r.id,
    mountId: r.mount_id,
    accountId: r.account_id,
    directory: r.directory,
    status: r.status as OrderStatus,
    identifiers: JSON.parse(r.identifiers) as Identifier[],
    authzIds: JSON.parse(r.authz_ids) as string[],
    notBefore: dateOr(r.not_before),
    notAfter: dateOr(r.not_after),
    expiresAt: new Date(r.expires_at),
    error: r.error === null ? undefined : (JSON.parse(r.error) as AcmeProblem),
    replaces: r.replaces ?? undefined,
    certSerial: r.cert_serial ?? undefined,
    certNotAfter: dateOr(r.cert_not_after),
    certChain: r.cert_chain ?? undefined,
    createdAt: new Date(r.created_at),
  };
}

interface ChallengeJson {
  type: string;
  status: string;
  validated: string | null;
  error: AcmeProblem | null;
  attempts: number;
}

const challengeJson = (c: AcmeChallenge): ChallengeJson => ({
  type: c.type,
  status: c.status,
  validated: c.validated ? iso(c.validated) : null,
  error: c.error ?? null,
  attempts: c.attempts,
});

function authzRow(a: AcmeAuthorization, createdAt: Date): PkiAcmeAuthorizationsTable {
  return {
    id: a.id,
    mount_id: a.mountId,
    account_id: a.accountId,
    order_id: a.orderId,
    identifier_type: a.identifier.type,
    identifier_value: a.identifier.value,
    wildcard: a.wildcard ? 1 : 0,
    status: a.status,
    expires_at: iso(a.expiresAt),
    token: a.token,
    challenges: JSON.stringify(a.challenges.map(challengeJson)),
    validation_lease_until: null,
    version: 0,
    created_at: iso(createdAt),
    updated_at: iso(createdAt),
  };
}

function toAuthz(r: PkiAcmeAuthorizationsTable): VersionedAuthz {
  return {
    id: r.id,
    mountId: r.mount_id,
    accountId: r.account_id,
    orderId: r.order_id,
    identifier: { type: r.identifier_type as Identifier['type'], value: r.identifier_value },
    wildcard: r.wildcard === 1,
    status: r.status as AuthzStatus,
    expiresAt: new Date(r.expires_at),
    token: r.token,
    challenges: (JSON.parse(r.challenges) as ChallengeJson[]).map((c) => ({
      type: c.type as AcmeChallenge['type'],
      status: c.status as AcmeChallenge['status'],
      validated: c.validated === null ? undefined : new Date(c.validated),
      error: c.error ?? undefined,
      attempts: c.attempts,
    })),
    validationLeaseUntil: dateOr(r.validation_lease_until),
    version: r.version,
  };
}

function toEab(r: Database['pki_acme_eab']): StoredEab {
  return {
    id: r.id,
    mountId: r.mount_id,
    directory: r.directory,
    keyType: r.key_type,
    sealedKey: r.sealed_key,
    createdAt: new Date(r.created_at),
  };
}
