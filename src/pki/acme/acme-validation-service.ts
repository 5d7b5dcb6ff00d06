import type { Clock } from '../../shared/clock.js';
import { addSeconds } from '../../shared/clock.js';
import { AcmeError, orderStatusFromAuthzs } from './acme.js';
import type { AcmeAuthorization, AcmeConfig, AcmeProblem, ChallengeType } from './acme.js';
import { keyAuthorization } from './acme-jws.js';
import type { AcmeRepo, VersionedAuthz } from './acme-repo.js';
import { validateChallenge } from './acme-validator.js';
import type { Validate } from './acme-validator.js';

/** Attempts per challenge, and the pause before each retry (seconds). */
const ATTEMPTS = 3;
const RETRY_DELAYS = [1, 3];
/** One attempt's time limit. */
const ATTEMPT_TIMEOUT_MS = 10_000;
/** How long the node running a validation holds it; past this another node's poll takes over. */
const LEASE_SECONDS = 30;
/**
 * How long a challenge response waits for the first attempt: a validation that ends by then
 * is answered as decided, so the client's first poll finds it so instead of polling again
 * (decision 0038).
 */
const FIRST_ATTEMPT_WAIT_MS = 2000;

/**
 * Challenge validation off the request path. The node that accepts a challenge runs it at
 * once, in-process, holding a lease on the authorization; the outcome (challenge,
 * authorization and, when all authorizations are valid, the order) is written in one
 * transaction, so any node answers the next poll from the database. A poll that finds a
 * validation whose lease ran out (its node stopped) takes it over.
 */
export class AcmeValidationService {
  readonly #inFlight = new Set<Promise<void>>();
  readonly #timers = new Set<NodeJS.Timeout>();
  #closed = false;

  constructor(
    private readonly deps: {
      repo: AcmeRepo;
      clock: Clock;
      validate?: Validate;
      onError?: (err: unknown) => void;
      configOf: (mountId: string) => Promise<AcmeConfig>;
    },
  ) {}

