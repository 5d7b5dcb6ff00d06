/**
 * The ACME load generator: many accounts, each running complete issuances in a loop (new
 * order, http-01 answered by a local responder, finalize, download), against any RFC 8555
 * server. Also the small DNS server and http-01 responder both servers validate against,
 * on a thread of their own.
 */
import { generateKeyPairSync } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import { AcmeAccountClient, AcmeHttp, csrFor } from './acme-client.js';
import { startDnsServer } from './dns-server.js';
import type { AcmeResponse } from './acme-client.js';
import { mean, percentile } from './load.js';
import type { Measurement } from './types.js';

/** Every name under `zone` resolves to `ip` (A records only). */
export function startBenchDns(zone: string, ip: string): Promise<{ address: string; close(): Promise<void> }> {
  return startDnsServer((name, type) => {
    if (!name.endsWith(zone)) return undefined;
    return type === 'A' ? [{ type: 'A', data: ip }] : [];
  });
}

/** Where the load generator puts the key authorizations the http-01 responder serves. */
export interface TokenStore {
  /** Resolves once the responder serves it. */
  set(token: string, value: string): Promise<void>;
  delete(token: string): void;
}

/**
 * The bench DNS server (every name under `zone` is `ip`) and the http-01 responder on
 * `ip`:80, on a worker thread of their own (acme-responder-thread.ts).
 */
