import { createCipheriv, createDecipheriv, createHmac } from 'node:crypto';
import { DomainError } from '../shared/errors.js';
import { pooledRandomBytes, pooledRandomInto } from '../shared/ids.js';
import { nativeAddon } from '../shared/native-addon.js';

/**
 * Stored content (state files, output values) encrypted with AES-256-GCM. Two formats,
 * told apart by the byte after the magic:
 *
 * Format 1, streams in frames (blob stores), so content of any length is sealed and opened
 * with bounded memory:
 *   header = magic "\0SRE" (4) | format 1 (1) | frame shift (1) | data key id (16) | salt (16)
 *   then frame 0 | frame 1 | … where frame = ciphertext of up to 2^shift plaintext bytes | tag (16)
 *
 * Each stream gets a fresh random salt, and its frames are encrypted under
 * HKDF-SHA256(data key, salt), so nonces can be the frame index without ever repeating
 * under one key. Every frame's associated data is the header, the frame index and a
 * final flag: a reordered, dropped, truncated or extended frame fails authentication,
 * as does a header moved onto other frames. Every frame but the last is full, the last
 * holds 0 (empty content only) to 2^shift bytes.
 *
 * Frames are 1 MiB when written (shift 20); readers take any shift from 10 to 24 (content
 * written before was framed in 64 KiB). A frame is sealed once a byte after it arrives, so
 * the last one is known to be last.
 *
 * Format 2, records sealed whole (inline states, output values; decision 0052):
 *   magic (4) | format 2 (1) | 0 (1) | data key id (16) | nonce (12) | ciphertext | tag (16)
 * under the data key's record key (HKDF-SHA256 of the data key with its own label, derived
 * once per data key and kept), with a random nonce and the 34-byte header as associated
 * data. A small record thus pays no key derivation of its own. Records written whole
 * before were in format 1 and read as before.
 *
 * With the native addon (native/aes-gcm.c) the cipher works in place and nothing is
 * allocated per frame (decision 0051): the sealer copies the plaintext into a frame
 * buffer, encrypts it there and hands that buffer out, and takes it back for the next
 * frame once the caller has written it (`release`); the opener decrypts stored chunks where
 * they are, so a stored chunk handed to it becomes plaintext and belongs to it. Without the
 * addon node:crypto is used, which returns every update in a new buffer: the sealer keeps
 * references to the chunks of the frame it has not sealed yet and encrypts them piece by
 * piece, and the opener hands out new plaintext pieces. Either way a chunk handed to the
 * sealer must not change until the frame holding it is sealed, and the opener hands out a
 * frame's plaintext only after its tag checks.
 *
 * Plain content written before encryption existed never starts with the magic (a state
 * file is JSON text), which is how readers tell the two apart while the background job
 * encrypts it.
 */
export const CONTENT_MAGIC = Buffer.from([0x00, 0x53, 0x52, 0x45]);
const FORMAT = 1;
/** A record sealed whole (sealBuffer); see RECORD_HEADER. */
const FORMAT_RECORD = 2;
/** The frame size of what is written: 1 MiB (per-frame costs are paid 16 times less than at 64 KiB). */
export const FRAME_SHIFT = 20;
const MIN_SHIFT = 10;
const MAX_SHIFT = 24;
const KEY_ID = 16;
const SALT = 16;
const TAG = 16;
/** The tag after each frame. */
export const CONTENT_TAG = TAG;
export const CONTENT_HEADER = CONTENT_MAGIC.length + 2 + KEY_ID + SALT;
const INFO_BLOCK = Buffer.concat([Buffer.from('strongroom content v1'), Buffer.from([1])]);
const NONCE = 12;
/** Format 2: magic, format, a zero byte, the data key id (at 6, as in format 1), the nonce (native/aes-gcm.c). */
const RECORD_NONCE = CONTENT_MAGIC.length + 2 + KEY_ID;
export const RECORD_HEADER = RECORD_NONCE + NONCE;
/** HKDF info and salt of the record key (format 2): another label than the streams' subkeys. */
const RECORD_INFO_BLOCK = Buffer.concat([Buffer.from('strongroom record v2'), Buffer.from([1])]);
const RECORD_SALT = Buffer.alloc(32);

