import type { Kysely, Selectable } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { TfeStateVersionOutputsTable } from '../../db/schema-tfe-state.js';
import { noDataKeys, openText } from '../../secrets/content-cipher.js';
import type { DataKeyLookup } from '../../secrets/content-cipher.js';
import type { StateVersionOutput, StateVersionStatus } from './state-version-output.js';

const json = (s: string | null): unknown => (s === null ? null : (JSON.parse(s) as unknown));

/** Reads of the outputs table (rows are written, values sealed, by the state versions module). */
export class StateVersionOutputRepo {
  /** `lookup` finds the data keys that open sealed values. */
  constructor(private readonly deps: { db: Kysely<Database>; lookup?: DataKeyLookup }) {}

  private async toOutput(r: Selectable<TfeStateVersionOutputsTable>): Promise<StateVersionOutput> {
    return {
      id: r.id,
      stateVersionId: r.state_version_id,
      name: r.name,
      sensitive: r.sensitive === 1,
      type: r.type,
      detailedType: json(r.detailed_type),
      value: json(r.value === null ? null : await openText(r.value, this.deps.lookup ?? noDataKeys)),
    };
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
      ? { output: await this.toOutput(r), workspaceId: r.workspace_id, versionStatus: r.status as StateVersionStatus }
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
    return { items: await Promise.all(rows.map((r) => this.toOutput(r))), total: Number(count.n) };
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
    return Promise.all(rows.map((r) => this.toOutput(r)));
  }
}
