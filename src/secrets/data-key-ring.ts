import { randomBytes } from 'node:crypto';
import type { Clock } from '../shared/clock.js';
import { undecryptable } from './content-cipher.js';
import type { DataKey } from './content-cipher.js';
import type { DataKeyRepo } from './data-key-repo.js';
import type { SecretBox } from './secret-box.js';

/** The SecretBox context of a data key: a sealed key cannot be moved to another row. */
export const dataKeyContext = (id: string) => `data-key:${id}`;

/**
 * The data keys of stored content. Each server start makes one new data key (random,
 * sealed by the master key into `data_keys`) and seals what it writes with it; content
 * names its key by id, and keys of other starts or other nodes are unsealed on first use
 * and kept in memory. Rotating the master key re-seals the rows, never the content.
 */
export class DataKeyRing {
  #current: DataKey | undefined;
  readonly #opened = new Map<string, Promise<Buffer>>();

  constructor(private readonly deps: { repo: DataKeyRepo; secrets: SecretBox; clock: Clock }) {}

  /** Makes this process's data key. */
  async init(): Promise<void> {
    const id = randomBytes(16);
    const key = randomBytes(32);
    const hex = id.toString('hex');
    await this.deps.repo.insert(hex, this.deps.secrets.seal(key, dataKeyContext(hex)), this.deps.clock.now());
    this.#opened.set(hex, Promise.resolve(key));
    this.#current = { id, key };
  }

  /** The key new content is sealed with. */
  current(): DataKey {
    if (!this.#current) throw new Error('data key ring not initialised');
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
