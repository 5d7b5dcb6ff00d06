import { createReadStream } from 'node:fs';
import { mkdir, open, readdir, rename, rm, stat, unlink, utimes } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { systemClock } from '../shared/clock.js';
import type { Clock } from '../shared/clock.js';
import { notFound } from '../shared/errors.js';
import { PRIVATE_DIR_MODE, ensurePrivateDir } from '../shared/private-files.js';
import { CONTENT_HEADER, CONTENT_MAGIC, CONTENT_TAG, isSealedContent, plainSizeOf } from '../secrets/content-cipher.js';
import { BlobDigest, isSha256, openStored, StoredForm, toBuffer } from './blob-store.js';
import type { BlobInfo, BlobSealing, BlobStore, PutOptions } from './blob-store.js';
import { writeOffTheEventLoop, writesOffTheEventLoop } from './threaded-write.js';

/**
 * Blobs as files under `<dir>/sha256/ab/<hash>`. A write goes to `<dir>/tmp`, is
 * fsynced, then renamed into place and the directory fsynced, so a crash leaves either
 * the whole blob or nothing visible. Leftover temporary files are removed on open.
 * A file's modification time is the time of its last write by the clock (a write of
 * content already stored touches it), which `writtenBefore` compares.
 */
export class FsBlobStore implements BlobStore {
  readonly kind = 'fs' as const;
  private constructor(
    private readonly dir: string,
    private readonly clock: Clock,
    private readonly sealing: BlobSealing | undefined,
  ) {}

  /**
   * With `clearTemp` (the default) the partial writes a stopped server left in `<dir>/tmp`
   * are removed. A worker of a cluster opens the store without it: the other workers may be
   * writing there, and the primary cleared it before any worker started.
   */
  static async open(
    dir: string,
    clock: Clock = systemClock,
    sealing?: BlobSealing,
    opts: { clearTemp?: boolean } = {},
  ): Promise<FsBlobStore> {
    for (const d of [dir, join(dir, 'tmp'), join(dir, 'sha256')]) ensurePrivateDir(d, { tightenExisting: true });
    const store = new FsBlobStore(dir, clock, sealing);
    if (opts.clearTemp ?? true)
      for (const name of await readdir(join(dir, 'tmp'))) await rm(join(dir, 'tmp', name), { force: true });
    return store;
  }

  private pathOf(sha256: string): string {
    return join(this.dir, 'sha256', sha256.slice(0, 2), sha256);
  }

  async put(
    source: AsyncIterable<Buffer | Uint8Array | string> | Iterable<Buffer | Uint8Array | string>,
    opts: PutOptions = {},
  ): Promise<BlobInfo> {
    const { tmp, info } = await this.writeTemp(source, this.sealing, opts.maxSize);
    const final = this.pathOf(info.sha256);
    const now = this.clock.now();
    const existing = await stat(final).catch(() => undefined);
    if (existing) {
      await unlink(tmp);
      // The caller is about to refer to it: it must not look like an old unreferenced file.
      await utimes(final, now, now);
      return info;
    }
    const shard = join(this.dir, 'sha256', info.sha256.slice(0, 2));
    await mkdir(shard, { recursive: true, mode: PRIVATE_DIR_MODE });
    await utimes(tmp, now, now);
    await rename(tmp, final);
    await fsyncDir(shard);
    return info;
  }

  /** Writes the stored form of `source` to a fsynced temporary file. */
  private async writeTemp(
    source: AsyncIterable<Buffer | Uint8Array | string> | Iterable<Buffer | Uint8Array | string>,
    sealing: BlobSealing | undefined,
    maxSize: number | undefined,
  ): Promise<{ tmp: string; info: BlobInfo }> {
    const tmp = join(this.dir, 'tmp', `${randomBytes(12).toString('hex')}.part`);
    const fh = await open(tmp, 'wx', 0o600);
    let info: BlobInfo;
    try {
      // With the addon, hashing, sealing and writing run on the threadpool (decision 0054).
      info = writesOffTheEventLoop(sealing)
        ? await writeOffTheEventLoop(fh.fd, source, sealing, maxSize)
        : await writeOnTheEventLoop(fh, source, new StoredForm(sealing), maxSize);
      await fh.sync();
    } catch (err) {
      await fh.close().catch(() => {});
      await unlink(tmp).catch(() => {});
      throw err;
    }
    await fh.close();
    return { tmp, info };
  }

