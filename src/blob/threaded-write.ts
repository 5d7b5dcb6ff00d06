import { CONTENT_TAG, FramePlan, SPARE_FRAMES, cipherOf, takeFront } from '../secrets/content-cipher.js';
import { nativeAddon } from '../shared/native-addon.js';
import { countBytes, toBuffer } from './blob-store.js';
import type { BlobInfo, BlobSealing } from './blob-store.js';

/** The native writer (native/blob-writer.c): a batch's hashing, sealing and write on the threadpool. */
interface NativeBlobWriter {
  create(): object;
  run(
    writer: object,
    fd: number,
    batch: [hash: Buffer[], key: Buffer | null, frames: Buffer[], outs: Buffer[], plain: Buffer[], write: Buffer[]],
  ): Promise<void>;
  digest(writer: object): [md5: Buffer, sha256: Buffer];
}

const addon = nativeAddon()?.blobWriter as NativeBlobWriter | undefined;
const NATIVE: NativeBlobWriter | null = addon && typeof addon.digest === 'function' ? addon : null;

/** Plaintext gathered before a batch is handed over when nothing is sealed (sealed: one frame). */
const BATCH_SIZE = 1024 * 1024;

/**
 * Whether writes with this sealing go through the native writer: when the addon is built,
 * unless the server was told to use node:crypto (`native_crypto` off, sealing.native null).
 */
export function writesOffTheEventLoop(sealing: BlobSealing | undefined): boolean {
  return NATIVE !== null && cipherOf(sealing) !== null;
}

/** Stores the parts of a batch (the PostgreSQL blob store's rows); they may be reused once it resolves. */
export type StoreParts = (parts: Buffer[]) => Promise<void>;

/**
 * Writes the stored form of `source` to `target`, an open file (at its current offset) or a
 * StoreParts that takes it batch by batch in order, and returns the content's digests
 * (decision 0054). The event loop only cuts the stream into batches of about a frame; each
 * batch is hashed (MD5, SHA-256), sealed when `sealing` encrypts, and written on the
 * threadpool while the next one is gathered. One batch runs at a time, so memory stays at
 * about three frames. Every batch has ended, written or failed, when this settles: the
 * caller may close the file then. Chunks must not change once handed over. Only when
 * writesOffTheEventLoop(sealing).
 */
export async function writeOffTheEventLoop(
  target: number | StoreParts,
  source: AsyncIterable<Buffer | Uint8Array | string> | Iterable<Buffer | Uint8Array | string>,
  sealing: BlobSealing | undefined,
  maxSize = Number.MAX_SAFE_INTEGER,
): Promise<BlobInfo> {
  const native = NATIVE as NativeBlobWriter;
  const w = new Batches(
    native,
    target,
    sealing?.encrypt ? new FramePlan(sealing.current(), undefined, cipherOf(sealing)) : undefined,
  );
  try {
    for await (const raw of source) {
      const chunk = toBuffer(raw);
      w.size = countBytes(w.size, chunk.length, maxSize);
      if (w.add(chunk)) await w.hand(false);
    }
    await w.hand(true);
    await w.running;
  } finally {
    await w.running?.catch(() => {});
  }
  const [md5, sha256] = native.digest(w.writer);
  return { sha256: sha256.toString('hex'), md5: md5.toString('hex'), size: w.size };
}

/** The batches of one write: what is gathered, what runs. */
class Batches {
  readonly writer: object;
  size = 0;
  /** The batch on the threadpool. */
  running: Promise<void> | undefined;
  /** Plaintext not yet handed over for hashing. */
  #hash: Buffer[] = [];
  #hashLen = 0;
  /** Sealed: plaintext not yet in a frame. */
  #plain: Buffer[] = [];
  #plainLen = 0;
  #headerSent = false;
  readonly #spare: Buffer[] = [];

  constructor(
    private readonly native: NativeBlobWriter,
    private readonly target: number | StoreParts,
    private readonly plan: FramePlan | undefined,
  ) {
    this.writer = native.create();
  }

  /** Gathers a chunk; true when a batch is ready (a frame with a byte after it, or BATCH_SIZE plain bytes). */
  add(chunk: Buffer): boolean {
    this.#hash.push(chunk);
    this.#hashLen += chunk.length;
    if (!this.plan) return this.#hashLen >= BATCH_SIZE;
    this.#plain.push(chunk);
    this.#plainLen += chunk.length;
    // A frame is sealed only once a byte after it arrives, so the last one is known to be last.
    return this.#plainLen > this.plan.frame;
  }

  /** Waits for the running batch, then hands over what is gathered (`final`: all of it, the last frame). */
  async hand(final: boolean): Promise<void> {
    await this.running;
    this.running = undefined;
    const hash = this.#hash;
    this.#hash = [];
    this.#hashLen = 0;
    if (!this.plan) {
      if (hash.length > 0) this.#start([hash, null, [], [], [], hash], []);
      return;
    }
    const frames: Buffer[] = [];
    const outs: Buffer[] = [];
    const plain: Buffer[] = [];
    const plan = this.plan;
    const cut = (n: number, last: boolean) => {
      plain.push(...this.#take(n));
      frames.push(plan.nextJoined(last));
      const full = n === plan.frame;
      outs.push(
        full ? (this.#spare.pop() ?? Buffer.allocUnsafeSlow(n + CONTENT_TAG)) : Buffer.allocUnsafe(n + CONTENT_TAG),
      );
    };
    while (this.#plainLen > plan.frame) cut(plan.frame, false);
    // The rest, 0 to a whole frame, is the last frame.
    if (final) cut(this.#plainLen, true);
    const write = this.#headerSent ? outs : [plan.header, ...outs];
    this.#headerSent = true;
    this.#start([hash, plan.key, frames, outs, plain, write], outs);
  }

  /** The first `n` bytes of the gathered plaintext, as pieces (no copy). */
  #take(n: number): Buffer[] {
    this.#plainLen -= n;
    return takeFront(this.#plain, n);
  }

  #start(batch: Parameters<NativeBlobWriter['run']>[2], outs: Buffer[]): void {
    const frameBytes = (this.plan?.frame ?? 0) + CONTENT_TAG;
    const target = this.target;
    const run = this.native.run(this.writer, typeof target === 'number' ? target : -1, batch);
    if (typeof target === 'number') {
      this.running = run.then(() => {
        // Written: the frame buffers serve again.
        for (const o of outs) if (o.length === frameBytes && this.#spare.length < SPARE_FRAMES) this.#spare.push(o);
      });
    } else {
      // The store may keep views of the parts (rows not yet full), so its frame buffers are not reused.
      this.running = run.then(() => target(batch[5]));
    }
    // Marked handled now; a failure still surfaces where `running` is awaited.
    this.running.catch(() => {});
  }
}
