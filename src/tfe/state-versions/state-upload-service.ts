import type { BlobStore } from '../../blob/blob-store.js';
import type { JobQueue } from '../../jobs/job-queue.js';
import type { Clock } from '../../shared/clock.js';
import { DomainError, conflict, invalid, notFound } from '../../shared/errors.js';
import { hashToken } from '../../shared/ids.js';
import type { Actor } from '../identity/actor.js';
import type { BlobInfo } from '../../blob/blob-store.js';
import type { UploadAdmission } from '../../blob/upload-admission.js';
import { digestStream, openStateContent, storeCheckedUpload } from './state-content.js';
import type { Executor } from './state-version-repo.js';
import type { StateRepos } from './state-repos.js';
import { extractionJob } from './extraction-backfill.js';
import { inspectInWorker } from './extract-worker.js';
import { checkJsonStream, inspectStateStream } from './state-file.js';
import { BlobCollectedError, STATE_BLOB_GC_JOB } from './state-version-service.js';
import type { StateVersionService } from './state-version-service.js';
import { acceptStateContent, assertBackingDataNotDeleted } from './state-version.js';
import type { StateContentRules, StateVersion } from './state-version.js';

export interface StateUploadServiceDeps {
  repos: StateRepos;
  versions: StateVersionService;
  blobs: BlobStore;
  jobs: JobQueue;
  clock: Clock;
  settings: StateContentRules & { maxUploadSize: number };
  /** Refuses uploads below the free-space floor or past the concurrent-upload limit. */
  admission?: UploadAdmission;
}

/** Uploads of at least this many bytes are checked in a worker thread (starting one takes a few ms). */
const INSPECT_IN_WORKER_FROM = 4 * 1024 * 1024;

export interface UploadResult {
  stateVersionId: string;
  target: 'state' | 'json';
  /** False when an identical upload had already been accepted (a client retry). */
  stored: boolean;
}

export interface Download {
  size: number | null;
  body: AsyncIterable<Buffer>;
}

/**
 * Content of state versions: the one-time upload URLs (the URL is the credential, as in
 * HCP Terraform's blob storage) and downloads. Upload bodies stream into the blob store
 * while the whole document is checked in the same pass (a raw state like an inline one,
 * a JSON state as JSON); the raw state's MD5 is compared with the create request.
 * Refused content is handed to the collector and the version stays pending, its URL
 * still usable, as after any other failed upload.
 */
export class StateUploadService {
  constructor(private readonly deps: StateUploadServiceDeps) {}

  /**
   * PUT to an upload URL. `token` is the secret in the URL; `declaredSize` the body's
   * Content-Length, when the client sent one.
   */
  async upload(token: string, body: AsyncIterable<Buffer>, declaredSize?: number): Promise<UploadResult> {
    const found = await this.deps.repos.versions.findByUploadTokenHash(this.deps.repos.versions.db, hashToken(token));
    if (!found) throw notFound('upload URL not found');
    const { version: v, target } = found;
    if (v.uploadExpiresAt === null || v.uploadExpiresAt.getTime() <= this.deps.clock.now().getTime()) {
      throw notFound('upload URL has expired');
    }
    const max = this.deps.settings.maxUploadSize;
    if (target === 'state' && v.status !== 'pending') return this.repeated(v, target, body, max);
    if (target === 'json' && v.jsonSha256 !== null) return this.repeated(v, target, body, max);
    // Refused before a byte is stored: the version stays pending and the URL usable.
    const admission = this.deps.admission;
    if (admission)
      return admission.run(body, declaredSize, (admitted) => this.store(v, target, admitted, declaredSize));
    return this.store(v, target, body, declaredSize);
  }

