import type { Kysely, Selectable } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { TfeStateVersionOutputsTable } from '../../db/schema-tfe-state.js';
import { cipherOf, maybeSealText, noDataKeys, openText } from '../../secrets/content-cipher.js';
import type { ContentSealing, DataKeyLookup } from '../../secrets/content-cipher.js';
import type { StateChanges } from './state-changes.js';
import type { StateVersionOutput, StateVersionStatus } from './state-version.js';

/** A database handle or the caller's transaction (a Transaction is a Kysely). */
type Executor = Kysely<Database>;

export interface NewOutput {
  id: string;
  name: string;
  sensitive: boolean;
  type: string;
  detailedType: unknown;
  value: unknown;
}

const json = (s: string | null): unknown => (s === null ? null : (JSON.parse(s) as unknown));

/**
 * All SQL of `tfe_state_version_outputs`: the outputs of state versions, written by the
 * state versions module (at create, or by the extraction job), values sealed, and read by
 * it and by the outputs API.
 */
export class StateOutputRepo {
  constructor(
    private readonly deps: {
      db: Kysely<Database>;
      /** Told which workspaces' outputs a write touched. */
      changes?: StateChanges;
      /** Output values are sealed with it, and stored values opened (secrets/content-cipher.ts). */
      sealing?: ContentSealing;
    },
  ) {}

  get #lookup(): DataKeyLookup {
    return this.deps.sealing?.lookup ?? noDataKeys;
  }

  /** The one mapping of a row to an output (its value opened). */
  async #toOutput(r: Selectable<TfeStateVersionOutputsTable>): Promise<StateVersionOutput> {
    return {
      id: r.id,
      stateVersionId: r.state_version_id,
      name: r.name,
      sensitive: r.sensitive === 1,
      type: r.type,
      detailedType: json(r.detailed_type),
      value: json(r.value === null ? null : await openText(r.value, this.#lookup, cipherOf(this.deps.sealing))),
    };
  }

  /** Replaces the outputs of a version with these, in this order. */
  async replace(trx: Executor, version: { id: string; workspaceId: string }, outputs: NewOutput[]): Promise<void> {
    this.deps.changes?.changed([version.workspaceId]);
    await trx.deleteFrom('tfe_state_version_outputs').where('state_version_id', '=', version.id).execute();
    await this.insertNew(trx, [{ version, outputs }]);
  }

  /** The outputs of versions that have none yet (new ones), in one statement. */
  async insertNew(
    trx: Executor,
    of: ReadonlyArray<{ version: { id: string; workspaceId: string }; outputs: readonly NewOutput[] }>,
  ): Promise<void> {
    const rows = of.flatMap(({ version, outputs }) =>
      outputs.map((o, i) => ({
        id: o.id,
        state_version_id: version.id,
        position: i,
        name: o.name,
        sensitive: o.sensitive ? 1 : 0,
        type: o.type,
        detailed_type: o.detailedType === null || o.detailedType === undefined ? null : JSON.stringify(o.detailedType),
        value: maybeSealText(this.deps.sealing, JSON.stringify(o.value ?? null)),
      })),
    );
    if (rows.length === 0) return;
    this.deps.changes?.changed([...new Set(of.map((o) => o.version.workspaceId))]);
    await trx.insertInto('tfe_state_version_outputs').values(rows).execute();
  }

  /** Deletes the outputs of these versions (the caller, which deletes or purges them, reports the change). */
  async deleteOfVersions(trx: Executor, versionIds: string[]): Promise<void> {
    if (versionIds.length === 0) return;
    await trx.deleteFrom('tfe_state_version_outputs').where('state_version_id', 'in', versionIds).execute();
  }

  /** Deletes the outputs of every version of these workspaces (the caller reports the change). */
  async deleteOfWorkspaces(trx: Executor, workspaceIds: string[]): Promise<void> {
    const ids = trx.selectFrom('tfe_state_versions').select('id').where('workspace_id', 'in', workspaceIds);
    await trx.deleteFrom('tfe_state_version_outputs').where('state_version_id', 'in', ids).execute();
  }

  async hasOutputs(ex: Executor, stateVersionId: string): Promise<boolean> {
    const r = await ex
      .selectFrom('tfe_state_version_outputs')
      .select('id')
      .where('state_version_id', '=', stateVersionId)
      .limit(1)
      .executeTakeFirst();
    return r !== undefined;
  }

  /** Output ids per state version, in file order. */
  async outputIds(ex: Executor, stateVersionIds: string[]): Promise<Map<string, string[]>> {
    const out = new Map<string, string[]>(stateVersionIds.map((id) => [id, []]));
    if (stateVersionIds.length === 0) return out;
    const rows = await ex
      .selectFrom('tfe_state_version_outputs')
      .select(['id', 'state_version_id'])
      .where('state_version_id', 'in', stateVersionIds)
      .orderBy('state_version_id')
      .orderBy('position')
      .execute();
    for (const r of rows) out.get(r.state_version_id)?.push(r.id);
    return out;
  }

  /** The outputs of these versions, per version in file order. */
  async outputs(ex: Executor, stateVersionIds: string[]): Promise<StateVersionOutput[]> {
    if (stateVersionIds.length === 0) return [];
    const rows = await ex
      .selectFrom('tfe_state_version_outputs')
      .selectAll()
      .where('state_version_id', 'in', stateVersionIds)
      .orderBy('state_version_id')
      .orderBy('position')
      .execute();
    return Promise.all(rows.map((r) => this.#toOutput(r)));
  }

  /** One output with the workspace that owns its version and that version's status. */
  async findById(
    id: string,
  ): Promise<{ output: StateVersionOutput; workspaceId: string; versionStatus: StateVersionStatus } | undefined> {
    const r = await this.deps.db
      .selectFrom('tfe_state_version_outputs as o')
      .innerJoin('tfe_state_versions as v', 'v.id', 'o.state_version_id')
      .selectAll('o')
      .select(['v.workspace_id', 'v.status'])
      .where('o.id', '=', id)
      .executeTakeFirst();
    return r
      ? { output: await this.#toOutput(r), workspaceId: r.workspace_id, versionStatus: r.status as StateVersionStatus }
      : undefined;
  }

  /** A page of a version's outputs in file order, with the total count. */
  async listByVersion(
    stateVersionId: string,
    limit: number,
    offset: number,
  ): Promise<{ items: StateVersionOutput[]; total: number }> {
    const q = this.deps.db.selectFrom('tfe_state_version_outputs').where('state_version_id', '=', stateVersionId);
    const [rows, count] = await Promise.all([
      q.selectAll().orderBy('position').orderBy('id').limit(limit).offset(offset).execute(),
      q.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow(),
    ]);
    return { items: await Promise.all(rows.map((r) => this.#toOutput(r))), total: Number(count.n) };
  }

  /** All outputs of a version in file order. */
  async allByVersion(stateVersionId: string): Promise<StateVersionOutput[]> {
    const rows = await this.deps.db
      .selectFrom('tfe_state_version_outputs')
      .selectAll()
      .where('state_version_id', '=', stateVersionId)
      .orderBy('position')
      .orderBy('id')
      .execute();
    return Promise.all(rows.map((r) => this.#toOutput(r)));
  }
}