/** A data key: its id (stored in every header it sealed) and the 32 key bytes. */
export interface DataKey {
  id: Buffer;
  key: Buffer;
}

/** Finds the data key a header names (the master key unseals it; cached by the ring). */
export type DataKeyLookup = (id: Buffer) => Promise<Buffer>;

/**
 * What writers and readers of stored content are given. Reading accepts sealed and plain
 * content (written before encryption existed); `encrypt: false` writes plain content, for
 * measuring the cost of encryption only.
 */
export interface ContentSealing {
  encrypt: boolean;
  current(): DataKey;
  lookup: DataKeyLookup;
  /** The in-place cipher to use, null for node:crypto; when absent, NATIVE_GCM. */
  native?: NativeGcm | null;
}

/** An error for content that cannot be authenticated; nothing of it is served. */
export function undecryptable(what: string, cause?: unknown): DomainError {
  return new DomainError(
    'unavailable',
    `stored state content cannot be authenticated (${what}); it is not served: the data is damaged or was ` +
      'sealed under another master key',
    cause === undefined ? {} : { cause },
  );
}

export function isSealedContent(head: Buffer): boolean {
  return head.length >= CONTENT_MAGIC.length && head.subarray(0, CONTENT_MAGIC.length).equals(CONTENT_MAGIC);
}

/** Bytes stored for `plainSize` bytes of content sealed in frames of 2^shift bytes. */
export function sealedSize(plainSize: number, shift = FRAME_SHIFT): number {
  const frames = Math.max(1, Math.ceil(plainSize / 2 ** shift));
  return CONTENT_HEADER + plainSize + frames * TAG;
}

/**
 * Content bytes in a sealed record of `stored` bytes (the inverse of sealedSize), given
 * its first bytes (at least 6: the frame size is in the header).
 */
export function plainSizeOf(stored: number, head: Buffer): number {
  const shift = head[5] ?? FRAME_SHIFT;
  const n = stored - CONTENT_HEADER;
  const frames = Math.max(1, Math.ceil(n / (2 ** shift + TAG)));
  return n - frames * TAG;
}

/** AES-256-GCM in place and HKDF-SHA256 from the native addon (native/aes-gcm.c). */
export interface NativeGcm {
  seal(key: Buffer, nonce: Buffer, aad: Buffer, pieces: Buffer[], tag: Buffer): boolean;
  /** 1 authentic, 0 not (the pieces are zeroed), -2 internal failure. */
  open(key: Buffer, nonce: Buffer, aad: Buffer, pieces: Buffer[], tag: Buffer): number;
  hkdf(key: Buffer, salt: Buffer, infoBlock: Buffer, out: Buffer): void;
  /** Format 2: `out` holds the header; the ciphertext and tag of `plain` are written behind it. */
  sealRecord(key: Buffer, plain: Buffer, out: Buffer): void;
  /** Format 2: 1 authentic (`out` holds the plaintext), 0 not (`out` zeroed), -2 internal failure. */
  openRecord(key: Buffer, stored: Buffer, out: Buffer): number;
}
/** Pieces one native call takes (native/aes-gcm.c); more are joined first. */
const NATIVE_MAX_PIECES = 256;

/**
 * The native in-place cipher, or null when the addon is not built. Every function here
 * takes the cipher to use (null: node:crypto) and defaults to this one; a server hands
 * down its choice in ContentSealing.native (`native_crypto`).
 */
export const NATIVE_GCM: NativeGcm | null = complete(nativeAddon()?.aesGcm as NativeGcm | undefined);

/** The addon's cipher when it has every function (an addon built from older sources may not). */
function complete(gcm: NativeGcm | undefined): NativeGcm | null {
  return gcm && typeof gcm.sealRecord === 'function' && typeof gcm.openRecord === 'function' ? gcm : null;
}

/** The cipher a sealing asks for: its own choice, else the native one when built. */
export function cipherOf(sealing: { native?: NativeGcm | null } | undefined): NativeGcm | null {
  return sealing?.native === undefined ? NATIVE_GCM : sealing.native;
}

