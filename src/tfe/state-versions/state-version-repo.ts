import { sql } from 'kysely';
import type { Kysely, Selectable } from 'kysely';
import { RawJson } from '../../shared/raw-json.js';
import type { Database } from '../../db/schema.js';
import { OneParamQuery, ParamQuery, RowInsert } from '../../db/one-param-query.js';
import { PgJsonInsert } from '../../db/pg-json-rows.js';
import type { TfeStateVersionsTable } from '../../db/schema-tfe-state.js';
import type { StateChanges } from './state-changes.js';
import type { StateOutputRepo } from './state-output-repo.js';
import type { ExtractJson } from './state-extract.js';
import type { StateClaims, StateVersion, StateVersionStatus } from './state-version.js';

/** A database handle or the caller's transaction (a Transaction is a Kysely). */
export type Executor = Kysely<Database>;

export type StateVersionRow = Selectable<TfeStateVersionsTable>;

/** PostgreSQL: a group's finalized versions (insertCurrent), every column given. */
const PG_INSERT_VERSIONS = new PgJsonInsert('tfe_state_versions');

const raw = (s: string | null): RawJson | null => (s === null ? null : new RawJson(s));

export function toStateVersion(r: StateVersionRow): StateVersion {
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    seq: Number(r.seq),
    serial: Number(r.serial),
    lineage: r.lineage,
    md5: r.md5,
    status: r.status as StateVersionStatus,
    size: r.size === null ? null : Number(r.size),
    stateFormatVersion: r.state_format_version,
    terraformVersion: r.terraform_version,
    stateSha256: r.state_sha256,
    jsonSha256: r.json_sha256,
    uploadTokenSealed: r.upload_token_sealed,
    jsonUploadTokenSealed: r.json_upload_token_sealed,
    uploadExpiresAt: r.upload_expires_at === null ? null : new Date(r.upload_expires_at),
    resourcesProcessed: r.resources_processed === 1,
    processingError: r.processing_error ?? null,
    resources: raw(r.resources),
    modules: raw(r.modules),
    providers: raw(r.providers),
    billableRumCount: r.billable_rum_count,
    createdBy:
      r.created_by_kind && r.created_by_id ? { kind: r.created_by_kind as 'user' | 'team', id: r.created_by_id } : null,
    runId: r.run_id,
    rollbackOfId: r.rollback_of_id,
    deleteOlderThanNDays: r.delete_older_than_n_days,
    softDeletedAt: r.soft_deleted_at === null ? null : new Date(r.soft_deleted_at),
    createdAt: new Date(r.created_at),
  };
}

export interface ExtractedFields {
  size: number;
  stateFormatVersion: number | null;
  terraformVersion: string | null;
  /** The three lists: as values, or as JSON text already (`json`, an extraction made in a worker thread). */
  lists:
    | {
        resources: unknown[] | null;
        modules: Record<string, unknown> | null;
        providers: Record<string, unknown> | null;
      }
    | { json: ExtractJson };
  billableRumCount: number | null;
}

export type { NewOutput } from './state-output-repo.js';

/** A workspace's head as lockHeads took it: its last history position and its current version's claims. */
export interface LockedHead {
  seq: number;
  current: StateClaims | null;
}

/**
 * All SQL of `tfe_state_versions` and `tfe_state_heads` (a workspace's history position,
 * version count and current version). Outputs are StateOutputRepo's, blobs StateBlobRepo's;
 * a version's deletion removes its outputs through StateOutputRepo.
 */
export class StateVersionRepo {
  constructor(
    private readonly deps: {
      db: Kysely<Database>;
      /** Removes the outputs of versions deleted or purged here. */
      outputs: StateOutputRepo;
      /** Told which workspaces' versions or head a write touched. */
      changes?: StateChanges;
    },
  ) {}

  get db(): Kysely<Database> {
    return this.deps.db;
  }

