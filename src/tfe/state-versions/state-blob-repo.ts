import { sql } from 'kysely';
import type { Kysely } from 'kysely';
import { ParamQuery } from '../../db/one-param-query.js';
import type { Database } from '../../db/schema.js';
import { cipherOf, noDataKeys, openBuffer } from '../../secrets/content-cipher.js';
import type { ContentSealing } from '../../secrets/content-cipher.js';

/** A database handle or the caller's transaction (a Transaction is a Kysely). */
type Executor = Kysely<Database>;

/**
 * The bytes a live inline blob keeps when the same content is stored again: its own when
 * they are in the same form as the new ones (both sealed, or both plain: the first bytes
 * tell, see secrets/content-cipher.ts). Sealing the same content twice gives different bytes
 * (a fresh nonce), and rewriting them cost a row update of its whole payload (every overflow
 * page journaled and written again), where plain bytes, being equal, left the pages as they
 * were. A tombstone takes the new bytes.
 */
const KEPT_OR_NEW_DATA = sql<Buffer | null>`case when tfe_state_blobs.deleting = 0
  and substr(tfe_state_blobs.data, 1, 4) = substr(excluded.data, 1, 4)
  then tfe_state_blobs.data else excluded.data end`;

/**
 * All SQL of `tfe_state_blobs`: one row per stored state content (by SHA-256), live or a
 * tombstone (`deleting`), with small contents' bytes inline. What references a blob is a
 * version's `state_sha256` or `json_sha256`; the collector asks here whether any does
 * (decision 0021).
 */
export class StateBlobRepo {
  /** Inline bytes sealed at rest are opened with it (secrets/content-cipher.ts). */
  constructor(private readonly deps: { db: Kysely<Database>; sealing?: ContentSealing }) {}

  get db(): Kysely<Database> {
    return this.deps.db;
  }

  /**
   * Records that a version is about to reference the blob. Returns false when the blob
   * row is a tombstone: the collector removed the bytes, so the caller must store them
   * again and call `reviveBlob`. On PostgreSQL the upsert holds the row until commit,
   * so the collector (which locks the row before checking references) waits for us.
   */
  async touchBlob(trx: Executor, sha256: string, size: number, now: Date): Promise<boolean> {
    return this.upsertBlobRowIf(trx, sha256, size, now, 0);
  }

  /** Inserts the blob's row in state `deleting`, or touches the one there if it is in that state; false otherwise. */
  private async upsertBlobRowIf(
    trx: Executor,
    sha256: string,
    size: number,
    now: Date,
    deleting: 0 | 1,
  ): Promise<boolean> {
    const r = await trx
      .insertInto('tfe_state_blobs')
      .values({ sha256, size, deleting, updated_at: now.toISOString() })
      .onConflict((oc) =>
        oc
          .column('sha256')
          .doUpdateSet((eb) => ({ updated_at: eb.ref('excluded.updated_at') }))
          .where('tfe_state_blobs.deleting', '=', deleting),
      )
      .returning('sha256')
      .executeTakeFirst();
    return r !== undefined;
  }

  /**
   * Stores a small blob's bytes in its row (written in the transaction of the version
   * that references it). Always succeeds: a tombstone is revived with these bytes, and a
   * live row is touched (its bytes, inline or in the blob store, are the same content),
   * keeping the bytes it holds when they are in the same form (KEPT_OR_NEW_DATA).
   */
  async putInlineBlob(trx: Executor, sha256: string, size: number, data: Buffer, now: Date): Promise<void> {
    await this.putInlineBlobQuery.run(trx, sha256, size, now.toISOString(), data);
  }

  private readonly putInlineBlobQuery = new ParamQuery(
    (sha256: string, size: number, updatedAt: string, data: Buffer) =>
      this.deps.db
        .insertInto('tfe_state_blobs')
        .values({ sha256, size, deleting: sql<number>`0`, updated_at: updatedAt, data })
        .onConflict((oc) =>
          oc.column('sha256').doUpdateSet((eb) => ({
            deleting: sql<number>`0`,
            updated_at: eb.ref('excluded.updated_at'),
            data: KEPT_OR_NEW_DATA,
          })),
        ),
  );

