import type { BlobStore } from '../../blob/blob-store.js';
import type { JobQueue } from '../../jobs/job-queue.js';
import { cipherOf, sealBuffer } from '../../secrets/content-cipher.js';
import type { ContentSealing } from '../../secrets/content-cipher.js';
import type { SecretBox } from '../../secrets/secret-box.js';
import { addSeconds } from '../../shared/clock.js';
import type { Clock } from '../../shared/clock.js';
import { DomainError, conflict, invalid, notFound } from '../../shared/errors.js';
import { hashToken, randomToken, tfeId } from '../../shared/ids.js';
import type { Actor } from '../identity/actor.js';
import type { Page, PageRequest } from '../pagination.js';
import { pageOffset } from '../pagination.js';
import type { WorkspaceService } from '../workspaces/workspace-service.js';
import type { LockHolder, Workspace } from '../workspaces/workspace.js';
import { lockRefusal } from '../workspaces/workspace-lock.js';
import { inspectStateFile, parseJsonStateOutputs } from './state-file.js';
import type { StateOutput } from './state-file.js';
import { toStateVersion } from './state-version-repo.js';
import type { Executor, NewOutput } from './state-version-repo.js';
import type { TfeStateVersionsTable } from '../../db/schema-tfe-state.js';
import type { ReadWriteTx } from '../../db/unit-of-work.js';
import type { BatchQueue } from '../../shared/batch-queue.js';
import type { StateRepos } from './state-repos.js';
import {
  acceptStateContent,
  backingDataTransition,
  checkAgainstCurrent,
  checkMd5,
  decodeBase64Strict,
  outputsReadable,
} from './state-version.js';
import type {
  BackingDataAction,
  StateClaims,
  StateVersion,
  StateVersionCreator,
  StateVersionOutput,
  StateVersionStatus,
} from './state-version.js';
import { createHash } from 'node:crypto';
import { extractionJob } from './extraction-backfill.js';
import { RecentCache } from '../recent-cache.js';
import { openStateContent } from './state-content.js';

export const EXTRACT_STATE_JOB = 'tfe.extract-state';
export const STATE_BLOB_GC_JOB = 'tfe.state-blob-gc';

/** The settings this module reads (from Config, through the composition root). */
export interface StateVersionSettings {
  allowSerialMismatch: boolean;
  /** Accept OpenTofu's encrypted state envelopes (only their MD5 can be checked). */
  allowEncrypted: boolean;
  uploadUrlTtlSeconds: number;
  maxUploadSize: number;
  softDeletePurgeDays: number;
  retentionKeepLatest: number;
  retentionMaxAgeDays: number;
  maintenanceIntervalSeconds: number;
  /** Content sent inline at creation up to this many bytes is stored in the version's own transaction. */
  inlineMaxSize: number;
}

/**
 * Content a new version references: already in the blob store (BlobInfo), or `inline`
 * bytes (sealed) that are written into the database in the version's transaction.
 */
export interface VersionContent {
  sha256: string;
  size: number;
  inline?: Buffer;
}

export interface StateVersionServiceDeps {
  repos: StateRepos;
  workspaces: WorkspaceService;
  blobs: BlobStore;
  jobs: JobQueue;
  secrets: SecretBox;
  /** Inline content is sealed with it before its transaction opens. */
  sealing?: ContentSealing;
  clock: Clock;
  settings: StateVersionSettings;
  /**
   * Keep each workspace's current version in memory (see `currentWithOutputIds`). Only
   * where every write goes through this process's repos or moves `externalChanges`: SQLite's
   * `data_version`, PostgreSQL's change notifications from other nodes (Db.externalChanges).
   */
  currentVersionCache?: { externalChanges?: () => number; externalCheckMs?: number };
}

/**
 * A workspace's current version with the ids of its outputs; treat as read-only (it may be shared between requests).
 */
export interface CurrentStateVersion {
  readonly version: StateVersion;
  readonly outputIds: readonly string[];
}

