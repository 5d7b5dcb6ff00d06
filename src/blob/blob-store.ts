import { createHash } from 'node:crypto';
import type { Hash } from 'node:crypto';
import { DomainError } from '../shared/errors.js';
import { cipherOf, ContentSealer, FRAME_SHIFT, openStream } from '../secrets/content-cipher.js';
import type { ContentSealing } from '../secrets/content-cipher.js';

/**
 * Content-addressed storage for large byte strings (state files). Blobs are named by
 * their SHA-256, stored once however often they are written, streamed in and out in
 * chunks, and become visible only once completely and durably written.
 */
export interface BlobStore {
  readonly kind: 'fs' | 'db';
  /** Streams the source into the store. Rejects with `too_large` past `maxSize` bytes. */
  put(
    source: AsyncIterable<Buffer | Uint8Array | string> | Iterable<Buffer | Uint8Array | string>,
    opts?: PutOptions,
  ): Promise<BlobInfo>;
  /** Streams the blob out. Rejects with `not_found` when absent. */
  get(sha256: string): Promise<AsyncIterable<Buffer>>;
  stat(sha256: string): Promise<{ size: number } | undefined>;
  delete(sha256: string): Promise<void>;
  /**
   * Blobs last written before `cutoff` (a write of content already stored counts as a
   * write), for finding the ones nothing refers to. In no particular order.
   */
  writtenBefore(cutoff: Date): AsyncIterable<{ sha256: string; size: number }>;
  /**
   * Removes what writes that never finished left behind (a process killed mid-write) and
   * that was last touched before `cutoff`; returns how many. A store whose writes are
   * transactional has none.
   */
  removePartialWrites(cutoff: Date): Promise<number>;
  /** Names of stored blobs after `after`, ascending, at most `limit` (for jobs that walk every blob). */
  list(after: string, limit: number): Promise<string[]>;
  /**
   * Rewrites a blob stored in plain text (written before encryption) sealed, atomically:
   * readers see the plain or the sealed form, both whole. False when it is sealed
   * already, absent, or its content does not match its name.
   */
  sealStored(sha256: string): Promise<boolean>;
}

/**
 * How a store encrypts what it keeps: blobs are named by the SHA-256 of their plaintext
 * and stored sealed (secrets/content-cipher.ts).
 */
export type BlobSealing = ContentSealing;

/** Turns the plaintext chunks of a write into what is stored. */
export class StoredForm {
  readonly #sealer: ContentSealer | undefined;
  constructor(sealing: BlobSealing | undefined) {
    this.#sealer = sealing?.encrypt ? new ContentSealer(sealing.current(), FRAME_SHIFT, cipherOf(sealing)) : undefined;
  }
  update(chunk: Buffer): Buffer[] {
    return this.#sealer ? this.#sealer.update(chunk) : [chunk];
  }
  final(): Buffer[] {
    return this.#sealer ? this.#sealer.final() : [];
  }
  /** What `update` and `final` returned, once written: the sealer may reuse its frame buffers. */
  release(parts: Buffer[]): void {
    this.#sealer?.release(parts);
  }
}

/**
 * The plaintext of a stored blob, with its first piece already read: a damaged blob or
 * a data key that does not open fails here, before any caller starts an answer.
 */
export async function openStored(
  stored: AsyncIterable<Buffer>,
  sealing: BlobSealing | undefined,
  storedSize?: number,
): Promise<AsyncIterable<Buffer>> {
  if (!sealing) return stored;
  const it = openStream(stored, sealing.lookup, cipherOf(sealing), storedSize);
  const first = await it.next();
  return (async function* () {
    if (first.done) return;
    yield first.value;
    yield* it;
  })();
}

export interface PutOptions {
  maxSize?: number;
}

export interface BlobInfo {
  sha256: string;
  md5: string;
  size: number;
}

export function isSha256(s: string): boolean {
  return /^[0-9a-f]{64}$/.test(s);
}

/** Hashes and counts the bytes that pass through, enforcing a size limit. */
export class BlobDigest {
  readonly #sha = createHash('sha256');
  readonly #md5: Hash = createHash('md5');
  size = 0;
  constructor(private readonly maxSize: number = Number.MAX_SAFE_INTEGER) {}

  update(chunk: Buffer): void {
    this.size = countBytes(this.size, chunk.length, this.maxSize);
    this.#sha.update(chunk);
    this.#md5.update(chunk);
  }

  finish(): BlobInfo {
    return { sha256: this.#sha.digest('hex'), md5: this.#md5.digest('hex'), size: this.size };
  }
}

/** `size` bytes so far and `more` now: the new count, or too_large past `maxSize`. */
export function countBytes(size: number, more: number, maxSize: number): number {
  const n = size + more;
  if (n > maxSize) throw new DomainError('too_large', `content exceeds the limit of ${maxSize} bytes`);
  return n;
}

export function toBuffer(chunk: Buffer | Uint8Array | string): Buffer {
  if (Buffer.isBuffer(chunk)) return chunk;
  if (typeof chunk === 'string') return Buffer.from(chunk, 'utf8');
  return Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
}

/** Reads a whole blob into memory; only for blobs known to be small. */
export async function readSmallBlob(store: BlobStore, sha256: string): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of await store.get(sha256)) parts.push(chunk);
  return Buffer.concat(parts);
}