  /**
   * putInlineBlob for many blobs in one statement (PostgreSQL's group of creates): each
   * content once, in hash order, so that concurrent groups take the rows in one order.
   */
  async putInlineBlobs(
    trx: Executor,
    blobs: ReadonlyArray<{ sha256: string; size: number; data: Buffer }>,
    now: Date,
  ): Promise<void> {
    if (blobs.length === 0) return;
    const bySha = new Map(blobs.map((b) => [b.sha256, b]));
    const updatedAt = now.toISOString();
    await trx
      .insertInto('tfe_state_blobs')
      .values(
        [...bySha.keys()].sort().map((sha256) => {
          const b = bySha.get(sha256)!;
          return { sha256, size: b.size, deleting: 0, updated_at: updatedAt, data: b.data };
        }),
      )
      .onConflict((oc) =>
        oc.column('sha256').doUpdateSet((eb) => ({
          deleting: sql<number>`0`,
          updated_at: eb.ref('excluded.updated_at'),
          data: KEPT_OR_NEW_DATA,
        })),
      )
      .execute();
  }

  /** The bytes (opened) of a live blob stored inline; undefined when they are in the blob store (or gone). */
  async inlineBlob(ex: Executor, sha256: string): Promise<Buffer | undefined> {
    const r = await ex
      .selectFrom('tfe_state_blobs')
      .select('data')
      .where('sha256', '=', sha256)
      .where('deleting', '=', 0)
      .executeTakeFirst();
    const d = r?.data;
    if (d === null || d === undefined) return undefined;
    return openBuffer(
      Buffer.isBuffer(d) ? d : Buffer.from(d),
      this.deps.sealing?.lookup ?? noDataKeys,
      cipherOf(this.deps.sealing),
    );
  }

  /** After storing the bytes again: the blob is live. */
  async reviveBlob(trx: Executor, sha256: string, size: number, now: Date): Promise<void> {
    await trx
      .insertInto('tfe_state_blobs')
      .values({ sha256, size, deleting: 0, updated_at: now.toISOString() })
      .onConflict((oc) => oc.column('sha256').doUpdateSet({ deleting: 0, updated_at: now.toISOString() }))
      .execute();
  }

  /** Blobs no version references (tombstones excluded). */
  async unreferencedBlobs(ex: Executor, limit: number): Promise<string[]> {
    const rows = await ex
      .selectFrom('tfe_state_blobs as b')
      .select('b.sha256')
      .where('b.deleting', '=', 0)
      .where((eb) =>
        eb.not(
          eb.exists(
            eb
              .selectFrom('tfe_state_versions as v')
              .select('v.id')
              .where((w) =>
                w.or([w('v.state_sha256', '=', w.ref('b.sha256')), w('v.json_sha256', '=', w.ref('b.sha256'))]),
              ),
          ),
        ),
      )
      .limit(limit)
      .execute();
    return rows.map((r) => r.sha256);
  }

  /**
   * Locks the blob row by marking it deleted (inline bytes go with it, unless the
   * transaction rolls back); false when another collector got there first.
   */
  async markBlobDeleting(trx: Executor, sha256: string, now: Date): Promise<boolean> {
    const res = await trx
      .updateTable('tfe_state_blobs')
      .set({ deleting: 1, updated_at: now.toISOString(), data: null })
      .where('sha256', '=', sha256)
      .where('deleting', '=', 0)
      .executeTakeFirst();
    return Number(res.numUpdatedRows) > 0;
  }

  /** Of these blobs, the ones with a live row (referenced, or about to be, by a version). */
  async liveBlobs(ex: Executor, sha256s: string[]): Promise<Set<string>> {
    if (sha256s.length === 0) return new Set();
    const rows = await ex
      .selectFrom('tfe_state_blobs')
      .select('sha256')
      .where('sha256', 'in', sha256s)
      .where('deleting', '=', 0)
      .execute();
    return new Set(rows.map((r) => r.sha256));
  }

  /**
   * Takes a stored blob that has no live row for removal, as `markBlobDeleting` takes a
   * row: writes a tombstone (or keeps the one there). False when a live row exists by now:
   * a writer registered the blob meanwhile. On PostgreSQL a writer that upserts the row
   * afterwards waits for this transaction and then finds the tombstone, so it stores the
   * bytes again (BlobCollectedError).
   */
  async claimOrphanBlob(trx: Executor, sha256: string, size: number, now: Date): Promise<boolean> {
    return this.upsertBlobRowIf(trx, sha256, size, now, 1);
  }

  async blobReferenced(ex: Executor, sha256: string): Promise<boolean> {
    const r = await ex
      .selectFrom('tfe_state_versions')
      .select('id')
      .where((eb) => eb.or([eb('state_sha256', '=', sha256), eb('json_sha256', '=', sha256)]))
      .limit(1)
      .executeTakeFirst();
    return r !== undefined;
  }
}