  private async store(
    v: StateVersion,
    target: 'state' | 'json',
    body: AsyncIterable<Buffer>,
    declaredSize: number | undefined,
  ): Promise<UploadResult> {
    const max = this.deps.settings.maxUploadSize;

    if (target === 'json') {
      const { blob, checked: error } = await storeCheckedUpload(this.deps.blobs, body, max, (chunks) =>
        checkJsonStream(chunks, 'JSON state'),
      );
      await this.refuseUnless(blob, () => {
        if (error !== null) throw invalid(error, '/data/attributes/json-state');
      });
      return this.inTransaction(blob.sha256, async (trx) => {
        await this.deps.versions.useBlobs(trx, [blob], false);
        if (!(await this.deps.repos.versions.setJsonState(trx, v.id, blob.sha256)))
          throw conflict('JSON state was already uploaded for this state version');
        return { stateVersionId: v.id, target, stored: true };
      });
    }

    // Large states are checked on another core so that checking does not slow the upload down.
    const inspect =
      declaredSize !== undefined && declaredSize >= INSPECT_IN_WORKER_FROM ? inspectInWorker : inspectStateStream;
    const { blob, checked: inspection } = await storeCheckedUpload(this.deps.blobs, body, max, inspect);
    const accepted = await this.refuseUnless(blob, () => {
      if (blob.md5 !== v.md5)
        throw invalid(
          `the MD5 of the uploaded state (${blob.md5}) does not match the md5 given at creation (${v.md5})`,
          '/data/attributes/md5',
        );
      return acceptStateContent(inspection, { serial: v.serial, md5: v.md5, lineage: v.lineage }, this.deps.settings);
    });
    return this.inTransaction(blob.sha256, async (trx) => {
      // Finalized, the version becomes current (the newest finalized version is the current one).
      // The head row is taken first, as creates take it: a create that discards this version
      // either commits before (then the finalize below finds it discarded and all is undone) or
      // waits until this commit and then supersedes a finalized, current version.
      await this.deps.repos.versions.setCurrent(trx, v.workspaceId, v.id);
      await this.deps.versions.useBlobs(trx, [blob], false);
      const ok = await this.deps.repos.versions.finalizeUpload(trx, v.id, {
        sha256: blob.sha256,
        size: blob.size,
        stateFormatVersion: accepted.formatVersion ?? 0,
        terraformVersion: accepted.terraformVersion,
      });
      if (!ok) throw conflict('this state version no longer accepts uploads (it was discarded or already uploaded)');
      await this.deps.jobs.enqueue(trx, extractionJob(v.id));
      return { stateVersionId: v.id, target, stored: true };
    });
  }

  /** Raw state (or JSON state) of a version the actor may read. */
  async download(actor: Actor, id: string, target: 'state' | 'json'): Promise<Download> {
    const v = await this.deps.versions.get(actor, id);
    assertBackingDataNotDeleted(v);
    const sha = target === 'state' ? v.stateSha256 : v.jsonSha256;
    if (sha === null)
      throw notFound(
        target === 'state'
          ? `state version ${id} has no state content (status ${v.status})`
          : `state version ${id} has no JSON state`,
      );
    const stat = target === 'state' ? v.size : null;
    return { size: stat, body: await openStateContent(this.deps.repos.blobs, this.deps.blobs, sha) };
  }

  /**
   * A second PUT to a used URL: a retry of the same content succeeds without storing
   * anything (clients retry after lost responses); other content is a conflict.
   */
  private async repeated(
    v: StateVersion,
    target: 'state' | 'json',
    body: AsyncIterable<Buffer>,
    max: number,
  ): Promise<UploadResult> {
    const d = await digestStream(body, max);
    if (target === 'state') {
      if (v.status === 'discarded')
        throw conflict('this state version was discarded: a newer state version was created before the upload');
      if (v.md5 === d.md5 && v.stateSha256 !== null) return { stateVersionId: v.id, target, stored: false };
      throw conflict('state content was already uploaded for this state version');
    }
    if (v.jsonSha256 === d.sha256) return { stateVersionId: v.id, target, stored: false };
    throw conflict('JSON state was already uploaded for this state version');
  }

  /** Runs the checks of stored content; content they refuse is handed to the collector. */
  private async refuseUnless<T>(blob: BlobInfo, checks: () => T): Promise<T> {
    try {
      return checks();
    } catch (err) {
      await this.forget(blob.sha256, blob.size);
      throw err;
    }
  }

  /** Content that will not be referenced: hand it to the collector. */
  private async forget(sha256: string, size: number): Promise<void> {
    await this.deps.repos.units.readWrite(async (trx) => {
      await this.deps.repos.blobs.touchBlob(trx, sha256, size, this.deps.clock.now());
      await this.deps.jobs.enqueue(trx, { kind: STATE_BLOB_GC_JOB, dedupeKey: STATE_BLOB_GC_JOB });
    });
  }

  /**
   * Streamed bodies cannot be stored a second time, so when the collector removed the
   * same content meanwhile the client is asked to retry (go-tfe retries 5xx uploads).
   */
  private async inTransaction<T>(sha256: string, fn: (trx: Executor) => Promise<T>): Promise<T> {
    try {
      return await this.deps.repos.commits.readWrite(fn);
    } catch (err) {
      if (err instanceof BlobCollectedError) {
        throw new DomainError(
          'unavailable',
          `stored content ${sha256.slice(0, 12)}… was being removed; retry the upload`,
        );
      }
      throw err;
    }
  }
}