function nonce(index: number): Buffer {
  // From the shared pool (Buffer.alloc would make an ArrayBuffer per frame, and per small record).
  const n = Buffer.allocUnsafe(12);
  n.writeUInt32BE(0, 0);
  n.writeUInt32BE(Math.floor(index / 0x1_0000_0000), 4);
  n.writeUInt32BE(index >>> 0, 8);
  return n;
}

function aad(header: Buffer, index: number, final: boolean): Buffer {
  const a = Buffer.allocUnsafe(header.length + 9);
  header.copy(a, 0);
  a.writeUInt32BE(Math.floor(index / 0x1_0000_0000), header.length);
  a.writeUInt32BE(index >>> 0, header.length + 4);
  a[header.length + 8] = final ? 1 : 0;
  return a;
}

/**
 * HKDF-SHA256(data key, salt, info) to 32 bytes (RFC 5869: one extract, one expand block),
 * written out with two HMACs: half the CPU of `hkdfSync`. The info is "strongroom content
 * v1" for the subkey of each stream (format 1), "strongroom record v2" for a data key's
 * record key (format 2).
 */
function subkey(dataKey: Buffer, salt: Buffer, gcm: NativeGcm | null, info = INFO_BLOCK): Buffer {
  if (gcm) {
    const out = Buffer.allocUnsafe(32);
    gcm.hkdf(dataKey, salt, info, out);
    return out;
  }
  const prk = createHmac('sha256', salt).update(dataKey).digest();
  return createHmac('sha256', prk).update(info).digest();
}

/** Record keys (format 2) by data key: derived on first use, then kept as long as the data key. */
const recordKeys = new WeakMap<Buffer, Buffer>();

/** The key of records sealed whole under a data key: HKDF-SHA256(data key, zeros, "strongroom record v2"). */
function recordKey(dataKey: Buffer, gcm: NativeGcm | null): Buffer {
  let k = recordKeys.get(dataKey);
  if (!k) {
    k = subkey(dataKey, RECORD_SALT, gcm, RECORD_INFO_BLOCK);
    recordKeys.set(dataKey, k);
  }
  return k;
}

/** Takes `n` bytes off the front of `pieces` (which hold at least `n`), as references. */
export function takeFront(pieces: Buffer[], n: number): Buffer[] {
  const out: Buffer[] = [];
  let need = n;
  while (need > 0) {
    const f = pieces[0] as Buffer;
    if (f.length <= need) {
      out.push(f);
      pieces.shift();
      need -= f.length;
    } else {
      out.push(f.subarray(0, need));
      pieces[0] = f.subarray(need);
      need = 0;
    }
  }
  return out;
}

/**
 * The frames of one sealed stream (format 1): its header with a fresh salt, the subkey
 * derived from it, and each frame's nonce and associated data in turn. ContentSealer seals
 * with it on the caller's thread; blob stores also hand its frames to the native writer
 * (blob/threaded-write.ts), which seals them on the threadpool.
 */
export class FramePlan {
  readonly header: Buffer;
  readonly key: Buffer;
  /** Plaintext bytes per frame (every frame but the last is full). */
  readonly frame: number;
  #index = 0;

  constructor(dataKey: DataKey, shift = FRAME_SHIFT, gcm: NativeGcm | null = NATIVE_GCM) {
    if (!Number.isInteger(shift) || shift < MIN_SHIFT || shift > MAX_SHIFT) throw new Error(`frame shift ${shift}`);
    const salt = pooledRandomBytes(SALT);
    const header = Buffer.allocUnsafe(CONTENT_HEADER);
    CONTENT_MAGIC.copy(header, 0);
    header[4] = FORMAT;
    header[5] = shift;
    dataKey.id.copy(header, 6);
    salt.copy(header, 6 + KEY_ID);
    this.header = header;
    this.key = subkey(dataKey.key, salt, gcm);
    this.frame = 2 ** shift;
  }

  /** The next frame's nonce and associated data (`final`: it is the last frame). */
  next(final: boolean): { nonce: Buffer; aad: Buffer } {
    const index = this.#index++;
    return { nonce: nonce(index), aad: aad(this.header, index, final) };
  }

  /** The next frame's nonce followed by its associated data, in one buffer (native/blob-writer.c). */
  nextJoined(final: boolean): Buffer {
    const { nonce: n, aad: a } = this.next(final);
    return Buffer.concat([n, a], n.length + a.length);
  }
}