/** A create request after type checks (routes check JSON types; this checks meaning). */
export interface CreateStateVersionInput {
  serial: number;
  md5: string;
  lineage: string | null;
  /** Base64 raw state; absent → pending version with upload URLs. */
  state?: string;
  jsonState?: string;
  jsonStateOutputs?: string;
  force: boolean;
  runId: string | null;
}

/** A create after validation, with everything its transaction writes except its history position. */
interface PreparedCreate {
  row: TfeStateVersionsTable;
  claims: StateClaims;
  force: boolean;
  infos: Array<VersionContent | undefined>;
  outputs: NewOutput[] | undefined;
  /** Who must hold the workspace's lock, checked in the create's transaction (else checked before it). */
  lockedBy: Actor | null;
}

interface CreatedVersion {
  version: StateVersion;
  outputIds: string[];
}

interface QueuedCreate {
  create: PreparedCreate;
  resolve(v: CreatedVersion): void;
  reject(err: unknown): void;
}

/**
 * Why a create is refused by the lock holders read in its transaction: its workspace is
 * gone (deleted since its permission was answered), or, when the create's lock is checked
 * there, the actor does not hold it.
 */
function lockError(holders: ReadonlyMap<string, LockHolder | null>, c: PreparedCreate): DomainError | null {
  const id = c.row.workspace_id;
  const lockedBy = holders.get(id);
  if (lockedBy === undefined) return notFound(`workspace ${id} not found`);
  return c.lockedBy ? lockRefusal({ lockedBy }, c.lockedBy) : null;
}

/** Thrown inside a write transaction when a blob it needs was collected meanwhile. */
export class BlobCollectedError extends Error {
  constructor(readonly sha256: string) {
    super(`blob ${sha256} was collected while being referenced`);
  }
}

function creatorOf(actor: Actor): StateVersionCreator | null {
  if (actor.kind === 'user') return { kind: 'user', id: actor.userId };
  if (actor.kind === 'team') return { kind: 'team', id: actor.teamId };
  return null;
}

function sealContext(id: string, target: 'state' | 'json'): string {
  return `tfe-state-upload:${id}:${target}`;
}

export function toNewOutputs(outputs: StateOutput[]): NewOutput[] {
  return outputs.map((o) => ({
    id: tfeId('wsout'),
    name: o.name,
    sensitive: o.sensitive,
    type: o.type,
    detailedType: o.detailedType,
    value: o.value,
  }));
}

/**
 * State versions of a workspace: create (inline or pending), rollback, reads, and the
 * self-hosted backing-data actions. Uploads and downloads live in StateUploadService.
 *
 * Every write follows one pattern: decode, validate and store blobs first (slow work,
 * outside any transaction), then one short transaction that takes the workspace's next
 * history position (which queues concurrent writers of that workspace), checks the
 * serial against the current version, inserts, moves the current pointer and enqueues
 * the extraction job. On PostgreSQL the finalized creates with inline content that arrive
 * together share one such transaction, a few statements for all (decision 0053).
 */
export class StateVersionService {
  private readonly currentCache: RecentCache<CurrentStateVersion> | null = null;
  private readonly createQueue: BatchQueue<QueuedCreate> | null = null;

  constructor(private readonly deps: StateVersionServiceDeps) {
    const grouping = deps.repos.createGroups;
    if (grouping) this.createQueue = grouping.batches((batch) => this.commitCreates(batch), grouping.options);
    if (deps.currentVersionCache) {
      const cache = new RecentCache<CurrentStateVersion>({
        clock: deps.clock,
        ttlMs: Infinity,
        max: 10_000,
        externalChanges: deps.currentVersionCache.externalChanges,
        externalCheckMs: deps.currentVersionCache.externalCheckMs,
      });
      // Every write to a workspace's versions, outputs or head goes through the repos, which report it here.
      deps.repos.changes.onChange((workspaceIds) => {
        for (const id of workspaceIds) cache.delete(id);
      });
      this.currentCache = cache;
    }
  }

  /** Create a state version (POST /workspaces/:id/state-versions). */
  async create(actor: Actor, workspaceId: string, input: CreateStateVersionInput): Promise<StateVersion> {
    return (await this.createWithOutputIds(actor, workspaceId, input)).version;
  }

