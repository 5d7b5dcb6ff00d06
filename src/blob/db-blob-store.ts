import type { Kysely } from 'kysely';
import type { Database } from '../db/schema.js';
import { notFound } from '../shared/errors.js';
import type { Clock } from '../shared/clock.js';
import { uuid } from '../shared/ids.js';
import { BlobDigest, isSha256, openStored, StoredForm, toBuffer } from './blob-store.js';
import type { BlobInfo, BlobSealing, BlobStore, PutOptions } from './blob-store.js';

const CHUNK = 1024 * 1024;

/**
 * Blobs inside the database, in 1 MiB chunks, so that several server processes can
 * share one PostgreSQL and no disk. The chunks and the row that names them are written
 * in one transaction: a crash rolls the whole write back.
 */
export class DbBlobStore implements BlobStore {
  readonly kind = 'db' as const;
  constructor(private readonly deps: { db: Kysely<Database>; clock: Clock; sealing?: BlobSealing }) {}

  async put(
    source: AsyncIterable<Buffer | Uint8Array | string> | Iterable<Buffer | Uint8Array | string>,
    opts: PutOptions = {},
  ): Promise<BlobInfo> {
    const digest = new BlobDigest(opts.maxSize);
    const form = new StoredForm(this.deps.sealing);
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
      const add = async (stored: Buffer) => {
        let chunk = stored;
        while (chunk.length > 0) {
          const take = Math.min(CHUNK - pendingLen, chunk.length);
          pending.push(chunk.subarray(0, take));
          pendingLen += take;
          chunk = chunk.subarray(take);
          if (pendingLen === CHUNK) await flush();
        }
      };
      for await (const raw of source) {
        const chunk = toBuffer(raw);
        digest.update(chunk);
        for (const out of form.update(chunk)) await add(out);
      }
      for (const out of form.final()) await add(out);
      await flush();
      const info = digest.finish();
      result = info;
      // A blob already stored keeps its chunks and gets a fresh time: the caller is about to
      // refer to it, so it must not look like an old unreferenced one (writtenBefore).
      const row = await trx
        .insertInto('blobs')
        .values({
          sha256: info.sha256,
          size: info.size,
          upload_id: uploadId,
          created_at: this.deps.clock.now().toISOString(),
        })
        .onConflict((oc) => oc.column('sha256').doUpdateSet((eb) => ({ created_at: eb.ref('excluded.created_at') })))
        .returning('upload_id')
        .executeTakeFirstOrThrow();
      if (row.upload_id !== uploadId) {
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
    return openStored(chunks(), this.deps.sealing);
  }

  async stat(sha256: string): Promise<{ size: number } | undefined> {
    if (!isSha256(sha256)) return undefined;
    const row = await this.deps.db.selectFrom('blobs').select('size').where('sha256', '=', sha256).executeTakeFirst();
    return row ? { size: Number(row.size) } : undefined;
  }

  async *writtenBefore(cutoff: Date): AsyncIterable<{ sha256: string; size: number }> {
    // Keyset pages along the primary key, so a long list is never held at once.
    let after = '';
    for (;;) {
      const rows = await this.deps.db
        .selectFrom('blobs')
        .select(['sha256', 'size'])
        .where('created_at', '<', cutoff.toISOString())
        .where('sha256', '>', after)
        .orderBy('sha256')
        .limit(500)
        .execute();
      for (const r of rows) yield { sha256: r.sha256, size: Number(r.size) };
      if (rows.length < 500) return;
      after = (rows[rows.length - 1] as { sha256: string }).sha256;
    }
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
