import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';

const KEY = 'master_key_rotation';

/** Where a master key rotation stands (one settings row, shared by every node). */
export interface RotationProgress {
  state: 'running' | 'done';
  /** The master key every value is being re-sealed under. */
  keyId: string;
  /** Position in SEALED_COLUMNS and the last key looked at there. */
  column: number;
  after: string;
  /** Values re-sealed so far. */
  resealed: number;
  /** Full passes over the columns (a pass that finds values under another key is followed by another). */
  passes: number;
  startedAt: string;
  finishedAt?: string;
}

export class MasterKeyRotationRepo {
  constructor(private readonly deps: { db: Kysely<Database> }) {}

  async get(): Promise<RotationProgress | undefined> {
    const r = await this.deps.db.selectFrom('settings').select('value').where('key', '=', KEY).executeTakeFirst();
    return r ? (JSON.parse(r.value) as RotationProgress) : undefined;
  }

  async save(p: RotationProgress): Promise<void> {
    const value = JSON.stringify(p);
    await this.deps.db
      .insertInto('settings')
      .values({ key: KEY, value })
      .onConflict((oc) => oc.column('key').doUpdateSet({ value }))
      .execute();
  }
}
