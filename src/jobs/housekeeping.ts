import type { Clock } from '../shared/clock.js';
import { addSeconds } from '../shared/clock.js';
import type { JobQueue } from './job-queue.js';

export const HOUSEKEEPING_JOB = 'core.housekeeping';
const EVERY_SECONDS = 3600;
const KEEP_DONE_SECONDS = 7 * 86400;

/** A product's share of housekeeping (removing what a crash left behind, for example). */
export type HousekeepingTask = (signal?: AbortSignal) => Promise<unknown>;

/**
 * Hourly, and once at every start: removes finished jobs older than a week, so the queue
 * table stays small, then runs the products' tasks. Runs as a durable job itself, and
 * schedules its next run before the tasks, so a failing task does not stop the hourly runs.
 */
export function housekeepingJob(deps: {
  jobs: JobQueue;
  clock: Clock;
  db: Parameters<JobQueue['enqueue']>[0];
  tasks?: HousekeepingTask[];
}) {
  const schedule = () =>
    deps.jobs.enqueue(deps.db, {
      kind: HOUSEKEEPING_JOB,
      dedupeKey: HOUSEKEEPING_JOB,
      runAt: addSeconds(deps.clock.now(), EVERY_SECONDS),
    });
  return {
    /**
     * Enqueues a run now (safe on every node at every start: nodes starting together share
     * one). Its own key, so the hourly run already queued does not swallow it.
     */
    async start(): Promise<void> {
      await deps.jobs.enqueue(deps.db, { kind: HOUSEKEEPING_JOB, dedupeKey: `${HOUSEKEEPING_JOB}@start` });
    },
    async handler(signal?: AbortSignal): Promise<void> {
      await deps.jobs.purgeFinished(addSeconds(deps.clock.now(), -KEEP_DONE_SECONDS));
      await schedule();
      for (const task of deps.tasks ?? []) await task(signal);
    },
  };
}
