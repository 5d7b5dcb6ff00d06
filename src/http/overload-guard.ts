import type { FastifyInstance } from 'fastify';
import type { Metrics } from '../shared/metrics.js';
import type { SendEnvelopedError } from './api-envelope.js';

/** Probes and scrapes answer whatever the load (they must see an overloaded server, not be refused by it). */
const isProbe = (url: string): boolean => url === '/healthz' || url === '/readyz' || url.startsWith('/metrics');

/**
 * Bounds the requests one process works on at once (received, not yet answered). Beyond `maxInFlight` a request is
 * refused at once with 503 and `Retry-After: 1` in its API's envelope, so that under overload clients learn to back
 * off in a millisecond instead of waiting behind thousands of others until they time out. 0 turns the bound off.
 * Probes are neither counted nor refused.
 */
export function registerOverloadGuard(
  app: FastifyInstance,
  opts: { maxInFlight: number; metrics: Metrics; sendError: SendEnvelopedError },
): void {
  const { maxInFlight, metrics, sendError } = opts;
  let inFlight = 0;
  const release = (): void => {
    inFlight--;
  };
  metrics.onScrape(async () => metrics.httpInFlight.set(inFlight));
  if (maxInFlight <= 0) return;
  app.addHook('onRequest', (request, reply, done) => {
    if (isProbe(request.url)) {
      done();
      return;
    }
    if (inFlight >= maxInFlight) {
      metrics.httpRefused.inc();
      sendError(
        reply.header('retry-after', '1'),
        request.url,
        503,
        `server is at its limit of ${maxInFlight} requests in flight (max_inflight_requests); retry shortly`,
      );
      return;
    }
    inFlight++;
    // 'close' fires once for every response, answered or abandoned by its client.
    reply.raw.once('close', release);
    done();
  });
}
