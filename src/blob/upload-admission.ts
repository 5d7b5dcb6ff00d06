import { statfs } from 'node:fs/promises';
import { Gauge } from 'prom-client';
import type { Registry } from 'prom-client';
import { DomainError } from '../shared/errors.js';

export interface UploadAdmissionSettings {
  /** The directory whose file system holds the blobs (the data directory). */
  dir: string;
  /** Uploads are refused while the file system has less than this many bytes free. */
  minFreeBytes: number;
  /** Uploads streaming at once on this server; 0 means no limit. */
  maxConcurrent: number;
}

/** What /readyz and /metrics show of the data directory's space. */
export interface StorageStatus {
  freeBytes: number;
  minFreeBytes: number;
  uploadsInProgress: number;
  maxConcurrentUploads: number;
  acceptingUploads: boolean;
}

/** Free space is looked at again after this many bytes of one upload. */
const RECHECK_EVERY = 8 * 1024 * 1024;

/**
 * Admits uploads of state content: refuses them (507) while the data directory's file system
 * is below its free-space floor, also in the middle of a body without Content-Length, and
 * refuses (429) those past the number allowed to stream at once. Nothing is written before
 * admission, so a refused upload leaves its version pending with its URL usable.
 */
export class UploadAdmission {
  #inProgress = 0;

  constructor(private readonly settings: UploadAdmissionSettings) {}

  /** Bytes free to an unprivileged writer on the data directory's file system. */
  async freeBytes(): Promise<number> {
    const s = await statfs(this.settings.dir);
    return s.bavail * s.bsize;
  }

  async status(): Promise<StorageStatus> {
    const freeBytes = await this.freeBytes();
    return {
      freeBytes,
      minFreeBytes: this.settings.minFreeBytes,
      uploadsInProgress: this.#inProgress,
      maxConcurrentUploads: this.settings.maxConcurrent,
      acceptingUploads: freeBytes >= this.settings.minFreeBytes,
    };
  }

  /**
   * Runs `store` with the body once the upload is admitted; the body it is handed throws
   * `insufficient_storage` when free space falls below the floor while it streams.
   */
  async run<T>(
    body: AsyncIterable<Buffer>,
    declaredSize: number | undefined,
    store: (body: AsyncIterable<Buffer>) => Promise<T>,
  ): Promise<T> {
    const max = this.settings.maxConcurrent;
    if (max > 0 && this.#inProgress >= max)
      throw new DomainError(
        'too_many_requests',
        `this server already receives ${max} uploads at once (max_concurrent_uploads); retry the upload shortly`,
      );
    this.#inProgress++;
    try {
      await this.checkSpace(declaredSize ?? 0);
      return await store(this.watched(body));
    } finally {
      this.#inProgress--;
    }
  }

  private async checkSpace(needed: number): Promise<void> {
    const free = await this.freeBytes();
    const floor = this.settings.minFreeBytes;
    if (free - needed < floor)
      throw new DomainError(
        'insufficient_storage',
        `not enough free space in the data directory to accept uploads: ${formatBytes(free)} free` +
          `${needed > 0 ? ` for ${formatBytes(needed)}` : ''}, and at least ${formatBytes(floor)} must stay free ` +
          '(min_free_space); the state version stays pending and its upload URL usable until space is freed',
      );
  }

  private async *watched(body: AsyncIterable<Buffer>): AsyncIterable<Buffer> {
    let sinceCheck = 0;
    for await (const chunk of body) {
      sinceCheck += chunk.length;
      if (sinceCheck >= RECHECK_EVERY) {
        sinceCheck = 0;
        await this.checkSpace(0);
      }
      yield chunk;
    }
  }

  /** Gauges of the data directory's space and the uploads in progress, read at scrape time. */
  registerMetrics(registry: Registry, onScrape: (hook: () => Promise<void>) => void): void {
    const free = new Gauge({
      name: 'strongroom_data_dir_free_bytes',
      aggregator: 'max',
      help: "Bytes free on the data directory's file system.",
      registers: [registry],
    });
    const floor = new Gauge({
      name: 'strongroom_data_dir_min_free_bytes',
      aggregator: 'max',
      help: 'The free-space floor (min_free_space) below which uploads are refused with 507.',
      registers: [registry],
    });
    const accepting = new Gauge({
      name: 'strongroom_uploads_accepted',
      aggregator: 'max',
      help: '1 while uploads are accepted, 0 while free space is below min_free_space.',
      registers: [registry],
    });
    const inProgress = new Gauge({
      name: 'strongroom_uploads_in_progress',
      help: 'State uploads streaming on this server now (max_concurrent_uploads bounds them).',
      registers: [registry],
    });
    onScrape(async () => {
      const s = await this.status();
      free.set(s.freeBytes);
      floor.set(s.minFreeBytes);
      accepting.set(s.acceptingUploads ? 1 : 0);
      inProgress.set(s.uploadsInProgress);
    });
  }
}

function formatBytes(n: number): string {
  if (n >= 1024 ** 3) return `${(n / 1024 ** 3).toFixed(1)} GiB`;
  if (n >= 1024 ** 2) return `${(n / 1024 ** 2).toFixed(1)} MiB`;
  return `${n} bytes`;
}