  /**
   * Marks the challenge processing and starts its validation. A challenge already
   * processing or decided is answered as it is (RFC 8555 section 7.5.1: retrying is a no-op).
   */
  async start(a: VersionedAuthz, type: ChallengeType, thumbprint: string): Promise<AcmeAuthorization> {
    const now = this.deps.clock.now();
    if (a.status !== 'pending' || a.expiresAt <= now) return a;
    const c = a.challenges.find((x) => x.type === type)!;
    if (c.status !== 'pending' || a.challenges.some((x) => x.status === 'processing')) return a;
    const next: VersionedAuthz = {
      ...a,
      challenges: a.challenges.map((x) => (x.type === type ? { ...x, status: 'processing' as const } : x)),
      validationLeaseUntil: addSeconds(now, LEASE_SECONDS),
    };
    const ok = await this.deps.repo.transaction((tx) => this.deps.repo.updateAuthz(tx, next, now));
    if (!ok) {
      const fresh = await this.deps.repo.authorization(this.deps.repo.executor, a.mountId, a.id);
      return fresh ?? a;
    }
    const first = this.#run({ ...next, version: next.version + 1 }, type, thumbprint, 0);
    let timer: NodeJS.Timeout | undefined;
    const ended = await Promise.race([
      first.then(() => true),
      new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), FIRST_ATTEMPT_WAIT_MS);
        timer.unref();
      }),
    ]);
    clearTimeout(timer);
    if (!ended) return next;
    return (await this.deps.repo.authorization(this.deps.repo.executor, a.mountId, a.id)) ?? next;
  }

  /** Takes over a validation whose node let its lease run out. */
  resumeIfAbandoned(a: VersionedAuthz): void {
    const now = this.deps.clock.now();
    const c = a.challenges.find((x) => x.status === 'processing');
    if (!c || a.status !== 'pending' || !a.validationLeaseUntil || a.validationLeaseUntil > now) return;
    const next = { ...a, validationLeaseUntil: addSeconds(now, LEASE_SECONDS) };
    const p = this.deps.repo
      .transaction((tx) => this.deps.repo.updateAuthz(tx, next, now))
      .then(async (ok) => {
        if (!ok) return;
        const account = await this.deps.repo.account(this.deps.repo.executor, a.mountId, a.accountId);
        if (account) void this.#run({ ...next, version: next.version + 1 }, c.type, account.thumbprint, c.attempts);
      });
    this.#track(p);
  }

  /** Runs one attempt in the background; the promise settles (never rejects) when it has ended. */
  #run(a: VersionedAuthz, type: ChallengeType, thumbprint: string, attempt: number): Promise<void> {
    if (this.#closed) return Promise.resolve();
    return this.#track(this.#attempt(a, type, thumbprint, attempt));
  }

  #track(p: Promise<void>): Promise<void> {
    const tracked = p.catch((err: unknown) => this.deps.onError?.(err)).finally(() => this.#inFlight.delete(tracked));
    this.#inFlight.add(tracked);
    return tracked;
  }

  async #attempt(a: VersionedAuthz, type: ChallengeType, thumbprint: string, attempt: number): Promise<void> {
    const config = await this.deps.configOf(a.mountId);
    const validate = this.deps.validate ?? validateChallenge;
    let problem: AcmeProblem | undefined;
    try {
      await validate({
        type,
        identifier: a.identifier,
        token: a.token,
        keyAuthorization: keyAuthorization(a.token, thumbprint),
        dnsResolver: config.dnsResolver,
        timeoutMs: ATTEMPT_TIMEOUT_MS,
      });
    } catch (err) {
      problem =
        err instanceof AcmeError
          ? { type: err.acmeType, detail: err.message }
          : { type: 'connection', detail: err instanceof Error ? err.message : String(err) };
    }
    const now = this.deps.clock.now();
    const attempts = attempt + 1;
    if (problem && attempts < ATTEMPTS) {
      // Shutting down: leave it processing; its lease runs out and the next poll takes it over.
      if (this.#closed) return;
      // Record the attempt and hold the lease over the pause, then try again.
      const held: VersionedAuthz = {
        ...a,
        challenges: a.challenges.map((x) => (x.type === type ? { ...x, attempts, error: problem } : x)),
        validationLeaseUntil: addSeconds(now, LEASE_SECONDS + RETRY_DELAYS[attempt]!),
      };
      if (!(await this.deps.repo.transaction((tx) => this.deps.repo.updateAuthz(tx, held, now)))) return;
      const timer = setTimeout(() => {
        this.#timers.delete(timer);
        void this.#run({ ...held, version: held.version + 1 }, type, thumbprint, attempts);
      }, RETRY_DELAYS[attempt]! * 1000);
      timer.unref();
      this.#timers.add(timer);
      return;
    }
    await this.#decide(a, type, attempts, problem, now);
  }

  /** Writes the outcome: challenge and authorization, and the order when it is decided by this. */
  async #decide(
    a: VersionedAuthz,
    type: ChallengeType,
    attempts: number,
    problem: AcmeProblem | undefined,
    now: Date,
  ): Promise<void> {
    const repo = this.deps.repo;
    const decided: VersionedAuthz = {
      ...a,
      status: problem ? 'invalid' : 'valid',
      challenges: a.challenges.map((x) =>
        x.type === type
          ? {
              ...x,
              status: problem ? 'invalid' : 'valid',
              attempts,
              error: problem,
              validated: problem ? undefined : now,
            }
          : x,
      ),
      validationLeaseUntil: undefined,
    };
    await repo.transaction(async (tx) => {
      if (!(await repo.updateAuthz(tx, decided, now))) return;
      const all = await repo.authorizationsOfOrder(tx, a.orderId);
      const statuses = all.map((x) => (x.id === a.id ? decided.status : x.status));
      const next = orderStatusFromAuthzs('pending', statuses);
      if (next === 'pending') return;
      await repo.moveOrder(tx, a.orderId, ['pending'], next, now, {
        ...(next === 'invalid'
          ? { error: problem ?? { type: 'unauthorized', detail: 'an authorization of the order failed' } }
          : {}),
      });
    });
  }

  /** Stops retries and waits for the attempts under way (shutdown). */
  async close(): Promise<void> {
    this.#closed = true;
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight]);
  }
}