  #changed(workspaceIds: readonly string[]): void {
    this.deps.changes?.changed(workspaceIds);
  }

  async findById(ex: Executor, id: string): Promise<StateVersion | undefined> {
    const r = await ex.selectFrom('tfe_state_versions').selectAll().where('id', '=', id).executeTakeFirst();
    return r ? toStateVersion(r) : undefined;
  }

  async findManyByIds(ex: Executor, ids: string[]): Promise<StateVersion[]> {
    if (ids.length === 0) return [];
    const rows = await ex.selectFrom('tfe_state_versions').selectAll().where('id', 'in', ids).execute();
    return rows.map(toStateVersion);
  }

  /** The version whose state (or JSON state) upload secret hashes to `hash`. */
  async findByUploadTokenHash(
    ex: Executor,
    hash: string,
  ): Promise<{ version: StateVersion; target: 'state' | 'json' } | undefined> {
    const r = await ex
      .selectFrom('tfe_state_versions')
      .selectAll()
      .where((eb) => eb.or([eb('upload_token_hash', '=', hash), eb('json_upload_token_hash', '=', hash)]))
      .executeTakeFirst();
    if (!r) return undefined;
    return { version: toStateVersion(r), target: r.upload_token_hash === hash ? 'state' : 'json' };
  }

  /**
   * Takes the next history position of a workspace and returns it with the current
   * version. The UPDATE holds the head row until the transaction ends, so concurrent
   * writers of one workspace queue here, on one node or many.
   */
  async advanceHead(trx: Executor, workspaceId: string): Promise<{ seq: number; currentId: string | null }> {
    this.#changed([workspaceId]);
    const r = (await this.advanceHeadQuery.first(trx, workspaceId))!;
    return { seq: Number(r.head_seq), currentId: r.current_id };
  }

  private readonly advanceHeadQuery = new OneParamQuery((workspaceId: string) =>
    this.deps.db
      .insertInto('tfe_state_heads')
      .values({
        workspace_id: workspaceId,
        current_id: sql<null>`null`,
        head_seq: sql<number>`1`,
        version_count: sql<number>`1`,
      })
      .onConflict((oc) =>
        oc.column('workspace_id').doUpdateSet((eb) => ({
          head_seq: eb('tfe_state_heads.head_seq', '+', sql<number>`1`),
          version_count: eb('tfe_state_heads.version_count', '+', sql<number>`1`),
        })),
      )
      .returning(['head_seq', 'current_id']),
  );

  private readonly claimsQuery = new OneParamQuery((id: string) =>
    this.deps.db.selectFrom('tfe_state_versions').select(['serial', 'md5', 'lineage']).where('id', '=', id),
  );

  /** Serial, MD5 and lineage of a version (what a new version is checked against). */
  async claimsOf(ex: Executor, id: string): Promise<StateClaims | undefined> {
    const r = await this.claimsQuery.first(ex, id);
    return r && { serial: Number(r.serial), md5: r.md5, lineage: r.lineage };
  }

  async setCurrent(trx: Executor, workspaceId: string, stateVersionId: string): Promise<void> {
    this.#changed([workspaceId]);
    await this.setCurrentQuery.run(trx, workspaceId, stateVersionId);
  }

  private readonly setCurrentQuery = new ParamQuery((workspaceId: string, stateVersionId: string) =>
    this.deps.db
      .updateTable('tfe_state_heads')
      .set({ current_id: stateVersionId })
      .where('workspace_id', '=', workspaceId),
  );

  async currentId(ex: Executor, workspaceId: string): Promise<string | null> {
    const r = await ex
      .selectFrom('tfe_state_heads')
      .select('current_id')
      .where('workspace_id', '=', workspaceId)
      .executeTakeFirst();
    return r?.current_id ?? null;
  }

  async currentIds(ex: Executor, workspaceIds: string[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    if (workspaceIds.length === 0) return out;
    const rows = await ex
      .selectFrom('tfe_state_heads')
      .select(['workspace_id', 'current_id'])
      .where('workspace_id', 'in', workspaceIds)
      .where('current_id', 'is not', null)
      .execute();
    for (const r of rows) if (r.current_id) out.set(r.workspace_id, r.current_id);
    return out;
  }

  /** Removes all state of the given workspaces; true when there was any. */
  async deleteWorkspaces(trx: Executor, workspaceIds: string[]): Promise<boolean> {
    if (workspaceIds.length === 0) return false;
    this.#changed(workspaceIds);
    await this.deps.outputs.deleteOfWorkspaces(trx, workspaceIds);
    const res = await trx.deleteFrom('tfe_state_versions').where('workspace_id', 'in', workspaceIds).executeTakeFirst();
    await trx.deleteFrom('tfe_state_heads').where('workspace_id', 'in', workspaceIds).execute();
    return Number(res.numDeletedRows) > 0;
  }

  async findCurrent(ex: Executor, workspaceId: string): Promise<StateVersion | undefined> {
    const r = await ex
      .selectFrom('tfe_state_heads as h')
      .innerJoin('tfe_state_versions as v', 'v.id', 'h.current_id')
      .selectAll('v')
      .where('h.workspace_id', '=', workspaceId)
      .executeTakeFirst();
    return r ? toStateVersion(r) : undefined;
  }

  /**
   * findCurrent and outputIds in one query, for the hot current-state-version read.
   * `string_agg(… order by …)` reads the same on PostgreSQL and SQLite (>= 3.44); output
   * ids never contain a comma.
   */
  private readonly currentWithOutputIdsQuery = new OneParamQuery((workspaceId: string) =>
    this.deps.db
      .selectFrom('tfe_state_heads as h')
      .innerJoin('tfe_state_versions as v', 'v.id', 'h.current_id')
      .selectAll('v')
      .select(
        sql<string | null>`(select string_agg(o.id, ',' order by o.position) from tfe_state_version_outputs o
          where o.state_version_id = v.id)`.as('output_ids'),
      )
      .where('h.workspace_id', '=', workspaceId),
  );

  async findCurrentWithOutputIds(
    ex: Executor,
    workspaceId: string,
  ): Promise<{ version: StateVersion; outputIds: string[] } | undefined> {
    const r = await this.currentWithOutputIdsQuery.first(ex, workspaceId);
    if (!r) return undefined;
    // toStateVersion ignores the extra column (an object rest copy of the row cost more than the query's compile).
    const ids = r.output_ids;
    return { version: toStateVersion(r), outputIds: ids ? ids.split(',') : [] };
  }

  /** Inserts a version and returns it as a read would. */
  async insert(trx: Executor, row: TfeStateVersionsTable): Promise<StateVersion> {
    this.#changed([row.workspace_id]);
    await this.insertVersion.run(trx, row);
    return toStateVersion({ ...row, processing_error: row.processing_error ?? null });
  }

  private readonly insertVersion = new RowInsert((row: TfeStateVersionsTable) =>
    this.deps.db.insertInto('tfe_state_versions').values(row),
  );

  /**
   * PostgreSQL, for a group of creates in one transaction: takes the heads of these
   * workspaces (creating those that have none, at position 0), held until the transaction
   * ends and taken in id order so that concurrent groups cannot deadlock, and returns each
   * one's position and current version's claims. One statement, two after waiting for a head.
   */
  async lockHeads(trx: Executor, workspaceIds: readonly string[]): Promise<Map<string, LockedHead>> {
    this.#changed(workspaceIds);
    const ids = [...workspaceIds].sort();
    const r = await sql<{
      workspace_id: string;
      head_seq: number;
      current_id: string | null;
      serial: number | null;
      md5: string | null;
      lineage: string | null;
    }>`with h as (
        insert into tfe_state_heads (workspace_id, current_id, head_seq, version_count)
        select w, null, 0, 0 from unnest(${ids}::text[]) with ordinality as u(w, n) order by n
        on conflict (workspace_id) do update set head_seq = tfe_state_heads.head_seq
        returning workspace_id, head_seq, current_id)
      select h.workspace_id, h.head_seq, h.current_id, v.serial, v.md5, v.lineage
      from h left join tfe_state_versions v on v.id = h.current_id`.execute(trx);
    // The join reads with the statement's snapshot, taken before the heads were locked: a
    // version made current by a transaction that committed while this one waited for a head
    // is not seen there. Such versions are read again (a new snapshot).
    const unseen = r.rows.filter((row) => row.current_id !== null && row.md5 === null).map((row) => row.current_id!);
    const late = new Map<string, StateClaims>();
    if (unseen.length > 0) {
      const rows = await trx
        .selectFrom('tfe_state_versions')
        .select(['id', 'serial', 'md5', 'lineage'])
        .where('id', 'in', unseen)
        .execute();
      for (const v of rows) late.set(v.id, { serial: Number(v.serial), md5: v.md5, lineage: v.lineage });
    }
    const out = new Map<string, LockedHead>();
    for (const row of r.rows) {
      const seen = row.md5 === null ? null : { serial: Number(row.serial), md5: row.md5, lineage: row.lineage };
      out.set(row.workspace_id, {
        seq: Number(row.head_seq),
        current: row.current_id === null ? null : (seen ?? late.get(row.current_id) ?? null),
      });
    }
    return out;
  }

  /**
   * PostgreSQL, after lockHeads: inserts finalized versions (their `seq` taken from the
   * locked heads), discards the pending versions of their workspaces, and moves each head
   * to its workspace's last version here, which becomes current. Three statements, each of
   * the same text for any number of rows, so the server parses and plans nothing new.
   */
  async insertCurrent(trx: Executor, rows: readonly TfeStateVersionsTable[]): Promise<void> {
    if (rows.length === 0) return;
    const heads = new Map<string, { seq: number; added: number; currentId: string }>();
    for (const row of rows) {
      const h = heads.get(row.workspace_id);
      heads.set(row.workspace_id, { seq: row.seq, added: (h?.added ?? 0) + 1, currentId: row.id });
    }
    const ws = [...heads.keys()];
    this.#changed(ws);
    // Statements of constant text whatever the number of rows (PgJsonInsert).
    await sql`update tfe_state_versions set status = 'discarded'
      where workspace_id = any(${ws}::text[]) and status = 'pending'`.execute(trx);
    await PG_INSERT_VERSIONS.run(trx, rows);
    const hs = [...heads.values()];
    await sql`update tfe_state_heads as h
      set head_seq = u.seq, version_count = h.version_count + u.added, current_id = u.current_id
      from unnest(${ws}::text[], ${hs.map((h) => h.seq)}::int[], ${hs.map((h) => h.added)}::int[],
        ${hs.map((h) => h.currentId)}::text[]) as u(workspace_id, seq, added, current_id)
      where h.workspace_id = u.workspace_id`.execute(trx);
  }

  /** Pending versions of the workspace other than `exceptId` become discarded (they were superseded before upload). */
  async discardPending(trx: Executor, workspaceId: string, exceptId: string): Promise<void> {
    this.#changed([workspaceId]);
    await this.discardPendingQuery.run(trx, workspaceId, exceptId);
  }

  private readonly discardPendingQuery = new ParamQuery((workspaceId: string, exceptId: string) =>
    this.deps.db
      .updateTable('tfe_state_versions')
      .set({ status: sql.lit('discarded') })
      .where('workspace_id', '=', workspaceId)
      .where('status', '=', sql.lit('pending'))
      .where('id', '!=', exceptId),
  );

  /** pending → finalized with the uploaded content; false when the version is no longer pending. */
  async finalizeUpload(
    trx: Executor,
    id: string,
    fields: { sha256: string; size: number; stateFormatVersion: number; terraformVersion: string | null },
  ): Promise<boolean> {
    const res = await trx
      .updateTable('tfe_state_versions')
      .set({
        status: 'finalized',
        state_sha256: fields.sha256,
        size: fields.size,
        state_format_version: fields.stateFormatVersion,
        terraform_version: fields.terraformVersion,
        upload_token_sealed: null,
      })
      .where('id', '=', id)
      .where('status', '=', 'pending')
      .returning('workspace_id')
      .execute();
    return this.#changedRows(res);
  }

  /** Records the JSON state; false when it was already uploaded. */
  async setJsonState(trx: Executor, id: string, sha256: string): Promise<boolean> {
    const res = await trx
      .updateTable('tfe_state_versions')
      .set({ json_sha256: sha256, json_upload_token_sealed: null })
      .where('id', '=', id)
      .where('json_sha256', 'is', null)
      .returning('workspace_id')
      .execute();
    return this.#changedRows(res);
  }

  /** Records what extraction found; false when the version's content was permanently deleted meanwhile. */
  async saveExtract(ex: Executor, id: string, f: ExtractedFields): Promise<boolean> {
    const res = await ex
      .updateTable('tfe_state_versions')
      .set({
        size: f.size,
        state_format_version: f.stateFormatVersion,
        terraform_version: f.terraformVersion,
        ...('json' in f.lists
          ? f.lists.json
          : {
              resources: f.lists.resources === null ? null : JSON.stringify(f.lists.resources),
              modules: f.lists.modules === null ? null : JSON.stringify(f.lists.modules),
              providers: f.lists.providers === null ? null : JSON.stringify(f.lists.providers),
            }),
        billable_rum_count: f.billableRumCount,
        resources_processed: 1,
        processing_error: null,
      })
      .where('id', '=', id)
      .where('state_sha256', 'is not', null)
      .returning('workspace_id')
      .execute();
    return this.#changedRows(res);
  }

  async markProcessed(ex: Executor, id: string, error: string | null = null): Promise<void> {
    const res = await ex
      .updateTable('tfe_state_versions')
      .set({ resources_processed: 1, processing_error: error })
      .where('id', '=', id)
      .returning('workspace_id')
      .execute();
    this.#changedRows(res);
  }

  /** Reports the workspaces of the rows an UPDATE … RETURNING workspace_id changed; true when there were any. */
  #changedRows(rows: Array<{ workspace_id: string }>): boolean {
    this.#changed(rows.map((r) => r.workspace_id));
    return rows.length > 0;
  }

  /** Finalized versions with content whose extraction has not run (ordered by id, after `afterId`). */
  async unprocessedIds(ex: Executor, afterId: string, limit: number): Promise<string[]> {
    const rows = await ex
      .selectFrom('tfe_state_versions')
      .select('id')
      .where('resources_processed', '=', 0)
      .where('status', '=', 'finalized')
      .where('state_sha256', 'is not', null)
      .where('id', '>', afterId)
      .orderBy('id')
      .limit(limit)
      .execute();
    return rows.map((r) => r.id);
  }

  /** Conditional status change; false when the version is no longer in `from`. */
  async transition(
    trx: Executor,
    id: string,
    from: StateVersionStatus,
    to: StateVersionStatus,
    extra: Partial<
      Pick<
        TfeStateVersionsTable,
        'soft_deleted_at' | 'purge_after' | 'delete_older_than_n_days' | 'state_sha256' | 'json_sha256'
      >
    > = {},
  ): Promise<boolean> {
    const res = await trx
      .updateTable('tfe_state_versions')
      .set({ status: to, ...extra })
      .where('id', '=', id)
      .where('status', '=', from)
      .returning('workspace_id')
      .execute();
    return this.#changedRows(res);
  }

  /**
   * Soft deleted → permanently deleted. The content references go, and so do the
   * outputs: their values were read from that content. False when the version is no
   * longer soft deleted.
   */
  async purgeBackingData(trx: Executor, id: string): Promise<boolean> {
    const moved = await this.transition(trx, id, 'backing_data_soft_deleted', 'backing_data_permanently_deleted', {
      state_sha256: null,
      json_sha256: null,
    });
    if (moved) await this.deps.outputs.deleteOfVersions(trx, [id]);
    return moved;
  }

  /**
   * One page of a workspace's versions, newest first. History positions have no gaps
   * unless retention removed rows, so an unfiltered page is usually a direct range of
   * positions and the count is kept on the head row: no scan however long the history.
   * Otherwise the page's positions are found on the (workspace_id, [status,] seq) index
   * first and only those rows are read.
   */
  async list(
    ex: Executor,
    workspaceId: string,
    statuses: StateVersionStatus[] | undefined,
    limit: number,
    offset: number,
  ): Promise<{ items: StateVersion[]; total: number }> {
    let total: number;
    if (!statuses) {
      const head = await ex
        .selectFrom('tfe_state_heads')
        .select(['head_seq', 'version_count'])
        .where('workspace_id', '=', workspaceId)
        .executeTakeFirst();
      if (!head) return { items: [], total: 0 };
      total = Number(head.version_count);
      const top = Number(head.head_seq) - offset;
      if (total === Number(head.head_seq)) {
        if (top < 1) return { items: [], total };
        const rows = await ex
          .selectFrom('tfe_state_versions')
          .selectAll()
          .where('workspace_id', '=', workspaceId)
          .where('seq', '<=', top)
          .where('seq', '>', top - limit)
          .orderBy('seq', 'desc')
          .execute();
        return { items: rows.map(toStateVersion), total };
      }
    } else {
      const count = await ex
        .selectFrom('tfe_state_versions')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('workspace_id', '=', workspaceId)
        .where('status', 'in', statuses)
        .executeTakeFirstOrThrow();
      total = Number(count.n);
    }
    let seqs = ex.selectFrom('tfe_state_versions').select('seq').where('workspace_id', '=', workspaceId);
    if (statuses) seqs = seqs.where('status', 'in', statuses);
    const page = await seqs.orderBy('seq', 'desc').limit(limit).offset(offset).execute();
    if (page.length === 0) return { items: [], total };
    const rows = await ex
      .selectFrom('tfe_state_versions')
      .selectAll()
      .where('workspace_id', '=', workspaceId)
      .where(
        'seq',
        'in',
        page.map((r) => Number(r.seq)),
      )
      .orderBy('seq', 'desc')
      .execute();
    return { items: rows.map(toStateVersion), total };
  }

  /** Whether the newest version of the workspace is still waiting for its upload. */
  async latestIsPending(ex: Executor, workspaceId: string): Promise<boolean> {
    const r = await ex
      .selectFrom('tfe_state_versions')
      .select('status')
      .where('workspace_id', '=', workspaceId)
      .orderBy('seq', 'desc')
      .limit(1)
      .executeTakeFirst();
    return r?.status === 'pending';
  }

  // ---- maintenance -----------------------------------------------------------

  /** Soft-deleted versions whose purge time has come (per-version days, else the default). */
  async softDeletedDue(ex: Executor, now: Date, defaultDays: number, limit: number): Promise<StateVersion[]> {
    const defaultCutoff = new Date(now.getTime() - defaultDays * 86_400_000).toISOString();
    const rows = await ex
      .selectFrom('tfe_state_versions')
      .selectAll()
      // A literal, so that SQLite's planner can take the partial index of soft-deleted versions.
      .where('status', '=', sql.lit('backing_data_soft_deleted'))
      .where((eb) =>
        eb.or([
          eb('purge_after', '<=', now.toISOString()),
          eb.and([eb('purge_after', 'is', null), eb('soft_deleted_at', '<=', defaultCutoff)]),
        ]),
      )
      .limit(limit)
      .execute();
    return rows.map(toStateVersion);
  }

  /**
   * Creation time of the `n`-th newest version holding state (state content; pending,
   * discarded and purged versions have none), or null when there are fewer. Walks the
   * created_at index from the newest end.
   */
  async nthNewestStateCreatedAt(ex: Executor, n: number): Promise<Date | null> {
    const r = await ex
      .selectFrom('tfe_state_versions')
      .select('created_at')
      .where('state_sha256', 'is not', null)
      .orderBy('created_at', 'desc')
      .limit(1)
      .offset(n - 1)
      .executeTakeFirst();
    return r ? new Date(r.created_at) : null;
  }

  /**
   * Versions retention may delete (the rule is `retentionMayDelete`), oldest first:
   * created before `before` (and not before `from`, where the previous batch ended),
   * not current, and not the newest version of their workspace that holds state. The
   * scan runs along the created_at index; each row costs one probe of the head row and,
   * when it holds state, one of the (workspace_id, seq) index for a newer state.
   */
  async retentionCandidates(
    ex: Executor,
    before: Date,
    from: Date | null,
    limit: number,
  ): Promise<Array<{ id: string; createdAt: Date }>> {
    let q = this.unprotected(ex).select('v.created_at').where('v.created_at', '<', before.toISOString());
    if (from) q = q.where('v.created_at', '>=', from.toISOString());
    const rows = await q.orderBy('v.created_at').limit(limit).execute();
    return rows.map((r) => ({ id: r.id, createdAt: new Date(r.created_at) }));
  }

  /**
   * Deletes retention candidates that are still neither current nor the newest state of
   * their workspace (checked again in the caller's transaction); returns how many went.
   */
  async deleteUnprotected(trx: Executor, ids: string[]): Promise<number> {
    if (ids.length === 0) return 0;
    const still = await this.unprotected(trx).where('v.id', 'in', ids).execute();
    return this.deleteVersions(
      trx,
      still.map((r) => r.id),
    );
  }

  /** Versions that are neither current nor the newest version holding state in their workspace. */
  private unprotected(ex: Executor) {
    return ex
      .selectFrom('tfe_state_versions as v')
      .innerJoin('tfe_state_heads as h', 'h.workspace_id', 'v.workspace_id')
      .select('v.id')
      .where((eb) => eb.or([eb('h.current_id', 'is', null), eb('h.current_id', '!=', eb.ref('v.id'))]))
      .where((eb) =>
        eb.or([
          eb('v.state_sha256', 'is', null),
          eb.exists(
            eb
              .selectFrom('tfe_state_versions as w')
              .select('w.id')
              .whereRef('w.workspace_id', '=', 'v.workspace_id')
              .whereRef('w.seq', '>', 'v.seq')
              .where('w.state_sha256', 'is not', null),
          ),
        ]),
      );
  }

  /** Deletes versions (and their outputs) unless they became current meanwhile; keeps the head counts right. */
  async deleteVersions(trx: Executor, ids: string[]): Promise<number> {
    if (ids.length === 0) return 0;
    const current = await trx
      .selectFrom('tfe_state_heads')
      .select('current_id')
      .where('current_id', 'in', ids)
      .execute();
    const keep = new Set(current.map((r) => r.current_id));
    const del = ids.filter((id) => !keep.has(id));
    if (del.length === 0) return 0;
    const owners = await trx.selectFrom('tfe_state_versions').select('workspace_id').where('id', 'in', del).execute();
    const perWorkspace = new Map<string, number>();
    for (const o of owners) perWorkspace.set(o.workspace_id, (perWorkspace.get(o.workspace_id) ?? 0) + 1);
    this.#changed([...perWorkspace.keys()]);
    await this.deps.outputs.deleteOfVersions(trx, del);
    const res = await trx.deleteFrom('tfe_state_versions').where('id', 'in', del).executeTakeFirst();
    for (const [workspaceId, n] of perWorkspace) {
      await trx
        .updateTable('tfe_state_heads')
        .set((eb) => ({ version_count: eb('version_count', '-', n) }))
        .where('workspace_id', '=', workspaceId)
        .execute();
    }
    return Number(res.numDeletedRows);
  }
}
