import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import { replaceSealed, SEALED_COLUMNS, sealedValues } from '../db/sealed-columns.js';
import type { Database } from '../db/schema.js';
import type { JobQueue } from '../jobs/job-queue.js';
import type { Clock } from '../shared/clock.js';
import { DomainError } from '../shared/errors.js';
import type { PeerChanges } from '../shared/peer-changes.js';
import { readMasterKeyFileSync, writeMasterKeyFile } from './master-key.js';
import type { MasterKeyRotationRepo, RotationProgress } from './master-key-rotation-repo.js';
import { masterKeyId } from './secret-box.js';
import type { SecretBox } from './secret-box.js';

export const ROTATE_MASTER_KEY_JOB = 'core.rotate-master-key';
const BATCH = 100;
const RUN_MS = 5000;

/** What `sys/key-status` and the CLI show. */
export interface RotationStatus {
  keyId: string;
  /** Ids of the keys that open values on this node, the current one first. */
  keyIds: string[];
  keySource: 'file' | 'environment';
  rotation: RotationProgress | undefined;
}

export interface MasterKeyRotationDeps {
  repo: MasterKeyRotationRepo;
  db: Kysely<Database>;
  jobs: JobQueue;
  secrets: SecretBox;
  clock: Clock;
  logger: Logger;
  /** The key file (`<data_dir>/master.key`) when the key is not from STRONGROOM_MASTER_KEY. */
  keyFile: string | undefined;
  /** The other workers of this machine: a rotation here is reported, and one reported there is taken from the file. */
  peers?: PeerChanges;
  /** Values per query and the length of one run (tests make them small). */
  batch?: number;
  runMs?: number;
}

/**
 * Master key rotation without downtime. Every sealed value names the master key that
 * sealed it (SecretBox version 2). A rotation makes a new key current, so new values are
 * sealed with it while the old key still opens the rest; a durable job then re-seals
 * every value of every column in SEALED_COLUMNS (db/sealed-columns.ts) under the new key,
 * each replacement conditional on the old text still being there. Where it stands is a
 * settings row saved after each batch: after a crash, the job (re-enqueued at start)
 * goes on from the last batch. A pass that still finds a value under another key (sealed
 * meanwhile by a node not yet on the new key) is followed by another; when a whole pass
 * finds none, the old key opens nothing and is dropped: from the key file, or (the key
 * given in the environment) the log says to remove STRONGROOM_OTHER_MASTER_KEYS.
 *
 * State content itself is never re-encrypted: it is sealed under data keys, and the data
 * keys (table data_keys) are among the sealed values re-sealed here.
 */
export class MasterKeyRotation {
  constructor(private readonly deps: MasterKeyRotationDeps) {}

  async status(): Promise<RotationStatus> {
    return {
      keyId: this.deps.secrets.keyId,
      keyIds: this.deps.secrets.keyIds,
      keySource: this.deps.keyFile ? 'file' : 'environment',
      rotation: await this.deps.repo.get(),
    };
  }

  /**
   * Starts a rotation. With the key in the data directory a new key is made, written to
   * the key file ahead of the old one, and made current; with the key from the
   * environment, the values are re-sealed under the current key (the operator has
   * already made the new key current on every node, see docs/operations.md).
   */
  async start(): Promise<RotationStatus> {
    const s = this.deps.secrets;
    if (this.deps.keyFile) {
      const key = randomBytes(32);
      // The file first (the new key ahead of the ones that still open values), then memory:
      // a crash in between leaves a file that the next start reads and finishes from.
      await writeMasterKeyFile(this.deps.keyFile, [key, ...s.exportKeys()]);
      s.rotateTo(key);
      // The other workers read the file again before the rotation is answered (decision 0056).
      this.deps.peers?.changed();
      this.deps.logger.info({ keyId: s.keyId }, 'master key rotation: a new master key is current; re-sealing');
    } else {
      this.deps.logger.info({ keyId: s.keyId }, 'master key rotation: re-sealing every value under the current key');
    }
    await this.#begin();
    return this.status();
  }

  /**
   * With the key in the data directory, takes the file's current key when another worker of
   * this machine rotated it (called when a worker reports a change, and before a job run).
   */
  adoptKeyFile(): void {
    if (!this.deps.keyFile) return;
    try {
      const keys = readMasterKeyFileSync(this.deps.keyFile);
      if (keys[0] && masterKeyId(keys[0]) !== this.deps.secrets.keyId) {
        this.deps.secrets.adopt(keys);
        this.deps.logger.info({ keyId: this.deps.secrets.keyId }, 'took the master key another worker made current');
      }
    } catch (err) {
      this.deps.logger.warn({ err: (err as Error).message }, 'could not read the master key file again');
    }
  }