/**
 * Seals a stream: `update` takes plaintext chunks and returns the ciphertext that is
 * ready (the header first), `final` the rest. Holds at most one frame of plaintext. With
 * the native cipher the chunks are copied into a frame buffer (they may change or be
 * reused once `update` returns) and a caller that is done with the ciphertext it got (it
 * was written) may hand it back with `release`, so that a stream reuses a few frame
 * buffers instead of allocating one per frame. Without it the caller must not change a
 * chunk it handed over until the frame holding it is sealed.
 */
export class ContentSealer {
  readonly #plan: FramePlan;
  #pending: Buffer[] = [];
  #pendingLen = 0;
  #headerSent = false;
  /** Native cipher: the frame being filled, and frame buffers handed back for reuse. */
  #stage: Buffer | undefined;
  #staged = 0;
  readonly #spare: Buffer[] = [];
  /** Frame buffers this sealer made (only streams make them; a small record needs none). */
  #issued: WeakSet<ArrayBufferLike> | undefined;
  readonly #gcm: NativeGcm | null;

  constructor(dataKey: DataKey, shift = FRAME_SHIFT, gcm: NativeGcm | null = NATIVE_GCM) {
    this.#gcm = gcm;
    this.#plan = new FramePlan(dataKey, shift, gcm);
  }

