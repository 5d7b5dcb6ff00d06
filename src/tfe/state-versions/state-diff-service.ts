import type { BlobStore } from '../../blob/blob-store.js';
import { conflict, invalid, notFound } from '../../shared/errors.js';
import type { Actor } from '../identity/actor.js';
import { diffDigests, digestState } from './state-diff.js';
import type { StateDiff, StateDigest } from './state-diff.js';
import type { StateVersionService } from './state-version-service.js';
import type { StateVersion } from './state-version.js';

export interface StateDiffServiceDeps {
  versions: StateVersionService;
  blobs: BlobStore;
}

export interface StateDiffResult {
  version: StateVersion;
  against: StateVersion;
  diff: StateDiff;
}

/**
 * `GET /state-versions/:id/diff?against=:other` (beyond HCP Terraform; see
 * docs/state-diff.md). Both versions must belong to one workspace the actor may read
 * state of. The two states are streamed from the blob store one after the other and
 * reduced to digests, so neither is held in memory.
 */
export class StateDiffService {
  constructor(private readonly deps: StateDiffServiceDeps) {}

  async diff(actor: Actor, id: string, againstId: string, signal?: AbortSignal): Promise<StateDiffResult> {
    const version = await this.deps.versions.get(actor, id);
    const against = await this.deps.versions.get(actor, againstId).catch(() => {
      throw notFound(`state version ${againstId} not found`, '/query/against');
    });
    if (against.workspaceId !== version.workspaceId) {
      throw invalid(`state version ${againstId} belongs to another workspace; only versions of one workspace can be compared`, '/query/against');
    }
    const before = await this.load(against, signal);
    const after = await this.load(version, signal);
    return { version, against, diff: diffDigests(before, after) };
  }

  private async load(v: StateVersion, signal?: AbortSignal): Promise<StateDigest> {
    if (v.status === 'pending' || v.status === 'discarded') throw conflict(`state version ${v.id} has no state content (status ${v.status})`);
    if (v.status !== 'finalized' || v.stateSha256 === null) throw conflict(`the backing data of state version ${v.id} is not available (status ${v.status})`);
    const r = await digestState(await this.deps.blobs.get(v.stateSha256), { signal });
    if (!r.ok) throw invalid(`state version ${v.id} cannot be compared: ${r.error}`);
    return r.digest;
  }
}