  async sealStored(sha256: string): Promise<boolean> {
    if (!this.sealing || !isSha256(sha256)) return false;
    const path = this.pathOf(sha256);
    const before = await stat(path).catch(() => undefined);
    if (!before || (await this.isSealed(path))) return false;
    const { tmp, info } = await this.writeTemp(
      createReadStream(path, { highWaterMark: 1024 * 1024 }) as AsyncIterable<Buffer>,
      { ...this.sealing, encrypt: true },
      undefined,
    );
    if (info.sha256 !== sha256) {
      // Damaged plain content stays as it is (sealing it would vouch for it).
      await unlink(tmp);
      return false;
    }
    await rename(tmp, path);
    // Same time as the plain file, so the collector still sees its real age. Set once renamed:
    // a temporary file always looks as fresh as its last write (removePartialWrites).
    await utimes(path, before.atime, before.mtime);
    await fsyncDir(join(this.dir, 'sha256', sha256.slice(0, 2)));
    return true;
  }

  async list(after: string, limit: number): Promise<string[]> {
    const root = join(this.dir, 'sha256');
    const out: string[] = [];
    for (const shard of (await readdir(root)).sort()) {
      if (shard < after.slice(0, 2)) continue;
      const names = (await readdir(join(root, shard)).catch(() => [] as string[])).filter(
        (n) => isSha256(n) && n > after,
      );
      for (const n of names.sort()) {
        out.push(n);
        if (out.length >= limit) return out;
      }
    }
    return out;
  }

  private async isSealed(path: string): Promise<boolean> {
    return isSealedContent(await this.head(path));
  }

  /** The first bytes of a stored file: enough to tell sealed from plain and read the frame size. */
  private async head(path: string, size = SEALED_HEAD): Promise<Buffer> {
    const head = Buffer.alloc(size);
    const fh = await open(path, 'r');
    try {
      const { bytesRead } = await fh.read(head, 0, head.length, 0);
      return head.subarray(0, bytesRead);
    } finally {
      await fh.close();
    }
  }

  /**
   * Temporary files not written to since `cutoff`: a write in progress touches its file with
   * every piece. Start-up clears them all (`open`); this is for a worker of a cluster killed
   * mid-write and started again while the other workers go on (it opens without clearing).
   */
  async removePartialWrites(cutoff: Date): Promise<number> {
    const tmpDir = join(this.dir, 'tmp');
    let removed = 0;
    for (const name of await readdir(tmpDir)) {
      const st = await stat(join(tmpDir, name)).catch(() => undefined);
      if (!st || st.mtimeMs >= cutoff.getTime()) continue;
      await rm(join(tmpDir, name), { force: true });
      removed++;
    }
    return removed;
  }

  async *writtenBefore(cutoff: Date): AsyncIterable<{ sha256: string; size: number }> {
    const root = join(this.dir, 'sha256');
    for (const shard of await readdir(root)) {
      for (const name of await readdir(join(root, shard)).catch(() => [] as string[])) {
        if (!isSha256(name)) continue;
        const st = await stat(join(root, shard, name)).catch(() => undefined);
        if (st && st.mtimeMs < cutoff.getTime()) yield { sha256: name, size: st.size };
      }
    }
  }

