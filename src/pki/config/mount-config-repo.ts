import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { UnitsOfWork } from '../../db/unit-of-work.js';

export type Executor = Kysely<Database> | Transaction<Database>;

/** Names of the per-mount settings rows. */
export type SettingName =
  'urls' | 'cluster' | 'default_issuer' | 'default_follows_latest_issuer' | 'default_key' | (string & {});

/** Per-mount settings, one JSON value per row so each can be written on its own. */
export class MountConfigRepo {
  readonly #db: Kysely<Database>;
  readonly #units: UnitsOfWork;
  constructor(deps: { db: Kysely<Database>; units: UnitsOfWork }) {
    this.#db = deps.db;
    this.#units = deps.units;
  }

  /** The executor outside any transaction. */
  get executor(): Executor {
    return this.#db;
  }

  /** A read-write unit of work. */
  transaction<T>(fn: (tx: Executor) => Promise<T>): Promise<T> {
    return this.#units.readWrite(fn);
  }

  async get(ex: Executor, mountId: string, name: SettingName): Promise<unknown> {
    const row = await ex
      .selectFrom('pki_settings')
      .select('value')
      .where('mount_id', '=', mountId)
      .where('name', '=', name)
      .executeTakeFirst();
    return row ? (JSON.parse(row.value) as unknown) : undefined;
  }

  async getMany(ex: Executor, mountId: string, names: readonly SettingName[]): Promise<Map<string, unknown>> {
    const rows = await ex
      .selectFrom('pki_settings')
      .select(['name', 'value'])
      .where('mount_id', '=', mountId)
      .where('name', 'in', [...names])
      .execute();
    return new Map(rows.map((r) => [r.name, JSON.parse(r.value) as unknown]));
  }

  async put(ex: Executor, mountId: string, name: SettingName, value: unknown, now: Date): Promise<void> {
    const v = JSON.stringify(value);
    await ex
      .insertInto('pki_settings')
      .values({ mount_id: mountId, name, value: v, updated_at: now.toISOString() })
      .onConflict((oc) => oc.columns(['mount_id', 'name']).doUpdateSet({ value: v, updated_at: now.toISOString() }))
      .execute();
  }

  /** Writes only when the setting does not exist yet; true when this call wrote it. */
  async putIfAbsent(ex: Executor, mountId: string, name: SettingName, value: unknown, now: Date): Promise<boolean> {
    const res = await ex
      .insertInto('pki_settings')
      .values({ mount_id: mountId, name, value: JSON.stringify(value), updated_at: now.toISOString() })
      .onConflict((oc) => oc.columns(['mount_id', 'name']).doNothing())
      .executeTakeFirst();
    return Number(res.numInsertedOrUpdatedRows ?? 0) > 0;
  }

  async remove(ex: Executor, mountId: string, name: SettingName): Promise<void> {
    await ex.deleteFrom('pki_settings').where('mount_id', '=', mountId).where('name', '=', name).execute();
  }

  /** Removes the setting only while it still holds `value`; true when removed. */
  async removeIfValue(ex: Executor, mountId: string, name: SettingName, value: unknown): Promise<boolean> {
    const res = await ex
      .deleteFrom('pki_settings')
      .where('mount_id', '=', mountId)
      .where('name', '=', name)
      .where('value', '=', JSON.stringify(value))
      .executeTakeFirst();
    return Number(res.numDeletedRows) > 0;
  }

  async removeAll(ex: Executor, mountId: string): Promise<void> {
    await ex.deleteFrom('pki_settings').where('mount_id', '=', mountId).execute();
  }
}
