import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { pingDatabase } from '../db/database.js';
import type { Db } from '../db/database.js';
import { pendingMigrations } from '../db/migrate.js';
import type { JobQueue } from '../jobs/job-queue.js';
import type { UploadAdmission } from '../blob/upload-admission.js';
import type { Metrics } from '../shared/metrics.js';

/** Liveness, readiness and Prometheus metrics, outside both products. */
export function registerHealthRoutes(
  app: FastifyInstance,
  deps: {
    db: Db;
    jobs: JobQueue;
    metrics: Metrics;
    metricsToken?: string;
    uploads?: UploadAdmission;
    /** This process's number among the cluster's workers (`--workers`), shown by /healthz. */
    worker?: number;
  },
): void {
  const health = deps.worker === undefined ? { status: 'ok' } : { status: 'ok', worker: deps.worker };
  app.get('/healthz', async () => health);

  app.get('/readyz', async (_request, reply) => {
    try {
      await pingDatabase(deps.db);
    } catch {
      return reply.status(503).send({ status: 'unavailable', database: 'unreachable' });
    }
    const pending = await pendingMigrations(deps.db).catch(() => ['unknown']);
    if (pending.length > 0)
      return reply.status(503).send({ status: 'unavailable', database: 'ok', pending_migrations: pending });
    // Low disk space stops uploads only: reads, locks and certificates go on, so the node stays ready.
    const storage = await storageOf(deps.uploads);
    return { status: 'ok', database: 'ok', migrations: 'applied', ...(storage ? { storage } : {}) };
  });

  deps.metrics.onScrape(async () => {
    const depth = await deps.jobs.depth();
    for (const [status, n] of Object.entries(depth)) deps.metrics.jobQueueDepth.set({ status }, n);
  });

  const expected = deps.metricsToken ? Buffer.from(`Bearer ${deps.metricsToken}`) : undefined;
  app.get('/metrics', async (request, reply) => {
    if (expected) {
      const given = Buffer.from(request.headers.authorization ?? '');
      if (given.length !== expected.length || !timingSafeEqual(given, expected))
        return reply
          .status(401)
          .header('www-authenticate', 'Bearer realm="metrics"')
          .send({ errors: ['/metrics needs Authorization: Bearer <metrics_token>'] });
    }
    const type = deps.metrics.registry.contentType;
    // A worker of a cluster answers for every worker (decision 0047).
    if (deps.metrics.cluster) return reply.type(type).send(await deps.metrics.cluster());
    await deps.metrics.refresh();
    return reply.type(type).send(await deps.metrics.registry.metrics());
  });
}

async function storageOf(uploads: UploadAdmission | undefined): Promise<Record<string, unknown> | undefined> {
  const s = await uploads?.status().catch(() => undefined);
  if (!s) return undefined;
  return {
    uploads: s.acceptingUploads ? 'accepted' : 'refused: free space below min_free_space',
    data_dir_free_bytes: s.freeBytes,
    min_free_bytes: s.minFreeBytes,
    uploads_in_progress: s.uploadsInProgress,
    max_concurrent_uploads: s.maxConcurrentUploads,
  };
}
