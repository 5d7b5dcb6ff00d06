import { BlobDigest } from '../../blob/blob-store.js';
import type { BlobInfo, BlobStore } from '../../blob/blob-store.js';
import type { StateBlobRepo } from './state-blob-repo.js';

/**
 * Chunks the writer may hand over before it waits for the reader. Waiting for the reader
 * after every chunk made the two take turns instead of working at the same time (a 200 MB
 * upload spent half its time with both idle); a few chunks of slack keep both busy while
 * memory stays bounded by this many chunks.
 */
const MAX_QUEUED_CHUNKS = 32;

/**
 * Streams content into the blob store while a second reader looks at the same chunks
 * (the content check). At most MAX_QUEUED_CHUNKS wait for the reader, so memory stays
 * bounded.
 */
class ChunkChannel implements AsyncIterable<Uint8Array> {
  #queue: Uint8Array[] = [];
  #ended = false;
  #closed = false;
  #wakeReader: (() => void) | null = null;
  #wakeWriter: (() => void) | null = null;

  /** Resolves once the chunk is queued with room to spare (or the reader stopped reading). */
  async push(chunk: Uint8Array): Promise<void> {
    if (this.#closed) return;
    this.#queue.push(chunk);
    this.#wake();
    while (this.#queue.length >= MAX_QUEUED_CHUNKS && !this.#closed) {
      await new Promise<void>((r) => (this.#wakeWriter = r));
    }
  }

  end(): void {
    this.#ended = true;
    this.#wake();
  }

  #wake(): void {
    const r = this.#wakeReader;
    this.#wakeReader = null;
    r?.();
  }

  #wakeW(): void {
    const w = this.#wakeWriter;
    this.#wakeWriter = null;
    w?.();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Uint8Array> {
    try {
      for (;;) {
        const next = this.#queue.shift();
        if (next !== undefined) {
          this.#wakeW();
          yield next;
          continue;
        }
        if (this.#ended) return;
        await new Promise<void>((r) => (this.#wakeReader = r));
      }
    } finally {
      // The reader stopped early (it has what it needs): let the writer run freely.
      this.#closed = true;
      this.#queue = [];
      this.#wakeW();
    }
  }
}

export interface StoredUpload<T> {
  blob: BlobInfo;
  /** What the reader found in the content. */
  checked: T;
}

/**
 * Writes an upload to the blob store (hashing it on the way) while `reader` examines the
 * same chunks in the same pass, so content is read from the network once whatever the
 * reader checks. The reader must not throw for bad content; it reports it in its result.
 */
export async function storeCheckedUpload<T>(
  blobs: BlobStore,
  source: AsyncIterable<Buffer>,
  maxSize: number,
  reader: (chunks: AsyncIterable<Uint8Array>) => Promise<T>,
): Promise<StoredUpload<T>> {
  const channel = new ChunkChannel();
  const checking = reader(channel);
  async function* tee(): AsyncGenerator<Buffer> {
    try {
      for await (const chunk of source) {
        await channel.push(chunk);
        yield chunk;
      }
    } finally {
      channel.end();
    }
  }
  let blob: BlobInfo;
  try {
    blob = await blobs.put(tee(), { maxSize });
  } catch (err) {
    channel.end();
    await checking.catch(() => undefined);
    throw err;
  }
  return { blob, checked: await checking };
}

/**
 * The bytes of stored content: from its database row when it was stored inline (small
 * states sent at creation, see StateVersionService.create), otherwise from the blob store.
 */
export async function openStateContent(
  repo: StateBlobRepo,
  blobs: BlobStore,
  sha256: string,
): Promise<AsyncIterable<Buffer>> {
  const inline = await repo.inlineBlob(repo.db, sha256);
  if (inline === undefined) return blobs.get(sha256);
  return (async function* () {
    yield inline;
  })();
}

/** Reads a stream to its end, returning its MD5 and SHA-256 without storing it (repeated uploads). */
export async function digestStream(source: AsyncIterable<Buffer>, maxSize: number): Promise<BlobInfo> {
  const d = new BlobDigest(maxSize);
  for await (const chunk of source) d.update(chunk);
  return d.finish();
}
