import type { Clock } from '../shared/clock.js';
import { addSeconds } from '../shared/clock.js';
import type { JobQueue } from './job-queue.js';

export const HOUSEKEEPING_JOB = 'core.housekeeping';
const EVERY_SECONDS = 3600;
const KEEP_DONE_SECONDS = 7 * 86400;

/**
 * Hourly: removes finished jobs older than a week, so the queue table stays small.
 * Runs as a durable job itself, and schedules its next run before it returns.
 */
export function housekeepingJob(deps: { jobs: JobQueue; clock: Clock; db: Parameters<JobQueue['enqueue']>[0] }) {
  const schedule = () =>
    deps.jobs.enqueue(deps.db, {
      kind: HOUSEKEEPING_JOB,
      dedupeKey: HOUSEKEEPING_JOB,
      runAt: addSeconds(deps.clock.now(), EVERY_SECONDS),
    });
  return {
    /** Enqueues the first run unless one is already queued (safe on every node at every start). */
    async start(): Promise<void> {
      await deps.jobs.enqueue(deps.db, { kind: HOUSEKEEPING_JOB, dedupeKey: HOUSEKEEPING_JOB });
    },
    async handler(): Promise<void> {
      await deps.jobs.purgeFinished(addSeconds(deps.clock.now(), -KEEP_DONE_SECONDS));
      await schedule();
    },
  };
}
