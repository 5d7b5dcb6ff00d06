import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** One process's metrics as plain data (what prom-client's cluster aggregation adds up). */
export type MetricsSnapshot = Awaited<ReturnType<Registry['getMetricsAsJSON']>>;

/** The process's Prometheus metrics. One instance per server, built in deps.ts. */
export class Metrics {
  readonly registry = new Registry();
  readonly httpRequests = new Counter({
    name: 'strongroom_http_requests_total',
    help: 'HTTP requests by route, method and status code.',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });
  readonly httpDuration = new Histogram({
    name: 'strongroom_http_request_duration_seconds',
    help: 'HTTP request latency by route, method and status code.',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [this.registry],
  });
  readonly jobsCompleted = new Counter({
    name: 'strongroom_jobs_completed_total',
    help: 'Jobs finished successfully, by kind.',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });
  readonly jobsFailed = new Counter({
    name: 'strongroom_jobs_failed_total',
    help: 'Job attempts that failed, by kind and outcome (retry or dead).',
    labelNames: ['kind', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly jobQueueDepth = new Gauge({
    name: 'strongroom_job_queue_depth',
    help: 'Jobs in the durable queue by status (read from the database at scrape time).',
    labelNames: ['status'] as const,
    // Read from the shared database: every worker reports the same value (decision 0047).
    aggregator: 'max',
    registers: [this.registry],
  });

  readonly pkiCertificatesStored = new Gauge({
    name: 'strongroom_pki_certificates_stored',
    help:
      'Certificates stored in a PKI mount (mounts with publish_stored_certificate_count_metrics in ' +
      'config/auto-tidy).',
    labelNames: ['mount'] as const,
    // Read from the shared database: every worker reports the same value (decision 0047).
    aggregator: 'max',
    registers: [this.registry],
  });
  readonly pkiRevokedCertificatesStored = new Gauge({
    name: 'strongroom_pki_revoked_certificates_stored',
    help:
      'Revoked certificates stored in a PKI mount (mounts with publish_stored_certificate_count_metrics ' +
      'in config/auto-tidy).',
    labelNames: ['mount'] as const,
    // Read from the shared database: every worker reports the same value (decision 0047).
    aggregator: 'max',
    registers: [this.registry],
  });
  readonly httpInFlight = new Gauge({
    name: 'strongroom_http_requests_in_flight',
    help: 'Requests received and not yet answered by this process.',
    registers: [this.registry],
  });
  readonly httpRefused = new Counter({
    name: 'strongroom_http_requests_refused_total',
    help: 'Requests refused at once with 503 because max_inflight_requests were in flight.',
    registers: [this.registry],
  });
  readonly stateEncryptionSealed = new Counter({
    name: 'strongroom_state_encryption_sealed_total',
    help:
      'Records stored in plain text before encryption existed that this node has sealed (kind: blob, ' +
      'inline, output).',
    labelNames: ['kind'] as const,
    registers: [this.registry],
  });
  readonly stateEncryptionRemaining = new Gauge({
    name: 'strongroom_state_encryption_remaining',
    help:
      'Records the state encryption job has still to look at, by kind; all 0 once it has finished (read from ' +
      'the database at scrape time).',
    labelNames: ['kind'] as const,
    // Read from the shared database: every worker reports the same value (decision 0047).
    aggregator: 'max',
    registers: [this.registry],
  });
  readonly #scrapeHooks: (() => Promise<void>)[] = [];
  /**
   * The labelled children of the two HTTP metrics, by method, route and status (prom-client hashes labels on every call
   * otherwise).
   */
  readonly #httpChildren = new Map<string, { count: { inc(): void }; duration: { observe(v: number): void } }>();

  /** Counts one answered request and its latency (seconds). */
  observeRequest(method: string, route: string, status: number, seconds: number): void {
    const key = `${method} ${status} ${route}`;
    let c = this.#httpChildren.get(key);
    if (!c) {
      const labels = { method, route, status: String(status) };
      c = { count: this.httpRequests.labels(labels), duration: this.httpDuration.labels(labels) };
      // Routes are patterns, so the label sets stay few; the bound keeps an odd client from growing this.
      if (this.#httpChildren.size < 10_000) this.#httpChildren.set(key, c);
    }
    c.count.inc();
    c.duration.observe(seconds);
  }

  /** Registers work that refreshes gauges from the database just before a scrape. */
  onScrape(hook: () => Promise<void>): void {
    this.#scrapeHooks.push(hook);
  }

  /**
   * In a worker of a cluster (`--workers`): the metrics of every worker, summed (gauges read
   * from the shared database taken once), which `/metrics` answers instead of this process's own.
   */
  cluster: (() => Promise<string>) | undefined = undefined;

  /** This process's metrics after the scrape hooks ran, in the form a cluster's primary adds up. */
  async snapshot(): Promise<MetricsSnapshot> {
    await this.refresh();
    return this.registry.getMetricsAsJSON();
  }

  /** Runs the scrape hooks; a failing hook leaves its gauges as they were. */
  async refresh(): Promise<void> {
    await Promise.all(this.#scrapeHooks.map((h) => h().catch(() => {})));
  }

  constructor(opts: { defaultMetrics?: boolean } = {}) {
    if (opts.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry, prefix: 'strongroom_' });
  }
}
