import type { Kysely, Selectable, Transaction } from 'kysely';
import { isUniqueViolation } from '../../db/constraint-errors.js';
import type { Database } from '../../db/schema.js';
import type { PkiKeysTable } from '../../db/schema-pki-issuance.js';
import { conflict } from '../../shared/errors.js';
import type { KeyType, PkiKey } from './key.js';

export type Executor = Kysely<Database> | Transaction<Database>;

export interface NewKeyRow {
  key: PkiKey;
  sealedPrivateKey: string;
}

function toKey(r: Selectable<PkiKeysTable>): PkiKey {
  return {
    id: r.id,
    mountId: r.mount_id,
    name: r.name ?? '',
    type: r.key_type as KeyType,
    bits: r.key_bits,
    publicKeySha256: r.public_key_sha256,
    subjectKeyId: r.subject_key_id,
    createdAt: new Date(r.created_at),
  };
}

const COLUMNS = [
  'id',
  'mount_id',
  'name',
  'key_type',
  'key_bits',
  'public_key_sha256',
  'subject_key_id',
  'created_at',
  'sealed_private_key',
] as const;

export class KeyRepo {
  readonly #db: Kysely<Database>;
  constructor(deps: { db: Kysely<Database> }) {
    this.#db = deps.db;
  }

  get executor(): Executor {
    return this.#db;
  }

  async insert(ex: Executor, row: NewKeyRow): Promise<void> {
    const k = row.key;
    try {
      await ex
        .insertInto('pki_keys')
        .values({
          id: k.id,
          mount_id: k.mountId,
          name: k.name === '' ? null : k.name,
          key_type: k.type,
          key_bits: k.bits,
          sealed_private_key: row.sealedPrivateKey,
          public_key_sha256: k.publicKeySha256,
          subject_key_id: k.subjectKeyId,
          created_at: k.createdAt.toISOString(),
        })
        .execute();
    } catch (err) {
      if (isUniqueViolation(err, 'pki_keys_mount_id_name_key'))
        throw conflict(`key name ${k.name} already in use`, 'key_name');
      if (isUniqueViolation(err, 'pki_keys_mount_id_public_key_sha256_key'))
        throw conflict('this key already exists in the mount');
      throw err;
    }
  }

  async byId(ex: Executor, mountId: string, id: string): Promise<PkiKey | undefined> {
    const r = await ex
      .selectFrom('pki_keys')
      .select(COLUMNS)
      .where('mount_id', '=', mountId)
      .where('id', '=', id)
      .executeTakeFirst();
    return r ? toKey(r) : undefined;
  }

  async byName(ex: Executor, mountId: string, name: string): Promise<PkiKey | undefined> {
    const r = await ex
      .selectFrom('pki_keys')
      .select(COLUMNS)
      .where('mount_id', '=', mountId)
      .where('name', '=', name)
      .executeTakeFirst();
    return r ? toKey(r) : undefined;
  }

  async byPublicKey(ex: Executor, mountId: string, publicKeySha256: string): Promise<PkiKey | undefined> {
    const r = await ex
      .selectFrom('pki_keys')
      .select(COLUMNS)
      .where('mount_id', '=', mountId)
      .where('public_key_sha256', '=', publicKeySha256)
      .executeTakeFirst();
    return r ? toKey(r) : undefined;
  }

  async sealedPrivateKey(ex: Executor, mountId: string, id: string): Promise<string | undefined> {
    const r = await ex
      .selectFrom('pki_keys')
      .select('sealed_private_key')
      .where('mount_id', '=', mountId)
      .where('id', '=', id)
      .executeTakeFirst();
    return r?.sealed_private_key;
  }

  async list(ex: Executor, mountId: string): Promise<PkiKey[]> {
    const rows = await ex
      .selectFrom('pki_keys')
      .select(COLUMNS)
      .where('mount_id', '=', mountId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(toKey);
  }

  async rename(ex: Executor, mountId: string, id: string, name: string): Promise<void> {
    try {
      await ex
        .updateTable('pki_keys')
        .set({ name: name === '' ? null : name })
        .where('mount_id', '=', mountId)
        .where('id', '=', id)
        .execute();
    } catch (err) {
      if (isUniqueViolation(err, 'pki_keys_mount_id_name_key'))
        throw conflict(`key name ${name} already in use`, 'key_name');
      throw err;
    }
  }

  /** Links the mount's keyless issuers whose certificate carries this key's public key. */
  async linkIssuers(ex: Executor, mountId: string, keyId: string, publicKeySha256: string): Promise<void> {
    await ex
      .updateTable('pki_issuers')
      .set({ key_id: keyId })
      .where('mount_id', '=', mountId)
      .where('public_key_sha256', '=', publicKeySha256)
      .where('key_id', 'is', null)
      .execute();
  }

  /** Whether any issuer of the mount uses the key. */
  async inUse(ex: Executor, mountId: string, id: string): Promise<boolean> {
    const r = await ex
      .selectFrom('pki_issuers')
      .select('id')
      .where('mount_id', '=', mountId)
      .where('key_id', '=', id)
      .limit(1)
      .executeTakeFirst();
    return r !== undefined;
  }

  async delete(ex: Executor, mountId: string, id: string): Promise<boolean> {
    const r = await ex.deleteFrom('pki_keys').where('mount_id', '=', mountId).where('id', '=', id).executeTakeFirst();
    return Number(r.numDeletedRows) > 0;
  }

  async deleteAll(ex: Executor, mountId: string): Promise<string[]> {
    const rows = await ex.deleteFrom('pki_keys').where('mount_id', '=', mountId).returning('id').execute();
    return rows.map((r) => r.id);
  }
}
