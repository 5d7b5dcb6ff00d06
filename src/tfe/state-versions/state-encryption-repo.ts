import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import { SEALED_TEXT_PREFIX } from '../../secrets/content-cipher.js';

const PROGRESS_KEY = 'tfe.state_encryption';

/** Where the encryption of older content stands (one settings row, shared by every node). */
export interface EncryptionProgress {
  phase: 'blob' | 'inline' | 'output' | 'done';
  /** The last record of the phase looked at (its sha256 or id). */
  after: string;
  totals: Record<'blob' | 'inline' | 'output', number>;
  scanned: Record<'blob' | 'inline' | 'output', number>;
  sealed: Record<'blob' | 'inline' | 'output', number>;
  finishedAt?: string;
}

/** SQL of the job that seals content stored before encryption existed. */
export class StateEncryptionRepo {
  constructor(private readonly deps: { db: Kysely<Database> }) {}

  async progress(): Promise<EncryptionProgress | undefined> {
    const r = await this.deps.db
      .selectFrom('settings')
      .select('value')
      .where('key', '=', PROGRESS_KEY)
      .executeTakeFirst();
    return r ? (JSON.parse(r.value) as EncryptionProgress) : undefined;
  }

  async saveProgress(p: EncryptionProgress | undefined): Promise<void> {
    if (!p) {
      await this.deps.db.deleteFrom('settings').where('key', '=', PROGRESS_KEY).execute();
      return;
    }
    const value = JSON.stringify(p);
    await this.deps.db
      .insertInto('settings')
      .values({ key: PROGRESS_KEY, value })
      .onConflict((oc) => oc.column('key').doUpdateSet({ value }))
      .execute();
  }

  async countInline(): Promise<number> {
    const r = await this.deps.db
      .selectFrom('tfe_state_blobs')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('data', 'is not', null)
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  async countPlainOutputs(): Promise<number> {
    const r = await this.deps.db
      .selectFrom('tfe_state_version_outputs')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('value', 'is not', null)
      .where('value', 'not like', `${SEALED_TEXT_PREFIX}%`)
      .executeTakeFirstOrThrow();
    return Number(r.n);
  }

  /** Inline rows after `after`, in order, with their stored bytes. */
  async inlineAfter(after: string, limit: number): Promise<Array<{ sha256: string; data: Buffer }>> {
    const rows = await this.deps.db
      .selectFrom('tfe_state_blobs')
      .select(['sha256', 'data'])
      .where('sha256', '>', after)
      .where('data', 'is not', null)
      .orderBy('sha256')
      .limit(limit)
      .execute();
    return rows.map((r) => ({ sha256: r.sha256, data: Buffer.from(r.data as Buffer) }));
  }

  /** Replaces plain inline bytes by sealed ones, unless the row changed meanwhile. */
  async sealInline(sha256: string, plain: Buffer, sealed: Buffer): Promise<boolean> {
    const r = await this.deps.db
      .updateTable('tfe_state_blobs')
      .set({ data: sealed })
      .where('sha256', '=', sha256)
      .where('data', '=', plain)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  /** Output values in plain text after the id `after`, in order. */
  async plainOutputsAfter(after: string, limit: number): Promise<Array<{ id: string; value: string }>> {
    const rows = await this.deps.db
      .selectFrom('tfe_state_version_outputs')
      .select(['id', 'value'])
      .where('id', '>', after)
      .where('value', 'is not', null)
      .where('value', 'not like', `${SEALED_TEXT_PREFIX}%`)
      .orderBy('id')
      .limit(limit)
      .execute();
    return rows.map((r) => ({ id: r.id, value: r.value as string }));
  }

  async sealOutput(id: string, plain: string, sealed: string): Promise<boolean> {
    const r = await this.deps.db
      .updateTable('tfe_state_version_outputs')
      .set({ value: sealed })
      .where('id', '=', id)
      .where('value', '=', plain)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }
}
