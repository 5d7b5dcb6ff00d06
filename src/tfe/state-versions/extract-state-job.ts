import type { BlobStore } from '../../blob/blob-store.js';
import { extractInWorker } from './extract-worker.js';
import { openStateContent } from './state-content.js';
import { extractState } from './state-extract.js';
import type { StateRepos } from './state-repos.js';
import { toNewOutputs } from './state-version-service.js';

export interface ExtractStateJobDeps {
  repos: StateRepos;
  blobs: BlobStore;
}

/**
 * The `tfe.extract-state` job: reads a finalized version's raw state from the blob store
 * in a worker thread and records resources, modules, providers, billable RUM count and
 * outputs, then sets `resources-processed`. Idempotent: a rerun overwrites the same
 * fields. Outputs already given as `json-state-outputs` at creation are kept (they carry
 * the client's own types). Content that is not a readable state (for example an
 * encrypted envelope) still ends as processed, with the derived fields left null.
 */
/** States up to this size are extracted on the event loop instead of in a worker thread. */
export const INLINE_EXTRACT_MAX_BYTES = 256 * 1024;

export function extractStateJob(deps: ExtractStateJobDeps) {
  return async (payload: unknown, ctx: { signal: AbortSignal }): Promise<void> => {
    const id = (payload as { stateVersionId?: unknown } | null)?.stateVersionId;
    if (typeof id !== 'string') return;
    const db = deps.repos.versions.db;
    const v = await deps.repos.versions.findById(db, id);
    if (!v || v.stateSha256 === null || v.resourcesProcessed) return;
    // Starting a thread costs more than reading a small state; those are read here (a few ms).
    const source = await openStateContent(deps.repos.blobs, deps.blobs, v.stateSha256);
    const result =
      v.size !== null && v.size <= INLINE_EXTRACT_MAX_BYTES
        ? await extractState(source, { signal: ctx.signal })
        : await extractInWorker(source, { signal: ctx.signal });
    if (!result.ok) {
      // Unreadable content is final: record why and stop, rather than retrying forever.
      await deps.repos.versions.markProcessed(db, id, result.error);
      return;
    }
    const x = result.value;
    await deps.repos.units.readWrite(async (trx) => {
      const saved = await deps.repos.versions.saveExtract(trx, id, {
        size: x.size,
        stateFormatVersion: x.stateVersion,
        terraformVersion: x.terraformVersion,
        // Lists extracted in a worker arrive as JSON text, stored as they are (reading x.resources would parse them).
        lists: x.json ? { json: x.json } : { resources: x.resources, modules: x.modules, providers: x.providers },
        billableRumCount: x.billableRumCount,
      });
      // Permanently deleted while it was being read: its outputs must not come back.
      if (!saved) return;
      if (!(await deps.repos.outputs.hasOutputs(trx, id)))
        await deps.repos.outputs.replace(trx, v, toNewOutputs(x.outputs));
    });
  };
}
