import { conflict, invalid, notFound } from '../../shared/errors.js';
import type { Actor } from '../identity/actor.js';
import { diffInWorker } from './state-diff-worker.js';
import type { StateDiff } from './state-diff.js';
import type { StateVersionService } from './state-version-service.js';
import type { StateVersion } from './state-version.js';

export interface StateDiffServiceDeps {
  versions: StateVersionService;
}

export interface StateDiffResult {
  version: StateVersion;
  against: StateVersion;
  diff: StateDiff;
}

/**
 * `GET /state-versions/:id/diff?against=:other` (beyond HCP Terraform; see
 * docs/state-diff.md). Both versions must belong to one workspace the actor may read
 * state of. The two states are streamed from storage one after the other into a
 * worker thread (see state-diff.ts), so neither is held in memory and the event loop stays free.
 */
export class StateDiffService {
  constructor(private readonly deps: StateDiffServiceDeps) {}

  async diff(actor: Actor, id: string, againstId: string, signal?: AbortSignal): Promise<StateDiffResult> {
    const version = await this.deps.versions.get(actor, id);
    const against = await this.deps.versions.get(actor, againstId).catch(() => {
      throw notFound(`state version ${againstId} not found`, '/query/against');
    });
    if (against.workspaceId !== version.workspaceId) {
      throw invalid(
        `state version ${againstId} belongs to another workspace; only versions of one workspace can be compared`,
        '/query/against',
      );
    }
    const beforeSha = contentOf(against);
    const afterSha = contentOf(version);
    // One diff at a time on this node: each holds a digest of a whole state in memory.
    return this.exclusive(async () => {
      const r = await diffInWorker(
        await this.deps.versions.content(beforeSha),
        () => this.deps.versions.content(afterSha),
        { signal },
      );
      if (!r.ok) throw unreadable(r.which === 'against' ? against : version, r.error);
      return { version, against, diff: r.diff };
    });
  }

  private tail: Promise<unknown> = Promise.resolve();

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.tail.then(fn, fn);
    this.tail = run.catch(() => undefined);
    return run;
  }
}

function contentOf(v: StateVersion): string {
  if (v.status === 'pending' || v.status === 'discarded')
    throw conflict(`state version ${v.id} has no state content (status ${v.status})`);
  if (v.status !== 'finalized' || v.stateSha256 === null)
    throw conflict(`the backing data of state version ${v.id} is not available (status ${v.status})`);
  return v.stateSha256;
}

function unreadable(v: StateVersion, error: string) {
  return invalid(`state version ${v.id} cannot be compared: ${error}`);
}
