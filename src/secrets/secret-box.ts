import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import { DomainError } from '../shared/errors.js';

const V1 = 1;
const V2 = 2;
const KEY_ID = 8;
const IV = 12;
const TAG = 16;
const KEY = 32;

/** A master key's public name: 8 bytes of an HMAC under the key, in hex (reveals nothing of the key). */
export function masterKeyId(key: Buffer): string {
  return createHmac('sha256', key).update('strongroom master key id').digest().subarray(0, KEY_ID).toString('hex');
}

/**
 * Envelope encryption for secrets at rest (CA private keys and every other secret the
 * services keep). Each value gets its own random data key; the data key is wrapped with
 * the master key. Both layers are AES-256-GCM. The optional context (for example
 * `pki-key:<id>`) is bound as associated data, so a ciphertext cannot be moved to
 * another record.
 *
 * Layout (base64), version 2: 2 | master key id(8) | wrapIv(12) | wrapTag(16) | wrappedKey(32) | iv(12) | tag(16) |
 * ciphertext Version 1 (written before master key rotation existed) is the same without the key id;
 * it is still read, trying each known key.
 *
 * The box seals with its current master key and opens with it or any of the others it
 * was given: during a rotation both the old and the new key are accepted
 * (secrets/master-key-rotation.ts re-seals every value, then the old key is dropped).
 */
export class SecretBox {
  #current: { id: string; key: Buffer };
  readonly #keys = new Map<string, Buffer>();

  constructor(masterKey: Buffer, others: Buffer[] = []) {
    for (const k of [masterKey, ...others]) {
      if (k.length !== KEY) throw new Error('master key must be 32 bytes');
      this.#keys.set(masterKeyId(k), Buffer.from(k));
    }
    this.#current = { id: masterKeyId(masterKey), key: this.#keys.get(masterKeyId(masterKey)) as Buffer };
  }

  /** The id of the key new values are sealed with. */
  get keyId(): string {
    return this.#current.id;
  }

  /** Ids of every key that opens values (the current one first). */
  get keyIds(): string[] {
    return [this.#current.id, ...[...this.#keys.keys()].filter((id) => id !== this.#current.id)];
  }

  /** Copies of every key, the current one first (for writing the key file during a rotation). */
  exportKeys(): Buffer[] {
    return this.keyIds.map((id) => Buffer.from(this.#keys.get(id) as Buffer));
  }

  currentKey(): Buffer {
    return Buffer.from(this.#current.key);
  }

  /** Seals with `key` from now on; the previous current key still opens. */
  rotateTo(key: Buffer): void {
    if (key.length !== KEY) throw new Error('master key must be 32 bytes');
    const id = masterKeyId(key);
    this.#keys.set(id, Buffer.from(key));
    this.#current = { id, key: this.#keys.get(id) as Buffer };
  }

  /**
   * Takes the keys of a key file another worker rotated: the first becomes current, the
   * others open values as before (keys already held are kept).
   */
  adopt(keys: Buffer[]): void {
    const [first, ...others] = keys;
    if (!first) return;
    for (const k of others) {
      if (k.length !== KEY) throw new Error('master key must be 32 bytes');
      const id = masterKeyId(k);
      if (!this.#keys.has(id)) this.#keys.set(id, Buffer.from(k));
    }
    this.rotateTo(first);
  }

  /** Drops every key but the current one (the end of a rotation). */
  forgetOthers(): void {
    for (const [id, k] of this.#keys) {
      if (id !== this.#current.id) {
        k.fill(0);
        this.#keys.delete(id);
      }
    }
  }

  seal(plaintext: Buffer | string, context = ''): string {
    const dataKey = randomBytes(KEY);
    const aad = Buffer.from(context, 'utf8');
    const wrapIv = randomBytes(IV);
    const w = createCipheriv('aes-256-gcm', this.#current.key, wrapIv);
    w.setAAD(aad);
    const wrapped = Buffer.concat([w.update(dataKey), w.final()]);
    const iv = randomBytes(IV);
    const c = createCipheriv('aes-256-gcm', dataKey, iv);
    c.setAAD(aad);
    const body = Buffer.concat([
      c.update(typeof plaintext === 'string' ? Buffer.from(plaintext, 'utf8') : plaintext),
      c.final(),
    ]);
    dataKey.fill(0);
    const head = Buffer.concat([Buffer.from([V2]), Buffer.from(this.#current.id, 'hex')]);
    return Buffer.concat([head, wrapIv, w.getAuthTag(), wrapped, iv, c.getAuthTag(), body]).toString('base64');
  }

  /** The id of the master key a sealed value names; undefined for version 1 (which names none). */
  sealedKeyId(sealed: string): string | undefined {
    const buf = Buffer.from(sealed.slice(0, 16), 'base64');
    return buf[0] === V2 && buf.length > KEY_ID ? buf.subarray(1, 1 + KEY_ID).toString('hex') : undefined;
  }

  open(sealed: string, context = ''): Buffer {
    const buf = Buffer.from(sealed, 'base64');
    const version = buf[0];
    const head = version === V2 ? 1 + KEY_ID : 1;
    if ((version !== V1 && version !== V2) || buf.length < head + IV + TAG + KEY + IV + TAG) {
      throw new DomainError('invalid', 'sealed secret is malformed');
    }
    let candidates: Buffer[];
    if (version === V2) {
      const id = buf.subarray(1, 1 + KEY_ID).toString('hex');
      const key = this.#keys.get(id);
      if (!key) {
        throw new DomainError(
          'invalid',
          `sealed secret was sealed under master key ${id}, which this server does not have (its key is ` +
            `${this.#current.id})`,
        );
      }
      candidates = [key];
    } else {
      candidates = this.keyIds.map((id) => this.#keys.get(id) as Buffer);
    }
    let last: unknown;
    for (const key of candidates) {
      try {
        return openWith(key, buf.subarray(head), context);
      } catch (err) {
        last = err;
      }
    }
    throw new DomainError('invalid', 'sealed secret cannot be decrypted with this master key', { cause: last });
  }

  openString(sealed: string, context = ''): string {
    return this.open(sealed, context).toString('utf8');
  }
}

function openWith(master: Buffer, buf: Buffer, context: string): Buffer {
  const aad = Buffer.from(context, 'utf8');
  let o = 0;
  const take = (n: number) => buf.subarray(o, (o += n));
  const wrapIv = take(IV);
  const wrapTag = take(TAG);
  const wrapped = take(KEY);
  const iv = take(IV);
  const tag = take(TAG);
  const body = buf.subarray(o);
  const w = createDecipheriv('aes-256-gcm', master, wrapIv);
  w.setAAD(aad);
  w.setAuthTag(wrapTag);
  const dataKey = Buffer.concat([w.update(wrapped), w.final()]);
  const d = createDecipheriv('aes-256-gcm', dataKey, iv);
  d.setAAD(aad);
  d.setAuthTag(tag);
  const out = Buffer.concat([d.update(body), d.final()]);
  dataKey.fill(0);
  return out;
}
