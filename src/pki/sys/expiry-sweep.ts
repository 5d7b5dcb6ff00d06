import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../../db/schema.js';
import type { JobQueue } from '../../jobs/job-queue.js';

/**
 * Expired tokens and leases are refused at once (every request checks the expiry), but
 * their rows, and the revocation of the leases an expired token obtained, are handled by
 * a sweep job. Whoever creates or extends something that expires schedules one sweep for
 * the hour in which it expires; the dedupe key keeps that to one job per hour, and hours
 * in which nothing expires cost nothing.
 */
export const EXPIRY_SWEEP_JOB = 'pki.expiry-sweep';

const BUCKET_SECONDS = 3600;

/** The sweep hour in which something expiring at `expiresAt` is swept. */
export function expiryBucket(expiresAt: Date): number {
  return Math.ceil(expiresAt.getTime() / 1000 / BUCKET_SECONDS);
}

export async function scheduleExpirySweep(
  jobs: JobQueue,
  ex: Kysely<Database> | Transaction<Database>,
  expiresAt: Date,
): Promise<void> {
  const bucket = expiryBucket(expiresAt);
  await jobs.enqueueUnlessQueued(ex, {
    kind: EXPIRY_SWEEP_JOB,
    runAt: new Date((bucket * BUCKET_SECONDS + 1) * 1000),
    dedupeKey: `${EXPIRY_SWEEP_JOB}:${bucket}`,
  });
}
