import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { DomainError } from '../shared/errors.js';

const VERSION = 1;
const IV = 12;
const TAG = 16;
const KEY = 32;

/**
 * Envelope encryption for secrets at rest (CA private keys and every other secret the
 * services keep). Each value gets its own random data key; the data key is wrapped with
 * the master key. Both layers are AES-256-GCM. The optional context (for example
 * `pki-key:<id>`) is bound as associated data, so a ciphertext cannot be moved to
 * another record.
 *
 * Layout (base64): version(1) | wrapIv(12) | wrapTag(16) | wrappedKey(32) | iv(12) | tag(16) | ciphertext
 */
export class SecretBox {
  readonly #master: Buffer;

  constructor(masterKey: Buffer) {
    if (masterKey.length !== KEY) throw new Error('master key must be 32 bytes');
    this.#master = Buffer.from(masterKey);
  }

  seal(plaintext: Buffer | string, context = ''): string {
    const dataKey = randomBytes(KEY);
    const aad = Buffer.from(context, 'utf8');
    const wrapIv = randomBytes(IV);
    const w = createCipheriv('aes-256-gcm', this.#master, wrapIv);
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
    return Buffer.concat([Buffer.from([VERSION]), wrapIv, w.getAuthTag(), wrapped, iv, c.getAuthTag(), body]).toString(
      'base64',
    );
  }

  open(sealed: string, context = ''): Buffer {
    const buf = Buffer.from(sealed, 'base64');
    if (buf.length < 1 + IV + TAG + KEY + IV + TAG || buf[0] !== VERSION) {
      throw new DomainError('invalid', 'sealed secret is malformed');
    }
    const aad = Buffer.from(context, 'utf8');
    let o = 1;
    const take = (n: number) => buf.subarray(o, (o += n));
    const wrapIv = take(IV);
    const wrapTag = take(TAG);
    const wrapped = take(KEY);
    const iv = take(IV);
    const tag = take(TAG);
    const body = buf.subarray(o);
    try {
      const w = createDecipheriv('aes-256-gcm', this.#master, wrapIv);
      w.setAAD(aad);
      w.setAuthTag(wrapTag);
      const dataKey = Buffer.concat([w.update(wrapped), w.final()]);
      const d = createDecipheriv('aes-256-gcm', dataKey, iv);
      d.setAAD(aad);
      d.setAuthTag(tag);
      const out = Buffer.concat([d.update(body), d.final()]);
      dataKey.fill(0);
      return out;
    } catch (err) {
      throw new DomainError('invalid', 'sealed secret cannot be decrypted with this master key', { cause: err });
    }
  }

  openString(sealed: string, context = ''): string {
    return this.open(sealed, context).toString('utf8');
  }
}
