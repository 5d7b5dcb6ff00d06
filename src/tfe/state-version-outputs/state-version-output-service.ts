import { DomainError, notFound } from '../../shared/errors.js';
import type { Actor } from '../identity/actor.js';
import type { Page, PageRequest } from '../pagination.js';
import { pageOffset } from '../pagination.js';
import type { StateVersionService } from '../state-versions/state-version-service.js';
import type { WorkspaceService } from '../workspaces/workspace-service.js';
import type { StateOutputRepo } from '../state-versions/state-output-repo.js';
import { assertBackingDataNotDeleted, presentOutput } from './state-version-output.js';
import type { StateVersionOutput } from './state-version-output.js';

export interface StateVersionOutputServiceDeps {
  repo: StateOutputRepo;
  versions: StateVersionService;
  workspaces: WorkspaceService;
}

/**
 * Text Terraform looks for before retrying a not-ready current-outputs call (it matches
 * the lower-case words "service unavailable" in the error; reference 6.2).
 */
export const OUTPUTS_NOT_READY_MESSAGE =
  'service unavailable: the outputs of the current state version are still being processed; retry shortly';

/**
 * The outputs API: one output, the outputs of a version (paged), and the outputs of a
 * workspace's current version. Outputs are written by the state versions module (from
 * `json-state-outputs` at create, or by the extraction job); this module only reads.
 */
export class StateVersionOutputService {
  constructor(private readonly deps: StateVersionOutputServiceDeps) {}

  /**
   * `GET /state-version-outputs/:id`; sensitive values included; needs state read access.
   * Refused (404) while its version's backing data is soft deleted, like the download.
   */
  async get(actor: Actor, id: string): Promise<StateVersionOutput> {
    const found = await this.deps.repo.findById(id);
    if (!found) throw notFound(`state version output ${id} not found`);
    await this.deps.workspaces.authorize(actor, found.workspaceId, 'read-state-versions').catch((err: unknown) => {
      throw hidden(err) ? notFound(`state version output ${id} not found`) : err;
    });
    assertBackingDataNotDeleted({ id: found.output.stateVersionId, status: found.versionStatus });
    return presentOutput(found.output, 'show');
  }

  /**
   * `GET /state-versions/:id/outputs`: a page of the version's outputs in file order; 404 while the backing data is
   * deleted.
   */
  async listForVersion(actor: Actor, stateVersionId: string, page: PageRequest): Promise<Page<StateVersionOutput>> {
    const v = await this.deps.versions.get(actor, stateVersionId);
    assertBackingDataNotDeleted(v);
    const { items, total } = await this.deps.repo.listByVersion(v.id, page.size, pageOffset(page));
    return {
      items: items.map((o) => presentOutput(o, 'version-list')),
      number: page.number,
      size: page.size,
      totalCount: total,
    };
  }

  /**
   * `GET /workspaces/:id/current-state-version-outputs`: needs only output read access;
   * sensitive values are null. Unavailable (503) while the current version's outputs are
   * still being extracted, so Terraform waits instead of reading an empty set.
   */
  async current(actor: Actor, workspaceId: string): Promise<StateVersionOutput[]> {
    const ws = await this.deps.workspaces.authorize(actor, workspaceId, 'read-state-outputs');
    const currentId = (await this.deps.versions.currentIds([ws.id])).get(ws.id);
    const [v] = currentId ? await this.deps.versions.versionsById([currentId]) : [];
    if (!v) throw notFound(`workspace ${workspaceId} has no current state version`);
    // A current version cannot be soft deleted (backingDataTransition); checked all the same.
    assertBackingDataNotDeleted(v);
    const outputs = await this.deps.repo.allByVersion(v.id);
    if (outputs.length === 0 && !v.resourcesProcessed) throw new DomainError('unavailable', OUTPUTS_NOT_READY_MESSAGE);
    return outputs.map((o) => presentOutput(o, 'current'));
  }
}

function hidden(err: unknown): boolean {
  return err instanceof DomainError && (err.kind === 'not_found' || err.kind === 'forbidden');
}
