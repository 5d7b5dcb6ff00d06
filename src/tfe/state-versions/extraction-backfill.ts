import type { EnqueueOptions, JobQueue } from '../../jobs/job-queue.js';
import type { StateRepos } from './state-repos.js';
import { EXTRACT_STATE_JOB } from './state-version-service.js';

/** The extraction job of one version; the dedupe key keeps one queued job per version across nodes. */
export function extractionJob(stateVersionId: string): EnqueueOptions {
  return { kind: EXTRACT_STATE_JOB, payload: { stateVersionId }, dedupeKey: `${EXTRACT_STATE_JOB}:${stateVersionId}` };
}

/**
 * Enqueues extraction for every finalized version that has content but was never
 * processed: versions stored before extraction existed, or whose job was lost. Run at
 * start; safe on several nodes at once (deduplicated) and cheap when nothing is missing.
 * Returns the number of jobs enqueued.
 */
export async function enqueueMissingExtractions(
  deps: { repos: StateRepos; jobs: JobQueue },
  batch = 500,
): Promise<number> {
  let after = '';
  let enqueued = 0;
  for (;;) {
    const ids = await deps.repos.versions.unprocessedIds(deps.repos.versions.db, after, batch);
    if (ids.length === 0) return enqueued;
    await deps.repos.units.readWrite(async (trx) => {
      for (const id of ids) if ((await deps.jobs.enqueue(trx, extractionJob(id))) !== undefined) enqueued++;
    });
    after = ids[ids.length - 1] as string;
  }
}
