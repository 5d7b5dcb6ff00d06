import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { DomainError } from '../shared/errors.js';

/**
 * Stored content (state files, output values) encrypted with AES-256-GCM in frames, so a
 * stream of any length is sealed and opened with bounded memory.
 *
 * Layout: header | frame 0 | frame 1 | … where
 *   header = magic "\0SRE" (4) | format 1 (1) | frame shift (1) | data key id (16) | salt (16)
 *   frame  = ciphertext of up to 2^shift plaintext bytes | tag (16)
 *
 * Each stored record gets a fresh random salt, and its frames are encrypted under
 * HKDF-SHA256(data key, salt), so nonces can be the frame index without ever repeating
 * under one key. Every frame's associated data is the header, the frame index and a
 * final flag: a reordered, dropped, truncated or extended frame fails authentication,
 * as does a header moved onto other frames. Every frame but the last is full, the last
 * holds 0 (empty content only) to 2^shift bytes.
 *
 * Plain content written before encryption existed never starts with the magic (a state
 * file is JSON text), which is how readers tell the two apart while the background job
 * encrypts it.
 */
export const CONTENT_MAGIC = Buffer.from([0x00, 0x53, 0x52, 0x45]);
const FORMAT = 1;
const FRAME_SHIFT = 16;
const KEY_ID = 16;
const SALT = 16;
const TAG = 16;
export const CONTENT_HEADER = CONTENT_MAGIC.length + 2 + KEY_ID + SALT;
const INFO = Buffer.from('strongroom content v1');

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

/** Bytes stored for `plainSize` bytes of content. */
export function sealedSize(plainSize: number): number {
  const frames = Math.max(1, Math.ceil(plainSize / (1 << FRAME_SHIFT)));
  return CONTENT_HEADER + plainSize + frames * TAG;
}

/** Content bytes in a sealed record of `stored` bytes (the inverse of sealedSize). */
export function plainSizeOf(stored: number): number {
  const n = stored - CONTENT_HEADER;
  const frames = Math.max(1, Math.ceil(n / ((1 << FRAME_SHIFT) + TAG)));
  return n - frames * TAG;
}