export async function startResponderThread(
  zone: string,
  ip: string,
): Promise<{ tokens: TokenStore; dnsAddress: string; close(): Promise<void> }> {
  const worker = new Worker(new URL('./acme-responder-thread.js', import.meta.url), { workerData: { zone, ip } });
  const acks = new Map<number, () => void>();
  let seq = 0;
  const started = await new Promise<{ ready: boolean; dnsAddress?: string; error?: string }>((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  if (!started.ready) {
    await worker.terminate();
    throw new Error(started.error);
  }
  worker.on('message', (m: { ack?: number }) => {
    if (m.ack !== undefined) acks.get(m.ack)?.();
    if (m.ack !== undefined) acks.delete(m.ack);
  });
  return {
    dnsAddress: started.dnsAddress!,
    tokens: {
      set: (token, value) =>
        new Promise<void>((resolve) => {
          const id = ++seq;
          acks.set(id, resolve);
          worker.postMessage({ id, set: token, value });
        }),
      delete: (token) => worker.postMessage({ delete: token }),
    },
    close: async () => {
      const exited = new Promise((r) => worker.once('exit', r));
      worker.postMessage({ close: true });
      await Promise.race([exited, new Promise((r) => setTimeout(r, 2000).unref())]);
      await worker.terminate();
    },
  };
}

export interface AcmeLoadTarget {
  directoryUrl: string;
  ca?: string;
  tokens: TokenStore;
  /** Domain the orders' names are made under. */
  zone: string;
  accounts: number;
  /**
   * Never lets a newOrder overlap an authorization fetch. pebble 2.4 deadlocks when they do:
   * its authorization handler holds the authorization's write lock while it waits for the
   * store's read lock, and newOrder scans every authorization under the store's read lock
   * while another newOrder queues for the write lock, so every request hangs from then on.
   */
  separateNewOrderFromAuthz?: boolean;
}

/** Two kinds of work that may each run concurrently but never at the same time as the other kind. */
class KindGate {
  #kind = '';
  #running = 0;
  #waiting: { kind: string; go: () => void }[] = [];

  async run<T>(kind: string, work: () => Promise<T>): Promise<T> {
    // Newcomers queue behind any waiter, so that neither kind starves the other.
    if (this.#running > 0 && (this.#kind !== kind || this.#waiting.length > 0)) {
      await new Promise<void>((go) => this.#waiting.push({ kind, go }));
    } else {
      this.#kind = kind;
      this.#running++;
    }
    try {
      return await work();
    } finally {
      if (--this.#running === 0) this.#admit();
    }
  }

  /** Lets in every waiter of the kind that has waited longest. */
  #admit(): void {
    const next = this.#waiting[0];
    if (!next) return;
    const admitted = this.#waiting.filter((w) => w.kind === next.kind);
    this.#waiting = this.#waiting.filter((w) => w.kind !== next.kind);
    this.#kind = next.kind;
    this.#running += admitted.length;
    for (const w of admitted) w.go();
  }
}

/** Accounts registered once per target and reused by every measured run. */
export class AcmeLoad {
  readonly #http: AcmeHttp;
  readonly #clients: AcmeAccountClient[] = [];
  readonly #csrKey = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  #seq = 0;
  readonly #gate = new KindGate();

  constructor(private readonly t: AcmeLoadTarget) {
    this.#http = new AcmeHttp(t.directoryUrl, { ca: t.ca, maxSockets: t.accounts + 8 });
  }

  async register(): Promise<void> {
    for (let i = this.#clients.length; i < this.t.accounts; i++) {
      const c = new AcmeAccountClient(this.#http);
      const r = await c.register({ contact: [`mailto:bench${i}@${this.t.zone}`] });
      if (r.status !== 201 && r.status !== 200) throw new Error(`newAccount: ${r.status} ${r.text}`);
      this.#clients.push(c);
    }
  }

  /** Runs every account's loop for `seconds`; a complete order is one "request" of the measurement. */
  async measure(seconds: number): Promise<Measurement> {
    await this.register();
    const latencies: number[] = [];
    let failures = 0;
    let lastError = '';
    const start = performance.now();
    const deadline = start + seconds * 1000;
    await Promise.all(
      this.#clients.map(async (c) => {
        while (performance.now() < deadline) {
          const t0 = performance.now();
          try {
            await this.#order(c);
            latencies.push(performance.now() - t0);
          } catch (err) {
            failures++;
            lastError = (err as Error).message;
          }
        }
      }),
    );
    const elapsed = (performance.now() - start) / 1000;
    if (latencies.length === 0) throw new Error(`no order completed: ${lastError}`);
    latencies.sort((a, b) => a - b);
    return {
      reqPerSec: latencies.length / elapsed,
      mbPerSec: 0,
      p50Ms: percentile(latencies, 0.5),
      p99Ms: percentile(latencies, 0.99),
      meanMs: mean(latencies),
      p999Ms: percentile(latencies, 0.999),
      requests: latencies.length,
      failures,
      seconds: elapsed,
      ...(failures > 0 ? { lastFailure: lastError } : {}),
    };
  }

  /**
   * One complete issuance. Polls every 5 ms whatever Retry-After says, the same for every server.
   * After the challenge it polls the order (ready once the authorization is valid) rather than the
   * authorization: pebble takes the authorization's write lock on every fetch of it.
   */
  async #order(c: AcmeAccountClient): Promise<void> {
    const name = `o${++this.#seq}-${process.pid}.${this.t.zone}`;
    const o = expect(
      await this.#exclusive('newOrder', () => c.newOrder([{ type: 'dns', value: name }])),
      201,
      'newOrder',
    );
    const orderUrl = String(o.headers.location);
    const authzUrl = o.json.authorizations[0] as string;
    const authz = expect(await this.#exclusive('authz', () => c.post(authzUrl)), 200, 'authorization');
    const ch = (authz.json.challenges as { type: string; url: string; token: string }[]).find(
      (x) => x.type === 'http-01',
    );
    if (!ch) throw new Error('no http-01 challenge');
    await this.t.tokens.set(ch.token, c.keyAuthorization(ch.token));
    try {
      expect(await c.post(ch.url, {}), 200, 'challenge');
      await until(c, orderUrl, (s) => s !== 'pending', 'ready');
    } finally {
      this.t.tokens.delete(ch.token);
    }
    const csr = csrFor([name], this.#csrKey.privateKey, this.#csrKey.publicKey);
    const fin = expect(await c.post(o.json.finalize, { csr: csr.toString('base64url') }), 200, 'finalize');
    const done = fin.json.status === 'valid' ? fin : await until(c, orderUrl, (s) => s !== 'processing', 'valid');
    const cert = expect(await c.post(done.json.certificate), 200, 'certificate');
    if (!cert.text.includes('BEGIN CERTIFICATE')) throw new Error('the certificate download is not PEM');
  }

  #exclusive(kind: string, work: () => Promise<AcmeResponse>): Promise<AcmeResponse> {
    return this.t.separateNewOrderFromAuthz ? this.#gate.run(kind, work) : work();
  }

  close(): void {
    this.#http.close();
  }
}

function expect(r: AcmeResponse, status: number, what: string): AcmeResponse {
  if (r.status !== status) throw new Error(`${what}: HTTP ${r.status} ${r.text.slice(0, 200)}`);
  return r;
}

async function until(
  c: AcmeAccountClient,
  url: string,
  done: (status: string) => boolean,
  want: string,
): Promise<AcmeResponse> {
  const end = performance.now() + 30_000;
  for (;;) {
    const r = await c.post(url);
    const status = String(r.json?.status);
    if (done(status)) {
      if (status !== want) throw new Error(`${url}: ${status} ${r.text.slice(0, 300)}`);
      return r;
    }
    if (performance.now() > end) throw new Error(`${url}: still ${status}`);
    await new Promise((res) => setTimeout(res, 5));
  }
}
