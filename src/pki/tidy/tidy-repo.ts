import type { Kysely, Selectable, Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { UnitsOfWork } from '../../db/unit-of-work.js';
import type { PkiTidyTable } from '../../db/schema-pki-tidy.js';
import { defaultAutoTidyConfig, zeroCounts } from './tidy.js';
import type { AutoTidyConfig, TidyCounts, TidyParams, TidyState, TidyStatus } from './tidy.js';

export type Executor = Kysely<Database> | Transaction<Database>;

const ACTIVE: TidyState[] = ['Running', 'Cancelling'];

function toStatus(r: Selectable<PkiTidyTable>): TidyStatus {
  return {
    state: r.state as TidyState,
    runId: r.run_id,
    jobId: r.job_id,
    params: r.params === null ? null : (JSON.parse(r.params) as TidyParams),
    startedAt: r.started_at === null ? null : new Date(r.started_at),
    finishedAt: r.finished_at === null ? null : new Date(r.finished_at),
    message: r.message,
    error: r.error,
    counts: { ...zeroCounts(), ...(JSON.parse(r.counts) as Partial<TidyCounts>) },
    lastAutoTidyFinished: r.last_auto_tidy_at === null ? null : new Date(r.last_auto_tidy_at),
  };
}

function toConfig(json: string | null): AutoTidyConfig {
  const base = defaultAutoTidyConfig();
  if (json === null) return base;
  const stored = JSON.parse(json) as Partial<AutoTidyConfig>;
  return { ...base, ...stored, flags: { ...base.flags, ...stored.flags } };
}

/** SQL of the per-mount tidy row (pki_tidy): auto-tidy configuration and run status. */
export class TidyRepo {
  constructor(private readonly deps: { db: Kysely<Database>; units: UnitsOfWork }) {}

  get executor(): Executor {
    return this.deps.db;
  }

  /** A read-write unit of work. */
  transaction<T>(fn: (tx: Executor) => Promise<T>): Promise<T> {
    return this.deps.units.readWrite(fn);
  }

  async ensureRow(ex: Executor, mountId: string, now: Date): Promise<void> {
    await ex
      .insertInto('pki_tidy')
      .values({ mount_id: mountId, state: 'Inactive', counts: '{}', auto_enabled: 0, updated_at: now.toISOString() })
      .onConflict((oc) => oc.column('mount_id').doNothing())
      .execute();
  }

  async status(ex: Executor, mountId: string): Promise<TidyStatus | undefined> {
    const r = await ex.selectFrom('pki_tidy').selectAll().where('mount_id', '=', mountId).executeTakeFirst();
    return r ? toStatus(r) : undefined;
  }

  /** Starts a run unless one is active (the conditional write is what keeps one run per mount across nodes). */
  async tryStart(
    ex: Executor,
    mountId: string,
    run: { runId: string; params: TidyParams; at: Date },
  ): Promise<boolean> {
    const at = run.at.toISOString();
    const r = await ex
      .updateTable('pki_tidy')
      .set({
        state: 'Running',
        run_id: run.runId,
        job_id: null,
        params: JSON.stringify(run.params),
        started_at: at,
        finished_at: null,
        message: null,
        error: null,
        counts: '{}',
        last_auto_tidy_at: at,
        updated_at: at,
      })
      .where('mount_id', '=', mountId)
      .where('state', 'not in', ACTIVE)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  async setJob(ex: Executor, mountId: string, runId: string, jobId: string): Promise<void> {
    await ex
      .updateTable('pki_tidy')
      .set({ job_id: jobId })
      .where('mount_id', '=', mountId)
      .where('run_id', '=', runId)
      .execute();
  }

  /** Records progress of a run still Running; false when it was asked to cancel or is no longer the mount's run. */
  async progress(
    ex: Executor,
    mountId: string,
    runId: string,
    counts: TidyCounts,
    message: string | null,
    now: Date,
  ): Promise<boolean> {
    const r = await ex
      .updateTable('pki_tidy')
      .set({ counts: JSON.stringify(counts), message, updated_at: now.toISOString() })
      .where('mount_id', '=', mountId)
      .where('run_id', '=', runId)
      .where('state', '=', 'Running')
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  /** Asks the active run to stop at its next checkpoint; false when nothing runs. */
  async requestCancel(ex: Executor, mountId: string, now: Date): Promise<boolean> {
    const r = await ex
      .updateTable('pki_tidy')
      .set({ state: 'Cancelling', updated_at: now.toISOString() })
      .where('mount_id', '=', mountId)
      .where('state', '=', 'Running')
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  /** Ends the run `runId` (if still active) in its final state. */
  async finish(
    ex: Executor,
    mountId: string,
    runId: string,
    end: {
      state: 'Finished' | 'Error' | 'Cancelled';
      at: Date;
      counts: TidyCounts;
      message: string | null;
      error: string | null;
      lastAutoTidy: Date | undefined;
    },
  ): Promise<boolean> {
    const at = end.at.toISOString();
    const r = await ex
      .updateTable('pki_tidy')
      .set({
        state: end.state,
        finished_at: at,
        counts: JSON.stringify(end.counts),
        message: end.message,
        error: end.error,
        ...(end.lastAutoTidy ? { last_auto_tidy_at: end.lastAutoTidy.toISOString() } : {}),
        updated_at: at,
      })
      .where('mount_id', '=', mountId)
      .where('run_id', '=', runId)
      .where('state', 'in', ACTIVE)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  async autoConfig(ex: Executor, mountId: string): Promise<AutoTidyConfig> {
    const r = await ex.selectFrom('pki_tidy').select('auto_config').where('mount_id', '=', mountId).executeTakeFirst();
    return toConfig(r?.auto_config ?? null);
  }

  /** Writes the auto-tidy configuration; `resetLastRun` restarts the interval (auto-tidy was just enabled). */
  async saveAutoConfig(
    ex: Executor,
    mountId: string,
    config: AutoTidyConfig,
    now: Date,
    resetLastRun: boolean,
  ): Promise<void> {
    await ex
      .updateTable('pki_tidy')
      .set({
        auto_config: JSON.stringify(config),
        auto_enabled: config.enabled ? 1 : 0,
        ...(resetLastRun ? { last_auto_tidy_at: now.toISOString() } : {}),
        updated_at: now.toISOString(),
      })
      .where('mount_id', '=', mountId)
      .execute();
  }

  /** Mounts with auto-tidy enabled, with what deciding whether a run is due needs. */
  async autoEnabled(
    ex: Executor,
  ): Promise<{ mountId: string; config: AutoTidyConfig; state: TidyState; lastAutoTidy: Date | null }[]> {
    const rows = await ex
      .selectFrom('pki_tidy')
      .select(['mount_id', 'auto_config', 'state', 'last_auto_tidy_at'])
      .where('auto_enabled', '=', 1)
      .execute();
    return rows.map((r) => ({
      mountId: r.mount_id,
      config: toConfig(r.auto_config),
      state: r.state as TidyState,
      lastAutoTidy: r.last_auto_tidy_at === null ? null : new Date(r.last_auto_tidy_at),
    }));
  }

  /** Every mount's stored auto-tidy configuration. */
  async autoConfigs(ex: Executor): Promise<{ mountId: string; config: AutoTidyConfig }[]> {
    const rows = await ex
      .selectFrom('pki_tidy')
      .select(['mount_id', 'auto_config'])
      .where('auto_config', 'is not', null)
      .execute();
    return rows.map((r) => ({ mountId: r.mount_id, config: toConfig(r.auto_config) }));
  }

  async delete(ex: Executor, mountId: string): Promise<void> {
    await ex.deleteFrom('pki_tidy').where('mount_id', '=', mountId).execute();
  }
}
