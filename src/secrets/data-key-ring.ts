import { randomBytes } from 'node:crypto';
import type { Clock } from '../shared/clock.js';
import { undecryptable } from './content-cipher.js';
import type { DataKey } from './content-cipher.js';
import type { DataKeyRepo } from './data-key-repo.js';
import type { SecretBox } from './secret-box.js';

/** The SecretBox context of a data key: a sealed key cannot be moved to another row. */
export const dataKeyContext = (id: string) => `data-key:${id}`;

/**
 * Records a data key seals at most before the ring makes a new one: records sealed whole
 * (format 2, secrets/content-cipher.ts) take a random 96-bit nonce under the key, which
 * stays safe up to 2^32 records per key.
 */
export const DATA_KEY_USES = 2 ** 31;

/**
 * The data keys of stored content. Each server start makes one new data key (random,
 * sealed by the master key into `data_keys`) and seals what it writes with it; content
 * names its key by id, and keys of other starts or other nodes are unsealed on first use
 * and kept in memory. Rotating the master key re-seals the rows, never the content. After
 * DATA_KEY_USES uses of its key the ring makes another, as a new start would.
 */
export class DataKeyRing {
  #current: DataKey | undefined;
  readonly #opened = new Map<string, Promise<Buffer>>();
  #uses = 0;
  #renewing = false;

  constructor(private readonly deps: { repo: DataKeyRepo; secrets: SecretBox; clock: Clock; maxUses?: number }) {}

  /** Makes this process's data key. */
  async init(): Promise<void> {
    const id = randomBytes(16);
    const key = randomBytes(32);
    const hex = id.toString('hex');
    await this.deps.repo.insert(hex, this.deps.secrets.seal(key, dataKeyContext(hex)), this.deps.clock.now());
    this.#opened.set(hex, Promise.resolve(key));
    this.#current = { id, key };
    this.#uses = 0;
  }

  /** The key new content is sealed with (each call counts as a use). */
  current(): DataKey {
    if (!this.#current) throw new Error('data key ring not initialised');
    if (++this.#uses >= (this.deps.maxUses ?? DATA_KEY_USES) && !this.#renewing) {
      // The current key serves until the new one is stored; a failure is tried again on a later use.
      this.#renewing = true;
      this.init().then(
        () => (this.#renewing = false),
        () => (this.#renewing = false),
      );
    }
    return this.#current;
  }

  /** The data key named by a stored header (a DataKeyLookup). */
  readonly lookup = (id: Buffer): Promise<Buffer> => {
    const hex = id.toString('hex');
    let p = this.#opened.get(hex);
    if (!p) {
      p = this.#open(hex);
      this.#opened.set(hex, p);
      // A failure is not cached: the next reader tries again (another node may be mid-rotation).
      p.catch(() => this.#opened.delete(hex));
    }
    return p;
  };

  async #open(hex: string): Promise<Buffer> {
    const sealed = await this.deps.repo.sealed(hex);
    if (sealed === undefined) throw undecryptable(`data key ${hex} is not in the database`);
    try {
      return this.deps.secrets.open(sealed, dataKeyContext(hex));
    } catch (err) {
      throw undecryptable(`data key ${hex} does not open with this master key`, err);
    }
  }
}