  async get(sha256: string): Promise<AsyncIterable<Buffer>> {
    if (!isSha256(sha256)) throw notFound('blob not found');
    const path = this.pathOf(sha256);
    const st = await stat(path).catch(() => undefined);
    if (!st) throw notFound('blob not found');
    const head = this.sealing ? await this.head(path, CONTENT_HEADER).catch(() => undefined) : undefined;
    if (head === undefined || !isSealedContent(head) || head.length < CONTENT_HEADER)
      return openStored(createReadStream(path, { highWaterMark: 1024 * 1024 }) as AsyncIterable<Buffer>, this.sealing);
    // Sealed: the header, then reads of one whole frame each, opened (in place) as each arrives, so
    // that every read buffer is handed on and let go as soon as it would be without encryption.
    const frame = 2 ** (head[5] as number) + CONTENT_TAG;
    const frames = createReadStream(path, { start: CONTENT_HEADER, highWaterMark: frame }) as AsyncIterable<Buffer>;
    return openStored(withHead(head, frames), this.sealing, st.size);
  }

  async stat(sha256: string): Promise<{ size: number } | undefined> {
    if (!isSha256(sha256)) return undefined;
    const path = this.pathOf(sha256);
    const st = await stat(path).catch(() => undefined);
    if (!st) return undefined;
    // A sealed file is longer than its content by its header and tags.
    const head = await this.head(path).catch(() => undefined);
    if (head === undefined) return undefined;
    return { size: isSealedContent(head) ? plainSizeOf(st.size, head) : st.size };
  }

  async delete(sha256: string): Promise<void> {
    if (!isSha256(sha256)) return;
    await rm(this.pathOf(sha256), { force: true });
  }
}

const WRITE_SIZE = 1024 * 1024;
/** More pieces than this in one write are joined first (a writev of many tiny buffers costs more than a copy). */
const MAX_PIECES = 64;
/** Magic, format and frame size of a sealed file (secrets/content-cipher.ts). */
const SEALED_HEAD = CONTENT_MAGIC.length + 2;

async function* withHead(head: Buffer, rest: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  yield head;
  yield* rest;
}

/**
 * Writes the stored form of `source` to `fh`, hashing and sealing on the event loop (without
 * the addon). Chunks are gathered into writes of about WRITE_SIZE, and one write is in
 * flight while the next chunks arrive and are hashed, so disk, hashing and network overlap.
 * Every write has ended when this settles.
 */
async function writeOnTheEventLoop(
  fh: FileHandle,
  source: AsyncIterable<Buffer | Uint8Array | string> | Iterable<Buffer | Uint8Array | string>,
  form: StoredForm,
  maxSize: number | undefined,
): Promise<BlobInfo> {
  const digest = new BlobDigest(maxSize);
  let gathered: Buffer[] = [];
  let gatheredLen = 0;
  let inflight: Promise<void> | undefined;
  const flush = async () => {
    if (inflight) await inflight;
    inflight = undefined;
    if (gatheredLen === 0) return;
    // Handed to the kernel as they are (one writev), unless they are many small ones.
    const parts = gathered;
    const bufs = parts.length > MAX_PIECES ? [Buffer.concat(parts, gatheredLen)] : parts;
    gathered = [];
    gatheredLen = 0;
    // Once written, the sealer may fill its frame buffers again.
    inflight = writeAll(fh, bufs).then(() => form.release(parts));
    // Marked handled now; the failure still surfaces at the next await of `inflight`.
    inflight.catch(() => {});
  };
  const gather = (parts: Buffer[]) => {
    for (const out of parts) {
      gathered.push(out);
      gatheredLen += out.length;
    }
  };
  try {
    for await (const raw of source) {
      const chunk = toBuffer(raw);
      digest.update(chunk);
      gather(form.update(chunk));
      if (gatheredLen >= WRITE_SIZE) await flush();
    }
    gather(form.final());
    await flush();
    await inflight;
  } finally {
    await inflight?.catch(() => {});
  }
  return digest.finish();
}

async function writeAll(fh: FileHandle, bufs: Buffer[]): Promise<void> {
  let rest = bufs;
  while (rest.length > 0) {
    let { bytesWritten } = await fh.writev(rest);
    let done = 0;
    while (done < rest.length && bytesWritten >= (rest[done] as Buffer).length) {
      bytesWritten -= (rest[done] as Buffer).length;
      done++;
    }
    rest = rest.slice(done);
    if (bytesWritten > 0) rest[0] = (rest[0] as Buffer).subarray(bytesWritten);
  }
}

async function fsyncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}