  /** At every start: goes on with a rotation a crash interrupted. */
  async resume(): Promise<void> {
    const p = await this.deps.repo.get();
    if (p?.state === 'running') {
      await this.#enqueue();
      return;
    }
    // The key file names several keys but no rotation is recorded: the crash came between
    // writing the file and recording the rotation.
    if (this.deps.keyFile && this.deps.secrets.keyIds.length > 1) await this.#begin();
  }

  /** One run of the job. */
  async run(signal?: AbortSignal): Promise<void> {
    let p = await this.deps.repo.get();
    if (!p || p.state !== 'running') return;
    if (p.keyId !== this.deps.secrets.keyId) this.adoptKeyFile();
    if (p.keyId !== this.deps.secrets.keyId) {
      // Another node asked for the rotation and seals with that key; this one does not yet.
      throw new DomainError(
        'unavailable',
        `this node seals with master key ${this.deps.secrets.keyId}, the rotation is to ${p.keyId}`,
      );
    }
    const until = performance.now() + (this.deps.runMs ?? RUN_MS);
    do {
      p = await this.#step(p);
      if (p.column >= SEALED_COLUMNS.length) {
        // End of a pass: done when no value names another key (a node not yet on the new
        // key may have sealed some meanwhile), otherwise another pass.
        if (await this.#allCurrent()) {
          await this.#finish(p);
          return;
        }
        p = { ...p, column: 0, after: '', passes: p.passes + 1 };
      }
      await this.deps.repo.save(p);
    } while (performance.now() < until && !signal?.aborted);
    this.deps.logger.info(
      { column: SEALED_COLUMNS[p.column]?.name, resealed: p.resealed, passes: p.passes },
      'master key rotation: in progress',
    );
    await this.#enqueue();
  }

  async #begin(): Promise<void> {
    await this.deps.repo.save({
      state: 'running',
      keyId: this.deps.secrets.keyId,
      column: 0,
      after: '',
      resealed: 0,
      passes: 0,
      startedAt: this.deps.clock.now().toISOString(),
    });
    await this.#enqueue();
  }

  async #enqueue(): Promise<void> {
    await this.deps.jobs.enqueue(this.deps.db, { kind: ROTATE_MASTER_KEY_JOB, dedupeKey: ROTATE_MASTER_KEY_JOB });
  }

  async #step(p: RotationProgress): Promise<RotationProgress> {
    const c = SEALED_COLUMNS[p.column];
    if (!c) return p;
    const batch = this.deps.batch ?? BATCH;
    const values = await sealedValues(this.deps.db, c, p.after, batch);
    const s = this.deps.secrets;
    let resealed = 0;
    for (const v of values) {
      if (s.sealedKeyId(v.sealed) === s.keyId) continue;
      const fresh = s.seal(s.open(v.sealed, v.context), v.context);
      if (await replaceSealed(this.deps.db, c, v, fresh)) resealed++;
    }
    const next =
      values.length === batch
        ? { ...p, after: values[values.length - 1]?.key as string }
        : { ...p, column: p.column + 1, after: '' };
    return { ...next, resealed: p.resealed + resealed };
  }

  /** Whether every sealed value names the current key (a full scan). */
  async #allCurrent(): Promise<boolean> {
    const s = this.deps.secrets;
    for (const c of SEALED_COLUMNS) {
      for (let after = ''; ;) {
        const values = await sealedValues(this.deps.db, c, after, 500);
        if (values.some((v) => s.sealedKeyId(v.sealed) !== s.keyId)) return false;
        if (values.length < 500) break;
        after = values[values.length - 1]?.key as string;
      }
    }
    return true;
  }

  async #finish(p: RotationProgress): Promise<void> {
    const s = this.deps.secrets;
    // The old key goes first, the record of the end last: a crash in between leaves a
    // running rotation, which the next start finishes at once (every value is current).
    if (this.deps.keyFile) {
      await writeMasterKeyFile(this.deps.keyFile, [s.currentKey()]);
      s.forgetOthers();
    }
    await this.deps.repo.save({ ...p, state: 'done', finishedAt: this.deps.clock.now().toISOString() });
    this.deps.logger.info(
      { keyId: s.keyId, resealed: p.resealed },
      this.deps.keyFile
        ? 'master key rotation finished: every value is sealed under the new key; the old key is gone from the key file'
        : 'master key rotation finished: every value is sealed under the current key; remove the old key from ' +
            'STRONGROOM_OTHER_MASTER_KEYS on every node',
    );
  }
}
