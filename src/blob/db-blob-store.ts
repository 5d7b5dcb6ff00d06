import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../db/schema.js';
import type { UnitsOfWork } from '../db/unit-of-work.js';
import { DomainError, notFound } from '../shared/errors.js';
import type { Clock } from '../shared/clock.js';
import { uuid } from '../shared/ids.js';
import { isSealedContent } from '../secrets/content-cipher.js';
import { BlobDigest, isSha256, openStored, StoredForm, toBuffer } from './blob-store.js';
import type { BlobInfo, BlobSealing, BlobStore, PutOptions } from './blob-store.js';
import { writeOffTheEventLoop, writesOffTheEventLoop } from './threaded-write.js';

const CHUNK = 1024 * 1024;

/**
 * Blobs inside the database, in 1 MiB chunks, so that several server processes can
 * share one PostgreSQL and no disk. The chunks and the row that names them are written
 * in one transaction: a crash rolls the whole write back.
 */
export class DbBlobStore implements BlobStore {
  readonly kind = 'db' as const;
  constructor(
    private readonly deps: { db: Kysely<Database>; units: UnitsOfWork; clock: Clock; sealing?: BlobSealing },
  ) {}

  async put(
    source: AsyncIterable<Buffer | Uint8Array | string> | Iterable<Buffer | Uint8Array | string>,
    opts: PutOptions = {},
  ): Promise<BlobInfo> {
    const uploadId = uuid();
    let result: BlobInfo | undefined;
    await this.deps.units.readWrite(async (trx) => {
      const info = await writeChunks(trx, uploadId, source, this.deps.sealing, opts.maxSize);
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

  async sealStored(sha256: string): Promise<boolean> {
    const sealing = this.deps.sealing;
    if (!sealing || !isSha256(sha256)) return false;
    // One transaction: the new chunks replace the old ones (and the row points at them) or nothing changes.
    return this.deps.units.readWrite(async (trx) => {
      const row = await trx.selectFrom('blobs').select('upload_id').where('sha256', '=', sha256).executeTakeFirst();
      if (!row) return false;
      const first = await chunkAt(trx, row.upload_id, 0);
      if (first && isSealedContent(first)) return false;
      const uploadId = uuid();
      const info = await writeChunks(
        trx,
        uploadId,
        chunksOf(trx, row.upload_id),
        { ...sealing, encrypt: true },
        undefined,
      );
      // Damaged plain content stays as it is (sealing it would vouch for it).
      if (info.sha256 !== sha256) {
        await trx.deleteFrom('blob_chunks').where('upload_id', '=', uploadId).execute();
        return false;
      }
      await trx.updateTable('blobs').set({ upload_id: uploadId }).where('sha256', '=', sha256).execute();
      await trx.deleteFrom('blob_chunks').where('upload_id', '=', row.upload_id).execute();
      return true;
    });
  }

  async list(after: string, limit: number): Promise<string[]> {
    const rows = await this.deps.db
      .selectFrom('blobs')
      .select('sha256')
      .where('sha256', '>', after)
      .orderBy('sha256')
      .limit(limit)
      .execute();
    return rows.map((r) => r.sha256);
  }

  async get(sha256: string): Promise<AsyncIterable<Buffer>> {
    const row = isSha256(sha256)
      ? await this.deps.db
          .selectFrom('blobs')
          .select(['upload_id', 'size'])
          .where('sha256', '=', sha256)
          .executeTakeFirst()
      : undefined;
    if (!row) throw notFound('blob not found');
    return openStored(wholePlain(chunksOf(this.deps.db, row.upload_id), Number(row.size)), this.deps.sealing);
  }

  async stat(sha256: string): Promise<{ size: number } | undefined> {
    if (!isSha256(sha256)) return undefined;
    const row = await this.deps.db.selectFrom('blobs').select('size').where('sha256', '=', sha256).executeTakeFirst();
    return row ? { size: Number(row.size) } : undefined;
  }

  /** A write's chunks and row commit together: a crash leaves nothing behind. */
  async removePartialWrites(): Promise<number> {
    return 0;
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
    await this.deps.units.readWrite(async (trx) => {
      const row = await trx.selectFrom('blobs').select('upload_id').where('sha256', '=', sha256).executeTakeFirst();
      if (!row) return;
      await trx.deleteFrom('blobs').where('sha256', '=', sha256).execute();
      await trx.deleteFrom('blob_chunks').where('upload_id', '=', row.upload_id).execute();
    });
  }
}

type Executor = Kysely<Database> | Transaction<Database>;

async function chunkAt(ex: Executor, uploadId: string, seq: number): Promise<Buffer | undefined> {
  const c = await ex
    .selectFrom('blob_chunks')
    .select('data')
    .where('upload_id', '=', uploadId)
    .where('seq', '=', seq)
    .executeTakeFirst();
  if (!c) return undefined;
  return Buffer.isBuffer(c.data) ? c.data : Buffer.from(c.data);
}

/**
 * Fails plain content (written before encryption) that ends short of its size: its chunks
 * were replaced by sealed ones (or removed) while it was read. Sealed content has its own check.
 */
async function* wholePlain(chunks: AsyncIterable<Buffer>, size: number): AsyncGenerator<Buffer> {
  let plain: boolean | undefined;
  let n = 0;
  for await (const c of chunks) {
    plain ??= !isSealedContent(c);
    n += c.length;
    yield c;
  }
  if (plain && n !== size) throw new DomainError('unavailable', 'the stored state changed while it was read; retry');
}

async function* chunksOf(ex: Executor, uploadId: string): AsyncGenerator<Buffer> {
  for (let seq = 0; ; seq++) {
    const c = await chunkAt(ex, uploadId, seq);
    if (!c) return;
    yield c;
  }
}

/**
 * Writes the stored form of `source` as the chunks of `uploadId`; returns what the plaintext
 * was. With the addon, the hashing and sealing run on the threadpool (decision 0054).
 */
async function writeChunks(
  trx: Transaction<Database>,
  uploadId: string,
  source: AsyncIterable<Buffer | Uint8Array | string> | Iterable<Buffer | Uint8Array | string>,
  sealing: BlobSealing | undefined,
  maxSize: number | undefined,
): Promise<BlobInfo> {
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
  if (writesOffTheEventLoop(sealing)) {
    const info = await writeOffTheEventLoop(
      async (parts) => {
        for (const p of parts) await add(p);
      },
      source,
      sealing,
      maxSize,
    );
    await flush();
    return info;
  }
  const digest = new BlobDigest(maxSize);
  const form = new StoredForm(sealing);
  for await (const raw of source) {
    const chunk = toBuffer(raw);
    digest.update(chunk);
    for (const out of form.update(chunk)) await add(out);
  }
  for (const out of form.final()) await add(out);
  await flush();
  return digest.finish();
}
