import type { Kysely } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { Actor } from '../identity/actor.js';
import type { Page, PageRequest } from '../pagination.js';
import type { Workspace, WorkspaceInput, WorkspaceNeed, WorkspaceView } from './workspace.js';

/**
 * Answers whether the latest state version of a workspace is still pending (created
 * without content and not yet uploaded). Set by the composition root once the state
 * versions service exists; while it says true, a normal unlock is refused with
 * "latest state version is still pending" (reference 7.4) and force-unlock still works.
 */
export type PendingStateVersionCheck = (workspaceId: string) => Promise<boolean>;

/**
 * What the state versions module plugs into workspaces (set by the composition root,
 * src/tfe/tfe-services.ts, with `workspaces.setStateVersionHooks(...)`):
 *  - `latestIsPending(workspaceId)`: true while the latest state version is pending;
 *    a normal unlock is then refused (400/503 "latest state version is still pending",
 *    reference 7.4); force-unlock still works.
 *  - `currentIds(workspaceIds)`: current state version id per workspace (absent = none),
 *    for the `current-state-version` relationship of workspace documents.
 *  - `onWorkspacesDeleted(executor, workspaceIds)`: runs inside the transaction that
 *    deletes workspaces (directly or through their organization) so their state goes too.
 */
export interface StateVersionHooks {
  latestIsPending: PendingStateVersionCheck;
  currentIds(workspaceIds: string[]): Promise<Map<string, string>>;
  onWorkspacesDeleted(executor: Kysely<Database>, workspaceIds: string[]): Promise<void>;
}

/** A workspace addressed by id (`ws-…`) or by organization and name. */
export type WorkspaceRef = { id: string } | { organization: string; name: string };

/**
 * Workspaces: CRUD, lookups, locking, and the authorization other TFE modules use.
 *
 * For the state versions module:
 *   - `authorize(actor, workspaceId, need)` → Workspace, or throws not_found (unknown
 *     workspace, or the actor may not do `need`: unauthorized reads look like missing
 *     resources). `need` 'read-and-write-state-versions' also refuses organization tokens.
 *   - `assertWritable(actor, ws)` throws conflict (409) unless `ws` is locked by `actor`
 *     (the user, or the team of a team token).
 *   - `setStateVersionHooks(hooks)` plugs in the pending-upload rule for unlock, the
 *     current state version lookup and cascade on delete (StateVersionHooks above).
 */
export class WorkspaceService {
  setStateVersionHooks(_hooks: Partial<StateVersionHooks>): void {
    throw new Error('not implemented');
  }

  async getById(_actor: Actor, _id: string): Promise<WorkspaceView> {
    throw new Error('not implemented');
  }

  async getByName(_actor: Actor, _organization: string, _name: string): Promise<WorkspaceView> {
    throw new Error('not implemented');
  }

  async list(_actor: Actor, _organization: string, _opts: { search?: string; page: PageRequest }): Promise<Page<WorkspaceView>> {
    throw new Error('not implemented');
  }

  async create(_actor: Actor, _organization: string, _input: WorkspaceInput): Promise<WorkspaceView> {
    throw new Error('not implemented');
  }

  async update(_actor: Actor, _ref: WorkspaceRef, _input: WorkspaceInput): Promise<WorkspaceView> {
    throw new Error('not implemented');
  }

  async delete(_actor: Actor, _ref: WorkspaceRef): Promise<void> {
    throw new Error('not implemented');
  }

  async lock(_actor: Actor, _id: string, _reason: string | null): Promise<WorkspaceView> {
    throw new Error('not implemented');
  }

  async unlock(_actor: Actor, _id: string): Promise<WorkspaceView> {
    throw new Error('not implemented');
  }

  async forceUnlock(_actor: Actor, _id: string): Promise<WorkspaceView> {
    throw new Error('not implemented');
  }

  async authorize(_actor: Actor, _workspaceId: string, _need: WorkspaceNeed): Promise<Workspace> {
    throw new Error('not implemented');
  }

  assertWritable(_actor: Actor, _ws: Workspace): void {
    throw new Error('not implemented');
  }

}