  /** create() with the ids of the outputs it stored (from `json-state-outputs`), so the answer needs no read. */
  async createWithOutputIds(
    actor: Actor,
    workspaceId: string,
    input: CreateStateVersionInput,
  ): Promise<{ version: StateVersion; outputIds: string[] }> {
    // A finalized create may join a group transaction (PostgreSQL), which checks the lock
    // itself: the workspace is then read here only without a recent permission answer.
    const lockInTransaction = this.createQueue !== null && input.state !== undefined;
    const wsId = lockInTransaction
      ? await this.deps.workspaces.stateWriteId(actor, workspaceId)
      : (await this.writableWorkspace(actor, workspaceId)).id;
    const claims: StateClaims = { serial: input.serial, md5: input.md5.toLowerCase(), lineage: input.lineage };

    let state: { bytes: Buffer; formatVersion: number | null; terraformVersion: string | null } | undefined;
    if (input.state !== undefined) {
      const bytes = decodeBase64Strict(input.state);
      if (bytes === null) throw invalid('state is not valid base64', '/data/attributes/state');
      checkMd5(createHash('md5').update(bytes).digest('hex'), claims);
      state = { bytes, ...acceptStateContent(inspectStateFile(bytes), claims, this.deps.settings) };
    }
    let jsonBytes: Buffer | undefined;
    if (input.jsonState !== undefined && input.jsonState !== '') {
      jsonBytes = decodeBase64Strict(input.jsonState) ?? undefined;
      if (jsonBytes === undefined) throw invalid('json-state is not valid base64', '/data/attributes/json-state');
      if (!isJsonDocument(jsonBytes)) throw invalid('json-state is not a JSON document', '/data/attributes/json-state');
    }
    let outputs: NewOutput[] | undefined;
    if (input.jsonStateOutputs !== undefined && input.jsonStateOutputs !== '') {
      const bytes = decodeBase64Strict(input.jsonStateOutputs);
      if (bytes === null)
        throw invalid('json-state-outputs is not valid base64', '/data/attributes/json-state-outputs');
      const parsed = parseJsonStateOutputs(bytes);
      if (!parsed.ok) throw invalid(parsed.error, '/data/attributes/json-state-outputs');
      outputs = toNewOutputs(parsed.outputs);
    }

    // Small content rides in the version's own commit (one fsync or commit for everything,
    // shared with concurrent creates); larger content is written to the blob store first.
    const contents = [state?.bytes, jsonBytes];
    const inlineMax = this.deps.settings.inlineMaxSize;
    const put = async () =>
      Promise.all(
        contents.map((b): Promise<VersionContent> | undefined =>
          b === undefined
            ? undefined
            : b.length <= inlineMax
              ? Promise.resolve(inlineContent(b, this.deps.sealing))
              : this.deps.blobs.put(once(b)),
        ),
      );
    const infos = await put();
    const id = tfeId('sv');
    const now = this.deps.clock.now();
    const pending = state === undefined;
    const tokens = pending ? { state: randomToken(32), json: randomToken(32) } : undefined;
    const [stateInfo, jsonInfo] = infos;
    const row: TfeStateVersionsTable = {
      id,
      workspace_id: wsId,
      seq: 0,
      serial: claims.serial,
      lineage: claims.lineage,
      md5: claims.md5,
      status: pending ? 'pending' : 'finalized',
      size: stateInfo?.size ?? null,
      state_format_version: state?.formatVersion ?? null,
      terraform_version: state?.terraformVersion ?? null,
      state_sha256: stateInfo?.sha256 ?? null,
      json_sha256: jsonInfo?.sha256 ?? null,
      upload_token_hash: tokens ? hashToken(tokens.state) : null,
      upload_token_sealed: tokens ? this.deps.secrets.seal(tokens.state, sealContext(id, 'state')) : null,
      json_upload_token_hash: tokens && !jsonInfo ? hashToken(tokens.json) : null,
      json_upload_token_sealed:
        tokens && !jsonInfo ? this.deps.secrets.seal(tokens.json, sealContext(id, 'json')) : null,
      upload_expires_at: tokens ? addSeconds(now, this.deps.settings.uploadUrlTtlSeconds).toISOString() : null,
      resources_processed: 0,
      resources: null,
      modules: null,
      providers: null,
      billable_rum_count: null,
      created_by_kind: creatorOf(actor)?.kind ?? null,
      created_by_id: creatorOf(actor)?.id ?? null,
      run_id: input.runId,
      rollback_of_id: null,
      delete_older_than_n_days: null,
      soft_deleted_at: null,
      purge_after: null,
      created_at: now.toISOString(),
    };
    const lockedBy = lockInTransaction ? actor : null;
    const create: PreparedCreate = { row, claims, force: input.force, infos, outputs, lockedBy };
    // Finalized versions whose content is all inline share a transaction with concurrent ones (PostgreSQL).
    if (this.createQueue && !pending && infos.every((i) => i === undefined || i.inline !== undefined)) {
      return new Promise((resolve, reject) => this.createQueue?.push({ create, resolve, reject }));
    }
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.deps.repos.commits.readWrite((trx) => this.createIn(trx, create, attempt > 0));
      } catch (err) {
        if (!(err instanceof BlobCollectedError) || attempt >= 2) throw err;
        create.infos = await put();
      }
    }
  }

  /** One create in a transaction of its own (or a savepoint of a group commit on SQLite). */
  private async createIn(trx: ReadWriteTx, c: PreparedCreate, revive: boolean): Promise<CreatedVersion> {
    const workspaceId = c.row.workspace_id;
    if (c.lockedBy) {
      const err = lockError(await this.deps.workspaces.lockHoldersIn(trx, [workspaceId]), c);
      if (err) throw err;
    }
    const { seq, currentId } = await this.deps.repos.versions.advanceHead(trx, workspaceId);
    const current = currentId && !c.force ? await this.deps.repos.versions.claimsOf(trx, currentId) : undefined;
    checkAgainstCurrent(current ?? null, c.claims, c.force);
    await this.useBlobs(trx, c.infos, revive);
    c.row.seq = seq;
    const created = await this.deps.repos.versions.insert(trx, c.row);
    // A pending version supersedes older pending ones at once but becomes current only
    // when its upload finalizes it (StateUploadService.upload): current is the newest finalized.
    const pending = c.row.status === 'pending';
    if (pending) await this.deps.repos.versions.discardPending(trx, workspaceId, c.row.id);
    else await this.makeCurrent(trx, workspaceId, c.row.id);
    if (c.outputs) await this.deps.repos.outputs.replace(trx, { id: c.row.id, workspaceId }, c.outputs);
    if (!pending) await this.deps.jobs.enqueue(trx, extractionJob(c.row.id));
    // Making it current changes nothing in its row.
    return { version: created, outputIds: c.outputs?.map((o) => o.id) ?? [] };
  }

  /**
   * PostgreSQL's group commit of creates (decision 0053): the finalized creates with inline
   * content that arrived together are written by one transaction in a few statements, each
   * checked on its own against its workspace's current version (or the create before it
   * in the group). A create that fails its check answers its error and writes nothing;
   * the others go on. When the transaction itself fails, each create is tried again in a
   * transaction of its own, so one create's fault never fails the others.
   */
  private async commitCreates(batch: QueuedCreate[]): Promise<void> {
    const outcomes: Array<{ ok: true; value: CreatedVersion } | { ok: false; err: unknown }> = [];
    try {
      await this.deps.repos.units.readWrite(async (trx) => {
        outcomes.length = 0;
        await this.writeCreates(trx, batch, outcomes);
      });
    } catch {
      await this.createEachAlone(batch);
      return;
    }
    batch.forEach((q, i) => {
      const o = outcomes[i]!;
      if (o.ok) q.resolve(o.value);
      else q.reject(o.err);
    });
  }

  private async writeCreates(
    trx: ReadWriteTx,
    batch: QueuedCreate[],
    outcomes: Array<{ ok: true; value: CreatedVersion } | { ok: false; err: unknown }>,
  ): Promise<void> {
    const { versions, blobs, outputs } = this.deps.repos;
    // Each lock is checked here, under a share lock of its workspace row taken before the heads.
    const workspaceIds = [...new Set(batch.map((q) => q.create.row.workspace_id))];
    const holders = await this.deps.workspaces.lockHoldersIn(trx, workspaceIds);
    const heads = await versions.lockHeads(
      trx,
      workspaceIds.filter((id) => holders.has(id)),
    );
    const accepted: PreparedCreate[] = [];
    for (const { create: c } of batch) {
      const refused = lockError(holders, c);
      if (refused) {
        outcomes.push({ ok: false, err: refused });
        continue;
      }
      const head = heads.get(c.row.workspace_id)!;
      try {
        checkAgainstCurrent(c.force ? null : head.current, c.claims, c.force);
      } catch (err) {
        outcomes.push({ ok: false, err });
        continue;
      }
      head.seq++;
      head.current = c.claims;
      const row = { ...c.row, seq: head.seq };
      accepted.push({ ...c, row });
      outcomes.push({
        ok: true,
        value: {
          version: toStateVersion({ ...row, processing_error: null }),
          outputIds: c.outputs?.map((o) => o.id) ?? [],
        },
      });
    }
    if (accepted.length === 0) return;
    const inline = accepted.flatMap((c) =>
      c.infos.flatMap((i) => (i?.inline ? [{ sha256: i.sha256, size: i.size, data: i.inline }] : [])),
    );
    await blobs.putInlineBlobs(trx, inline, this.deps.clock.now());
    await versions.insertCurrent(
      trx,
      accepted.map((c) => c.row),
    );
    await outputs.insertNew(
      trx,
      accepted.flatMap((c) =>
        c.outputs ? [{ version: { id: c.row.id, workspaceId: c.row.workspace_id }, outputs: c.outputs }] : [],
      ),
    );
    await this.deps.jobs.enqueueMany(
      trx,
      accepted.map((c) => extractionJob(c.row.id)),
    );
  }

  /** After a failed group transaction: each create in its own, in order within a workspace. */
  private async createEachAlone(batch: QueuedCreate[]): Promise<void> {
    const byWorkspace = new Map<string, QueuedCreate[]>();
    for (const q of batch) {
      const list = byWorkspace.get(q.create.row.workspace_id) ?? [];
      list.push(q);
      byWorkspace.set(q.create.row.workspace_id, list);
    }
    await Promise.all(
      [...byWorkspace.values()].map(async (list) => {
        for (const q of list) {
          await this.deps.repos.commits
            .readWrite((trx) => this.createIn(trx, q.create, false))
            .then(q.resolve, q.reject);
        }
      }),
    );
  }

  /** Roll back (PATCH /workspaces/:id/state-versions): a copy of an older version becomes current. */
  async rollback(actor: Actor, workspaceId: string, targetId: string): Promise<StateVersion> {
    const ws = await this.writableWorkspace(actor, workspaceId);
    const target = await this.deps.repos.versions.findById(this.deps.repos.versions.db, targetId);
    if (!target || target.workspaceId !== ws.id) {
      throw notFound(
        `state version ${targetId} not found in this workspace`,
        '/data/relationships/rollback-state-version/data/id',
      );
    }
    if (target.status !== 'finalized') {
      throw conflict(
        `cannot roll back to a state version whose status is ${target.status}; it must be finalized`,
        '/data/relationships/rollback-state-version/data/id',
      );
    }
    const id = tfeId('sv');
    const now = this.deps.clock.now();
    return this.deps.repos.commits.readWrite(async (trx) => {
      const { seq } = await this.deps.repos.versions.advanceHead(trx, ws.id);
      // Re-read inside the transaction: the target may have been soft deleted meanwhile.
      const t = await this.deps.repos.versions.findById(trx, target.id);
      if (!t || t.status !== 'finalized') throw conflict('the state version to roll back to is no longer finalized');
      await this.deps.repos.versions.insert(trx, {
        id,
        workspace_id: ws.id,
        seq,
        serial: t.serial,
        lineage: t.lineage,
        md5: t.md5,
        status: 'finalized',
        size: t.size,
        state_format_version: t.stateFormatVersion,
        terraform_version: t.terraformVersion,
        state_sha256: t.stateSha256,
        json_sha256: t.jsonSha256,
        upload_token_hash: null,
        upload_token_sealed: null,
        json_upload_token_hash: null,
        json_upload_token_sealed: null,
        upload_expires_at: null,
        resources_processed: t.resourcesProcessed ? 1 : 0,
        processing_error: t.processingError,
        resources: t.resources?.text ?? null,
        modules: t.modules?.text ?? null,
        providers: t.providers?.text ?? null,
        billable_rum_count: t.billableRumCount,
        created_by_kind: creatorOf(actor)?.kind ?? null,
        created_by_id: creatorOf(actor)?.id ?? null,
        run_id: null,
        rollback_of_id: t.id,
        delete_older_than_n_days: null,
        soft_deleted_at: null,
        purge_after: null,
        created_at: now.toISOString(),
      });
      const outputs = await this.deps.repos.outputs.outputs(trx, [t.id]);
      await this.deps.repos.outputs.replace(
        trx,
        { id, workspaceId: ws.id },
        outputs.map((o) => ({ ...o, id: tfeId('wsout') })),
      );
      await this.makeCurrent(trx, ws.id, id);
      if (!t.resourcesProcessed) await this.deps.jobs.enqueue(trx, extractionJob(id));
      return (await this.deps.repos.versions.findById(trx, id)) as StateVersion;
    });
  }

  /** Show a state version (404 when missing or not readable by the actor). */
  async get(actor: Actor, id: string): Promise<StateVersion> {
    const v = await this.deps.repos.versions.findById(this.deps.repos.versions.db, id);
    if (!v) throw notFound(`state version ${id} not found`);
    await this.deps.workspaces.authorize(actor, v.workspaceId, 'read-state-versions').catch((err: unknown) => {
      throw isNotFoundLike(err) ? notFound(`state version ${id} not found`) : err;
    });
    return v;
  }

  /** The workspace's current state version (404 when there is none). */
  async current(actor: Actor, workspaceId: string): Promise<StateVersion> {
    const ws = await this.deps.workspaces.authorize(actor, workspaceId, 'read-state-versions');
    const v = await this.deps.repos.versions.findCurrent(this.deps.repos.versions.db, ws.id);
    if (!v) throw notFound(`workspace ${workspaceId} has no current state version`);
    return v;
  }

  /**
   * current() with the ids of its outputs (the hot read of `GET …/current-state-version`).
   * The permission answer may be a couple of seconds old (WorkspaceService.authorizedId).
   * With the current-version cache (SQLite) the answer comes from memory until a write
   * through the repos touches the workspace, or another process commits to the database;
   * the same object is returned while it stays valid, so callers may memoize what they
   * derive from it by identity. Versions that still show an upload URL are not kept:
   * their document changes when the URL expires.
   */
  async currentWithOutputIds(actor: Actor, workspaceId: string): Promise<CurrentStateVersion> {
    const wsId = await this.deps.workspaces.authorizedId(actor, workspaceId, 'read-state-versions');
    const cache = this.currentCache;
    const hit = cache?.get(wsId);
    if (hit) return hit;
    const since = cache?.epoch() ?? 0;
    const found = await this.deps.repos.versions.findCurrentWithOutputIds(this.deps.repos.versions.db, wsId);
    if (!found) throw notFound(`workspace ${workspaceId} has no current state version`);
    if (cache && !this.hasLiveUploadUrl(found.version)) cache.set(wsId, Object.freeze(found), since);
    return found;
  }

  /** The state versions of one workspace, newest first. */
  async list(
    actor: Actor,
    q: { organization: string; workspace: string; statuses?: StateVersionStatus[]; page: PageRequest },
  ): Promise<Page<StateVersion>> {
    const view = await this.deps.workspaces.getByName(actor, q.organization, q.workspace);
    const ws = await this.deps.workspaces.authorize(actor, view.workspace.id, 'read-state-versions');
    const { items, total } = await this.deps.repos.versions.list(
      this.deps.repos.versions.db,
      ws.id,
      q.statuses,
      q.page.size,
      pageOffset(q.page),
    );
    return { items, number: q.page.number, size: q.page.size, totalCount: total };
  }

  /** The self-hosted backing-data actions; organization owners only. */
  async backingData(
    actor: Actor,
    id: string,
    action: BackingDataAction,
    deleteOlderThanNDays?: number,
  ): Promise<StateVersion> {
    const v = await this.deps.repos.versions.findById(this.deps.repos.versions.db, id);
    if (!v) throw notFound(`state version ${id} not found`);
    await this.deps.workspaces.authorize(actor, v.workspaceId, 'organization-owner').catch((err: unknown) => {
      throw isNotFoundLike(err) ? notFound(`state version ${id} not found`) : err;
    });
    const now = this.deps.clock.now();
    return this.deps.repos.units.readWrite(async (trx) => {
      const fresh = (await this.deps.repos.versions.findById(trx, id)) as StateVersion;
      const isCurrent = (await this.deps.repos.versions.currentId(trx, fresh.workspaceId)) === id;
      const to = backingDataTransition(action, fresh.status, isCurrent);
      if (to === fresh.status) return fresh;
      const extra =
        action === 'soft_delete_backing_data'
          ? {
              soft_deleted_at: now.toISOString(),
              delete_older_than_n_days: deleteOlderThanNDays ?? null,
              purge_after:
                deleteOlderThanNDays === undefined
                  ? null
                  : new Date(now.getTime() + deleteOlderThanNDays * 86_400_000).toISOString(),
            }
          : { soft_deleted_at: null, delete_older_than_n_days: null, purge_after: null };
      const moved =
        to === 'backing_data_permanently_deleted'
          ? await this.deps.repos.versions.purgeBackingData(trx, id)
          : await this.deps.repos.versions.transition(trx, id, fresh.status, to, extra);
      if (!moved) {
        throw conflict('the state version changed meanwhile; try again');
      }
      if (to === 'backing_data_permanently_deleted') {
        await this.deps.jobs.enqueue(trx, { kind: STATE_BLOB_GC_JOB, dedupeKey: STATE_BLOB_GC_JOB });
      }
      return (await this.deps.repos.versions.findById(trx, id)) as StateVersion;
    });
  }

  /** For the workspace unlock rule: the newest version is still waiting for its upload. */
  async latestIsPending(workspaceId: string): Promise<boolean> {
    return this.deps.repos.versions.latestIsPending(this.deps.repos.versions.db, workspaceId);
  }

  private hasLiveUploadUrl(v: StateVersion): boolean {
    if (v.uploadTokenSealed === null && v.jsonUploadTokenSealed === null) return false;
    return v.uploadExpiresAt !== null && v.uploadExpiresAt.getTime() > this.deps.clock.now().getTime();
  }

  /** The upload secrets of a version that still accepts uploads (null once used or expired). */
  uploadTokens(v: StateVersion): { state: string | null; json: string | null } {
    const live = v.uploadExpiresAt !== null && v.uploadExpiresAt.getTime() > this.deps.clock.now().getTime();
    const open = (sealed: string | null, target: 'state' | 'json') =>
      live && sealed !== null ? this.deps.secrets.openString(sealed, sealContext(v.id, target)) : null;
    return {
      state: v.status === 'pending' ? open(v.uploadTokenSealed, 'state') : null,
      json: v.status === 'pending' || v.status === 'finalized' ? open(v.jsonUploadTokenSealed, 'json') : null,
    };
  }

  /** Output ids per version, for the `outputs` relationship; none while the backing data is deleted. */
  async outputIds(versions: StateVersion[]): Promise<Map<string, string[]>> {
    return this.deps.repos.outputs.outputIds(this.deps.repos.versions.db, readableIds(versions));
  }

  /** The outputs of these versions (`include=outputs`), leaving out those whose backing data is deleted. */
  async outputs(versions: StateVersion[]): Promise<StateVersionOutput[]> {
    return this.deps.repos.outputs.outputs(this.deps.repos.versions.db, readableIds(versions));
  }

  /** The bytes of stored content (inline in the database or in the blob store). */
  async content(sha256: string): Promise<AsyncIterable<Buffer>> {
    return openStateContent(this.deps.repos.blobs, this.deps.blobs, sha256);
  }

  async versionsById(ids: string[]): Promise<StateVersion[]> {
    return this.deps.repos.versions.findManyByIds(this.deps.repos.versions.db, ids);
  }

  private async writableWorkspace(actor: Actor, workspaceId: string): Promise<Workspace> {
    const ws = await this.deps.workspaces.authorize(actor, workspaceId, 'read-and-write-state-versions');
    this.deps.workspaces.assertWritable(actor, ws);
    return ws;
  }

  /** The new (finalized) version becomes current; pending versions it supersedes are discarded. */
  private async makeCurrent(trx: Executor, workspaceId: string, id: string): Promise<void> {
    await this.deps.repos.versions.discardPending(trx, workspaceId, id);
    await this.deps.repos.versions.setCurrent(trx, workspaceId, id);
  }

  /** Current version id per workspace (for the workspaces' `current-state-version` relationship). */
  async currentIds(workspaceIds: string[]): Promise<Map<string, string>> {
    return this.deps.repos.versions.currentIds(this.deps.repos.versions.db, workspaceIds);
  }

  /** Inside the transaction that deletes workspaces: their state versions go too; blobs are collected later. */
  async onWorkspacesDeleted(trx: Executor, workspaceIds: string[]): Promise<void> {
    if (await this.deps.repos.versions.deleteWorkspaces(trx, workspaceIds)) {
      await this.deps.jobs.enqueue(trx, { kind: STATE_BLOB_GC_JOB, dedupeKey: STATE_BLOB_GC_JOB });
    }
  }

  /**
   * Registers the blobs a new version references, writing inline content into the
   * database. `revive` after re-storing bytes the collector had removed
   * (BlobCollectedError on the previous attempt). A blob whose row is a tombstone is taken
   * back when its bytes are in the store (this write stored them after the removal, which
   * committed before the tombstone could be seen); when they are not, the removal raced
   * this write and the caller must store them again.
   */
  async useBlobs(trx: Executor, infos: Array<VersionContent | undefined>, revive: boolean): Promise<void> {
    const now = this.deps.clock.now();
    for (const info of infos) {
      if (!info) continue;
      if (info.inline) await this.deps.repos.blobs.putInlineBlob(trx, info.sha256, info.size, info.inline, now);
      else if (revive) await this.deps.repos.blobs.reviveBlob(trx, info.sha256, info.size, now);
      else if (!(await this.deps.repos.blobs.touchBlob(trx, info.sha256, info.size, now))) {
        if (!(await this.deps.blobs.stat(info.sha256))) throw new BlobCollectedError(info.sha256);
        await this.deps.repos.blobs.reviveBlob(trx, info.sha256, info.size, now);
      }
    }
  }
}

function readableIds(versions: StateVersion[]): string[] {
  return versions.filter((v) => outputsReadable(v.status)).map((v) => v.id);
}

/** Content to store inline: named by the plaintext's hash, kept sealed. */
function inlineContent(bytes: Buffer, sealing: ContentSealing | undefined): VersionContent {
  return {
    sha256: createHash('sha256').update(bytes).digest('hex'),
    size: bytes.length,
    inline: sealing?.encrypt ? sealBuffer(sealing.current(), bytes, cipherOf(sealing)) : bytes,
  };
}

async function* once(b: Buffer): AsyncGenerator<Buffer> {
  yield b;
}

function isJsonDocument(bytes: Buffer): boolean {
  try {
    JSON.parse(bytes.toString('utf8'));
    return true;
  } catch {
    return false;
  }
}

function isNotFoundLike(err: unknown): boolean {
  return err instanceof DomainError && (err.kind === 'not_found' || err.kind === 'forbidden');
}
