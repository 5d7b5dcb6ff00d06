import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { notFound } from '../shared/errors.js';
import type { Clock } from '../shared/clock.js';
import { uuid } from '../shared/ids.js';
import { BlobDigest, isSha256, toBuffer } from './blob-store.js';
import type { BlobInfo, BlobStore, PutOptions } from './blob-store.js';

const CHUNK = 1024 * 1024;

/**
 * Blobs inside the database, in 1 MiB chunks, so that several server processes can
 * share one PostgreSQL and no disk. The chunks and the row that names them are written
 * in one transaction: a crash rolls the whole write back.
 */
export class DbBlobStore implements BlobStore {
  readonly kind = 'db' as const;
  constructor(private readonly deps: { db: Kysely<Database>; clock: Clock }) {}

  async put(
    source: AsyncIterable<Buffer | Uint8Array | string> | Iterable<Buffer | Uint8Array | string>,
    opts: PutOptions = {},
  ): Promise<BlobInfo> {
    const digest = new BlobDigest(opts.maxSize);
    const uploadId = uuid();
    let result: BlobInfo | undefined;
    await this.deps.db.transaction().execute(async (trx) => {
      let seq = 0;
      let pending: Buffer[] = [];
      let pendingLen = 0;
      const flush = async () => {
        if (pendingLen === 0) return;
        const data = Buffer.concat(pending, pendingLen);
        pending = [];
        pendingLen = 0;
        await trx.insertInto('blob_chunks').values({ upload_id: uploadId, seq: seq++, data }).execute();
      };
      for await (const raw of source) {
        let chunk = toBuffer(raw);
        digest.update(chunk);
        while (chunk.length > 0) {
          const take = Math.min(CHUNK - pendingLen, chunk.length);
          pending.push(chunk.subarray(0, take));
          pendingLen += take;
          chunk = chunk.subarray(take);
          if (pendingLen === CHUNK) await flush();
        }
      }
      await flush();
      const info = digest.finish();
      result = info;
      const inserted = await trx
        .insertInto('blobs')
        .values({
          sha256: info.sha256,
          size: info.size,
          upload_id: uploadId,
          created_at: this.deps.clock.now().toISOString(),
        })
        .onConflict((oc) => oc.column('sha256').doNothing())
        .executeTakeFirst();
      if (Number(inserted.numInsertedOrUpdatedRows ?? 0n) === 0) {
        // Already stored: drop this copy's chunks inside the same transaction.
        await trx.deleteFrom('blob_chunks').where('upload_id', '=', uploadId).execute();
      }
    });
    return result as BlobInfo;
  }

  async get(sha256: string): Promise<AsyncIterable<Buffer>> {
    const row = isSha256(sha256)
      ? await this.deps.db.selectFrom('blobs').select(['upload_id']).where('sha256', '=', sha256).executeTakeFirst()
      : undefined;
    if (!row) throw notFound('blob not found');
    const db = this.deps.db;
    async function* chunks(): AsyncGenerator<Buffer> {
      for (let seq = 0; ; seq++) {
        const c = await db
          .selectFrom('blob_chunks')
          .select('data')
          .where('upload_id', '=', row!.upload_id)
          .where('seq', '=', seq)
          .executeTakeFirst();
        if (!c) return;
        yield Buffer.isBuffer(c.data) ? c.data : Buffer.from(c.data);
      }
    }
    return chunks();
  }

  async stat(sha256: string): Promise<{ size: number } | undefined> {
    if (!isSha256(sha256)) return undefined;
    const row = await this.deps.db.selectFrom('blobs').select('size').where('sha256', '=', sha256).executeTakeFirst();
    return row ? { size: Number(row.size) } : undefined;
  }

  async delete(sha256: string): Promise<void> {
    await this.deps.db.transaction().execute(async (trx) => {
      const row = await trx.selectFrom('blobs').select('upload_id').where('sha256', '=', sha256).executeTakeFirst();
      if (!row) return;
      await trx.deleteFrom('blobs').where('sha256', '=', sha256).execute();
      await trx.deleteFrom('blob_chunks').where('upload_id', '=', row.upload_id).execute();
    });
  }
}
