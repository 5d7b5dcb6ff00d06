/**
 * Where ACME nonces are made and used up (RFC 8555 section 6.5). Nonces are
 * self-authenticating (an HMAC over random bytes and an expiry), so whether this server
 * made one needs no lookup; what needs state is single use. Two stores
 * (docs/decisions/0045-acme-work-per-order.md):
 *
 * - `SharedNonces`, for nodes sharing a database (PostgreSQL): the key is the mount's,
 *   sealed in its settings, and a used nonce is a row of `pki_acme_nonces` (concurrent
 *   requests record theirs in one transaction), so every node refuses a nonce used on any.
 * - `ProcessNonces`, for the one server a SQLite file allows: the key is made at start and
 *   never stored, nonces are numbered, and used numbers are bits of a window in memory. No
 *   database write per request; nonces handed out before a restart are refused as
 *   badNonce, and clients retry with the fresh nonce of that answer.
 */
import { createHmac, randomBytes } from 'node:crypto';
import type { SecretBox } from '../../secrets/secret-box.js';
import type { BatchQueue } from '../../shared/batch-queue.js';
import type { MountConfigService } from '../config/mount-config-service.js';
import { mintNonce, readNonce } from './acme-jws.js';
import type { AcmeRepo } from './acme-repo.js';

/** A nonce this server made (its MAC holds). */
export interface CheckedNonce {
  nonce: string;
  expiresAt: Date;
  seq: number;
}

export interface NonceStore {
  /** A fresh nonce of the mount, valid until `expiresAt`. */
  mint(mountId: string, expiresAt: Date): Promise<string>;
  /** A nonce this server made for the mount; undefined when it did not. */
  check(mountId: string, nonce: string): Promise<CheckedNonce | undefined>;
  /** Uses a checked, unexpired nonce up: false when it was used before (or is too old to tell). */
  use(n: CheckedNonce): Promise<boolean>;
  forgetMount(mountId: string): void;
  close(): Promise<void>;
}

const NONCE_KEY_CONTEXT = (mountId: string) => `pki-acme-nonce-key:${mountId}`;

interface PendingNonce {
  nonce: string;
  expiresAt: Date;
  resolve(fresh: boolean): void;
  reject(err: unknown): void;
}

/** Nonces every node sharing the database accepts once (a used nonce is a row). */
export class SharedNonces implements NonceStore {
  readonly #keys = new Map<string, Promise<Buffer>>();
  /** Used nonces are recorded in batches: concurrent requests share one transaction. */
  readonly #batches: BatchQueue<PendingNonce>;

  constructor(private readonly deps: { repo: AcmeRepo; secrets: SecretBox; mountConfig: MountConfigService }) {
    this.#batches = deps.repo.units.batches<PendingNonce>((batch) => this.#record(batch), { maxBatch: 1000 });
  }

  /** The mount's key, made by whichever node needs it first and shared through the database. */
  #key(mountId: string): Promise<Buffer> {
    let p = this.#keys.get(mountId);
    if (!p) {
      p = (async () => {
        const { secrets, mountConfig } = this.deps;
        const sealed = secrets.seal(randomBytes(32), NONCE_KEY_CONTEXT(mountId));
        await mountConfig.putSetting(mountId, 'acme_nonce_key', sealed, { onlyIfAbsent: true });
        const stored = (await mountConfig.getSetting(mountId, 'acme_nonce_key')) as string;
        return secrets.open(stored, NONCE_KEY_CONTEXT(mountId));
      })();
      this.#keys.set(mountId, p);
      p.catch(() => this.#keys.delete(mountId));
    }
    return p;
  }

  async mint(mountId: string, expiresAt: Date): Promise<string> {
    return mintNonce(await this.#key(mountId), expiresAt);
  }

  async check(mountId: string, nonce: string): Promise<CheckedNonce | undefined> {
    const facts = readNonce(await this.#key(mountId), nonce);
    return facts && { nonce, ...facts };
  }

  use(n: CheckedNonce): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) =>
      this.#batches.push({ nonce: n.nonce, expiresAt: n.expiresAt, resolve, reject }),
    );
  }

  async #record(batch: PendingNonce[]): Promise<void> {
    const repo = this.deps.repo;
    try {
      const fresh = await repo.transaction(async (tx) => {
        const out: boolean[] = [];
        for (const p of batch) out.push(await repo.useNonce(tx, p.nonce, p.expiresAt));
        return out;
      });
      batch.forEach((p, i) => p.resolve(fresh[i]!));
    } catch (err) {
      for (const p of batch) p.reject(err);
    }
  }

  forgetMount(mountId: string): void {
    this.#keys.delete(mountId);
  }

  async close(): Promise<void> {
    await this.#batches.drain();
  }
}

/** How many of the latest nonces a `ProcessNonces` can tell used from unused (128 KiB of bits). */
const WINDOW = 1 << 20;

/** Nonces of the only server on its database, kept in memory. */
export class ProcessNonces implements NonceStore {
  readonly #secret = randomBytes(32);
  readonly #keys = new Map<string, Buffer>();
  /** Bit `seq % WINDOW` is set once nonce number `seq` is used. */
  readonly #used = new Uint8Array(WINDOW / 8);
  /** The last number handed out. */
  #seq = 0;

  #key(mountId: string): Buffer {
    let k = this.#keys.get(mountId);
    if (!k) {
      k = createHmac('sha256', this.#secret).update(mountId).digest();
      this.#keys.set(mountId, k);
    }
    return k;
  }

  async mint(mountId: string, expiresAt: Date): Promise<string> {
    const seq = ++this.#seq;
    // The slot last held the number WINDOW before this one, which is now out of the window.
    this.#used[(seq % WINDOW) >> 3]! &= ~(1 << (seq & 7));
    return mintNonce(this.#key(mountId), expiresAt, seq);
  }

  async check(mountId: string, nonce: string): Promise<CheckedNonce | undefined> {
    const facts = readNonce(this.#key(mountId), nonce);
    return facts && { nonce, ...facts };
  }

  async use({ seq }: CheckedNonce): Promise<boolean> {
    if (seq > this.#seq || seq <= this.#seq - WINDOW) return false;
    const i = (seq % WINDOW) >> 3;
    const bit = 1 << (seq & 7);
    if (this.#used[i]! & bit) return false;
    this.#used[i]! |= bit;
    return true;
  }

  forgetMount(mountId: string): void {
    this.#keys.delete(mountId);
  }

  async close(): Promise<void> {}
}