  update(chunk: Buffer): Buffer[] {
    const out: Buffer[] = [];
    if (!this.#headerSent) {
      out.push(this.#plan.header);
      this.#headerSent = true;
    }
    if (this.#gcm) {
      this.#stageNative(chunk, out);
      return out;
    }
    const frame = this.#plan.frame;
    let rest = chunk;
    // A frame is sealed only once more bytes follow it, so the last one is known to be last.
    while (this.#pendingLen + rest.length > frame) {
      const take = frame - this.#pendingLen;
      if (take > 0) this.#pending.push(rest.subarray(0, take));
      rest = rest.subarray(take);
      this.#seal(false, out);
    }
    if (rest.length > 0) {
      this.#pending.push(rest);
      this.#pendingLen += rest.length;
    }
    return out;
  }

  final(): Buffer[] {
    const out: Buffer[] = [];
    if (!this.#headerSent) {
      out.push(this.#plan.header);
      this.#headerSent = true;
    }
    if (this.#gcm) this.#sealStage(true, out);
    else this.#seal(true, out);
    return out;
  }

  /** Ciphertext from `update` or `final` that the caller no longer needs (it was written). */
  release(parts: Buffer[]): void {
    for (const p of parts) {
      if (this.#spare.length >= SPARE_FRAMES) return;
      if (p.byteOffset === 0 && p.buffer.byteLength === this.#plan.frame + TAG && this.#issued?.has(p.buffer)) {
        this.#spare.push(Buffer.from(p.buffer, 0, this.#plan.frame + TAG));
      }
    }
  }

  /** Copies a chunk into frame buffers, sealing each full one once a byte after it arrives. */
  #stageNative(chunk: Buffer, out: Buffer[]): void {
    const frame = this.#plan.frame;
    let at = 0;
    while (at < chunk.length) {
      if (this.#stage && this.#staged === frame) this.#sealStage(false, out);
      if (!this.#stage) {
        this.#stage = this.#spare.pop() ?? Buffer.allocUnsafeSlow(frame + TAG);
        (this.#issued ??= new WeakSet()).add(this.#stage.buffer);
        this.#staged = 0;
      }
      const n = chunk.copy(this.#stage, this.#staged, at, Math.min(chunk.length, at + frame - this.#staged));
      this.#staged += n;
      at += n;
    }
  }

  /** Seals the frame buffer in place (native cipher) and hands it out with its tag. */
  #sealStage(final: boolean, out: Buffer[]): void {
    const n = this.#staged;
    const stage = this.#stage ?? Buffer.allocUnsafe(TAG);
    const { nonce: iv, aad: data } = this.#plan.next(final);
    (this.#gcm as NativeGcm).seal(this.#plan.key, iv, data, [stage.subarray(0, n)], stage.subarray(n, n + TAG));
    out.push(stage.subarray(0, n + TAG));
    this.#stage = undefined;
    this.#staged = 0;
  }

  /** Seals the pending pieces as the next frame, piece by piece (no plaintext is copied). */
  #seal(final: boolean, out: Buffer[]): void {
    const { nonce: iv, aad: data } = this.#plan.next(final);
    const c = createCipheriv('aes-256-gcm', this.#plan.key, iv);
    c.setAAD(data);
    for (const p of this.#pending) out.push(c.update(p));
    c.final();
    out.push(c.getAuthTag());
    this.#pending = [];
    this.#pendingLen = 0;
  }
}

/** Frame buffers a sealer keeps for reuse: one being written, one sealed, one filling. */
export const SPARE_FRAMES = 3;

/**
 * Seals a whole buffer (inline states, output values) as one record (format 2) in one new
 * buffer of exactly the stored size. The nonce is random: a data key seals at most
 * DATA_KEY_USES records (the ring makes a new one then), far below the 2^32 that random
 * 96-bit nonces allow under one key.
 */
export function sealBuffer(dataKey: DataKey, plain: Buffer, gcm: NativeGcm | null = NATIVE_GCM): Buffer {
  const key = recordKey(dataKey.key, gcm);
  const n = plain.length;
  const out = Buffer.allocUnsafe(RECORD_HEADER + n + TAG);
  CONTENT_MAGIC.copy(out, 0);
  out[4] = FORMAT_RECORD;
  out[5] = 0;
  dataKey.id.copy(out, 6);
  pooledRandomInto(out, RECORD_NONCE, NONCE);
  if (gcm) {
    gcm.sealRecord(key, plain, out);
    return out;
  }
  const c = createCipheriv('aes-256-gcm', key, out.subarray(RECORD_NONCE, RECORD_HEADER));
  c.setAAD(out.subarray(0, RECORD_HEADER));
  c.update(plain).copy(out, RECORD_HEADER);
  c.final();
  c.getAuthTag().copy(out, RECORD_HEADER + n);
  return out;
}

/** Opens a record sealed whole (format 2) into a new buffer; the stored one is left as it is. */
async function openRecord(stored: Buffer, lookup: DataKeyLookup, gcm: NativeGcm | null): Promise<Buffer> {
  if (stored.length < RECORD_HEADER + TAG) throw undecryptable('record truncated');
  if (stored[5] !== 0) throw undecryptable(`unknown format ${FORMAT_RECORD}/${stored[5]}`);
  const key = recordKey(await lookup(stored.subarray(6, RECORD_NONCE)), gcm);
  const n = stored.length - RECORD_HEADER - TAG;
  if (gcm) {
    const out = Buffer.allocUnsafe(n);
    if (gcm.openRecord(key, stored, out) !== 1) throw undecryptable('record failed authentication');
    return out;
  }
  let plain: Buffer | undefined;
  try {
    const d = createDecipheriv('aes-256-gcm', key, stored.subarray(RECORD_NONCE, RECORD_HEADER));
    d.setAAD(stored.subarray(0, RECORD_HEADER));
    d.setAuthTag(stored.subarray(RECORD_HEADER + n));
    plain = d.update(stored.subarray(RECORD_HEADER, RECORD_HEADER + n));
    d.final();
    return plain;
  } catch (err) {
    plain?.fill(0);
    throw undecryptable('record failed authentication', err);
  }
}

interface Parsed {
  header: Buffer;
  keyId: Buffer;
  salt: Buffer;
  frame: number;
}

function parseHeader(head: Buffer): Parsed {
  if (head.length < CONTENT_HEADER || !isSealedContent(head)) throw undecryptable('header missing');
  const format = head[4] as number;
  const shift = head[5] as number;
  if (format !== FORMAT || shift < MIN_SHIFT || shift > MAX_SHIFT) {
    throw undecryptable(`unknown format ${format}/${shift}`);
  }
  // Copied: the header outlives the chunk it came in.
  const header = Buffer.from(head.subarray(0, CONTENT_HEADER));
  return {
    header,
    keyId: header.subarray(6, 6 + KEY_ID),
    salt: header.subarray(6 + KEY_ID, CONTENT_HEADER),
    frame: 2 ** shift,
  };
}

/**
 * Opens the frames after a header: `push` takes stored chunks and returns the plaintext
 * of every frame that is complete and authentic (as pieces), `end` the last frame's.
 * Holds references to at most one frame and a chunk; nothing of a frame is returned
 * before its tag checks. With the native cipher the chunks are decrypted in place (the
 * pieces returned are parts of them), so they must be the opener's to change.
 */
class FrameOpener {
  #pieces: Buffer[] = [];
  #len = 0;
  #index = 0;
  readonly #whole: number;
  /** Stored bytes after the header not yet opened, when the record's size is known. */
  #left: number | undefined;
  #ended = false;

  /**
   * `bodySize`: the stored bytes after the header, when known (a file's size). A frame can
   * then be opened as soon as it is complete, whether it is the last or not; a wrong size
   * only makes a frame fail authentication (the final flag is in its associated data).
   */
  constructor(
    private readonly p: Parsed,
    private readonly key: Buffer,
    private readonly gcm: NativeGcm | null,
    bodySize?: number,
  ) {
    this.#whole = p.frame + TAG;
    this.#left = bodySize;
  }

  push(chunk: Buffer): Buffer[] {
    if (chunk.length > 0) {
      if (this.#ended) throw undecryptable(`data after frame ${this.#index - 1}, the last`);
      this.#pieces.push(chunk);
      this.#len += chunk.length;
    }
    const out: Buffer[] = [];
    const whole = this.#whole;
    // Without the size, a frame is opened as not final only once a byte after it is there.
    for (;;) {
      const left = this.#left;
      const last = left !== undefined && left <= whole;
      if (last ? this.#len < left : left !== undefined ? this.#len < whole : this.#len <= whole) break;
      const n = last ? left : whole;
      this.#len -= n;
      if (left !== undefined) this.#left = left - n;
      this.#open(takeFront(this.#pieces, n), n, last, out);
      if (last) {
        this.#ended = true;
        if (this.#len > 0) throw undecryptable(`data after frame ${this.#index - 1}, the last`);
        break;
      }
    }
    return out;
  }

  end(): Buffer[] {
    const out: Buffer[] = [];
    if (this.#ended) return out;
    const n = this.#len;
    this.#len = 0;
    this.#open(this.#pieces, n, true, out);
    this.#pieces = [];
    return out;
  }

  #open(frame: Buffer[], n: number, final: boolean, out: Buffer[]): void {
    const index = this.#index++;
    if (n < TAG) throw undecryptable(`frame ${index} truncated`);
    const body = takeFront(frame, n - TAG);
    // The tag may straddle two stored chunks (16 bytes, copied only then).
    const tag = frame.length === 1 ? (frame[0] as Buffer) : Buffer.concat(frame, TAG);
    const gcm = this.gcm;
    if (gcm) {
      const pieces = body.length > NATIVE_MAX_PIECES ? [Buffer.concat(body)] : body;
      const r = gcm.open(this.key, nonce(index), aad(this.p.header, index, final), pieces, tag);
      if (r !== 1) throw undecryptable(`frame ${index} failed authentication`);
      for (const b of pieces) if (b.length > 0) out.push(b);
      return;
    }
    const plain: Buffer[] = [];
    try {
      const d = createDecipheriv('aes-256-gcm', this.key, nonce(index));
      d.setAAD(aad(this.p.header, index, final));
      d.setAuthTag(tag);
      for (const b of body) plain.push(d.update(b));
      d.final();
    } catch (err) {
      for (const b of plain) b.fill(0);
      throw undecryptable(`frame ${index} failed authentication`, err);
    }
    for (const b of plain) if (b.length > 0) out.push(b);
  }
}

/** The data key id a sealed record names (hex, at the same place in both formats), or undefined for plain content. */
export function sealedKeyId(head: Buffer): string | undefined {
  return isSealedContent(head) && head.length >= RECORD_NONCE
    ? head.subarray(6, RECORD_NONCE).toString('hex')
    : undefined;
}

/**
 * Opens a whole record, sealed whole (format 2) or in frames (format 1: streams, and
 * records written whole before format 2); plain (not yet encrypted) content is returned as it is.
 */
export async function openBuffer(
  stored: Buffer,
  lookup: DataKeyLookup,
  gcm: NativeGcm | null = NATIVE_GCM,
): Promise<Buffer> {
  if (!isSealedContent(stored)) return stored;
  if (stored[4] === FORMAT_RECORD) return openRecord(stored, lookup, gcm);
  if (stored.length < CONTENT_HEADER) throw undecryptable('header truncated');
  const p = parseHeader(stored);
  const opener = new FrameOpener(p, subkey(await lookup(p.keyId), p.salt, gcm), gcm);
  // The native cipher opens in place: into a copy, as the stored buffer is the caller's.
  const body = stored.subarray(CONTENT_HEADER);
  const parts = opener.push(gcm ? Buffer.from(body) : body);
  for (const part of opener.end()) parts.push(part);
  return parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts);
}

/**
 * Opens a stored stream frame by frame: no byte of a frame is yielded before its tag is
 * verified, and a stream that ends early fails. Plain content passes through unchanged.
 * With `storedSize` (the whole record's, header included) each frame is opened as soon as
 * its last byte is there, so a source that reads whole frames gets each back at once.
 */
export async function* openStream(
  source: AsyncIterable<Buffer> | Iterable<Buffer>,
  lookup: DataKeyLookup,
  gcm: NativeGcm | null = NATIVE_GCM,
  storedSize?: number,
): AsyncGenerator<Buffer> {
  let head: Buffer[] = [];
  let headLen = 0;
  let opener: FrameOpener | undefined;
  let plain = false;
  for await (const chunk of source) {
    if (plain) {
      yield chunk;
      continue;
    }
    if (opener) {
      for (const out of opener.push(chunk)) yield out;
      continue;
    }
    head.push(chunk);
    headLen += chunk.length;
    if (headLen < CONTENT_MAGIC.length) continue;
    const first = head.length === 1 ? (head[0] as Buffer) : Buffer.concat(head, headLen);
    head = [first];
    if (!isSealedContent(first)) {
      plain = true;
      head = [];
      yield first;
      continue;
    }
    if (headLen < CONTENT_HEADER) continue;
    const p = parseHeader(first);
    head = [];
    const bodySize = storedSize === undefined ? undefined : storedSize - CONTENT_HEADER;
    opener = new FrameOpener(p, subkey(await lookup(p.keyId), p.salt, gcm), gcm, bodySize);
    for (const out of opener.push(first.subarray(CONTENT_HEADER))) yield out;
  }
  if (plain) return;
  if (!opener) {
    if (headLen === 0) return; // empty plain content
    const first = Buffer.concat(head, headLen);
    if (!isSealedContent(first)) {
      yield first;
      return;
    }
    throw undecryptable('header truncated');
  }
  for (const out of opener.end()) yield out;
}

/** A lookup for readers given no sealing: only plain content can be read. */
export const noDataKeys: DataKeyLookup = (id) => Promise.reject(undecryptable(`no data key ${id.toString('hex')}`));

/** Seals a short text when the sealing says so (output values). */
export function maybeSealText(sealing: ContentSealing | undefined, text: string): string {
  return sealing?.encrypt ? sealText(sealing.current(), text, cipherOf(sealing)) : text;
}

/** Seals output values and other short texts: `$sr1$` and the base64 of a sealed buffer. */
export const SEALED_TEXT_PREFIX = '$sr1$';

export function sealText(dataKey: DataKey, text: string, gcm: NativeGcm | null = NATIVE_GCM): string {
  return SEALED_TEXT_PREFIX + sealBuffer(dataKey, Buffer.from(text, 'utf8'), gcm).toString('base64');
}

export function isSealedText(s: string): boolean {
  return s.startsWith(SEALED_TEXT_PREFIX);
}

/** Opens a sealed text; a plain one (JSON written before encryption) is returned as it is. */
export async function openText(
  stored: string,
  lookup: DataKeyLookup,
  gcm: NativeGcm | null = NATIVE_GCM,
): Promise<string> {
  if (!isSealedText(stored)) return stored;
  const b = Buffer.from(stored.slice(SEALED_TEXT_PREFIX.length), 'base64');
  if (!isSealedContent(b)) throw undecryptable('sealed text malformed');
  return (await openBuffer(b, lookup, gcm)).toString('utf8');
}