function nonce(index: number): Buffer {
  const n = Buffer.alloc(12);
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

function subkey(dataKey: Buffer, salt: Buffer): Buffer {
  return Buffer.from(hkdfSync('sha256', dataKey, salt, INFO, 32));
}

/**
 * Seals a stream: `update` takes plaintext chunks and returns the ciphertext that is
 * ready (the header first), `final` the rest. Holds at most one frame of plaintext.
 */
export class ContentSealer {
  readonly #header: Buffer;
  readonly #key: Buffer;
  #pending: Buffer[] = [];
  #pendingLen = 0;
  #index = 0;
  #headerSent = false;
  static readonly FRAME = 1 << FRAME_SHIFT;

  constructor(dataKey: DataKey) {
    const salt = randomBytes(SALT);
    this.#header = Buffer.concat([CONTENT_MAGIC, Buffer.from([FORMAT, FRAME_SHIFT]), dataKey.id, salt]);
    this.#key = subkey(dataKey.key, salt);
  }

  update(chunk: Buffer): Buffer[] {
    const out: Buffer[] = [];
    if (!this.#headerSent) {
      out.push(this.#header);
      this.#headerSent = true;
    }
    const frame = ContentSealer.FRAME;
    let rest = chunk;
    // A frame is sealed only once more bytes follow it, so the last one is known to be last.
    while (this.#pendingLen + rest.length > frame) {
      const take = frame - this.#pendingLen;
      const plain =
        this.#pendingLen === 0
          ? rest.subarray(0, take)
          : Buffer.concat([...this.#pending, rest.subarray(0, take)], frame);
      rest = rest.subarray(take);
      this.#pending = [];
      this.#pendingLen = 0;
      this.#seal(plain, false, out);
    }
    if (rest.length > 0) {
      // Copied: the caller may reuse its buffer before the frame is complete.
      this.#pending.push(Buffer.from(rest));
      this.#pendingLen += rest.length;
    }
    return out;
  }

  final(): Buffer[] {
    const out: Buffer[] = [];
    if (!this.#headerSent) {
      out.push(this.#header);
      this.#headerSent = true;
    }
    this.#seal(Buffer.concat(this.#pending, this.#pendingLen), true, out);
    this.#pending = [];
    this.#pendingLen = 0;
    return out;
  }

  #seal(plain: Buffer, final: boolean, out: Buffer[]): void {
    const c = createCipheriv('aes-256-gcm', this.#key, nonce(this.#index));
    c.setAAD(aad(this.#header, this.#index, final));
    this.#index++;
    const body = c.update(plain);
    c.final();
    out.push(body, c.getAuthTag());
  }
}

/** Seals a whole small buffer (inline states, output values). */
export function sealBuffer(dataKey: DataKey, plain: Buffer): Buffer {
  const s = new ContentSealer(dataKey);
  const parts = [...s.update(plain), ...s.final()];
  return Buffer.concat(parts);
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
  if (format !== FORMAT || shift < 10 || shift > 24) throw undecryptable(`unknown format ${format}/${shift}`);
  const header = head.subarray(0, CONTENT_HEADER);
  return {
    header,
    keyId: header.subarray(6, 6 + KEY_ID),
    salt: header.subarray(6 + KEY_ID, CONTENT_HEADER),
    frame: 1 << shift,
  };
}

function openFrame(key: Buffer, p: Parsed, index: number, final: boolean, sealed: Buffer): Buffer {
  if (sealed.length < TAG) throw undecryptable(`frame ${index} truncated`);
  try {
    const d = createDecipheriv('aes-256-gcm', key, nonce(index));
    d.setAAD(aad(p.header, index, final));
    d.setAuthTag(sealed.subarray(sealed.length - TAG));
    const plain = d.update(sealed.subarray(0, sealed.length - TAG));
    d.final();
    return plain;
  } catch (err) {
    throw undecryptable(`frame ${index} failed authentication`, err);
  }
}

/** The data key id a sealed record names (hex), or undefined for plain content. */
export function sealedKeyId(head: Buffer): string | undefined {
  return isSealedContent(head) && head.length >= CONTENT_HEADER ? parseHeader(head).keyId.toString('hex') : undefined;
}

/** Opens a whole small record; plain (not yet encrypted) content is returned as it is. */
export async function openBuffer(stored: Buffer, lookup: DataKeyLookup): Promise<Buffer> {
  if (!isSealedContent(stored)) return stored;
  const parts: Buffer[] = [];
  for await (const p of openStream([stored], lookup)) parts.push(p);
  return parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts);
}

/**
 * Opens a stored stream frame by frame: no byte of a frame is yielded before its tag is
 * verified, and a stream that ends early fails. Plain content passes through unchanged.
 */
export async function* openStream(
  source: AsyncIterable<Buffer> | Iterable<Buffer>,
  lookup: DataKeyLookup,
): AsyncGenerator<Buffer> {
  let buf: Buffer[] = [];
  let len = 0;
  let p: Parsed | undefined;
  let key: Buffer | undefined;
  let index = 0;
  let plain = false;
  const take = (n: number): Buffer => {
    const first = buf[0] as Buffer;
    let out: Buffer;
    if (first.length >= n) {
      out = first.subarray(0, n);
      if (first.length === n) buf.shift();
      else buf[0] = first.subarray(n);
    } else {
      out = Buffer.concat(buf, len).subarray(0, n);
      const rest = Buffer.concat(buf, len).subarray(n);
      buf = rest.length > 0 ? [rest] : [];
    }
    len -= n;
    return out;
  };
  for await (const chunk of source) {
    if (plain) {
      yield chunk;
      continue;
    }
    buf.push(chunk);
    len += chunk.length;
    if (!p) {
      if (len < CONTENT_MAGIC.length) continue;
      const head = Buffer.concat(buf, len);
      if (!isSealedContent(head)) {
        plain = true;
        buf = [];
        len = 0;
        yield head;
        continue;
      }
      if (len < CONTENT_HEADER) continue;
      buf = [head];
      p = parseHeader(take(CONTENT_HEADER));
      // Copied: the header outlives the chunk it came in.
      p = { ...p, header: Buffer.from(p.header) };
      key = subkey(await lookup(p.keyId), p.salt);
    }
    const whole = p.frame + TAG;
    while (len > whole) yield openFrame(key as Buffer, p, index++, false, take(whole));
  }
  if (plain) return;
  if (!p) {
    if (len === 0) return; // empty plain content
    const head = Buffer.concat(buf, len);
    if (!isSealedContent(head)) {
      yield head;
      return;
    }
    throw undecryptable('header truncated');
  }
  yield openFrame(key as Buffer, p, index, true, len > 0 ? take(len) : Buffer.alloc(0));
}

/** A lookup for readers given no sealing: only plain content can be read. */
export const noDataKeys: DataKeyLookup = (id) => Promise.reject(undecryptable(`no data key ${id.toString('hex')}`));

/** Seals a short text when the sealing says so (output values). */
export function maybeSealText(sealing: ContentSealing | undefined, text: string): string {
  return sealing?.encrypt ? sealText(sealing.current(), text) : text;
}

/** Seals output values and other short texts: `$sr1$` and the base64 of a sealed buffer. */
export const SEALED_TEXT_PREFIX = '$sr1$';

export function sealText(dataKey: DataKey, text: string): string {
  return SEALED_TEXT_PREFIX + sealBuffer(dataKey, Buffer.from(text, 'utf8')).toString('base64');
}

export function isSealedText(s: string): boolean {
  return s.startsWith(SEALED_TEXT_PREFIX);
}

/** Opens a sealed text; a plain one (JSON written before encryption) is returned as it is. */
export async function openText(stored: string, lookup: DataKeyLookup): Promise<string> {
  if (!isSealedText(stored)) return stored;
  const b = Buffer.from(stored.slice(SEALED_TEXT_PREFIX.length), 'base64');
  if (!isSealedContent(b)) throw undecryptable('sealed text malformed');
  return (await openBuffer(b, lookup)).toString('utf8');
}
