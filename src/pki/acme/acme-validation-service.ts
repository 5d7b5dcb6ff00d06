import type { Clock } from '../../shared/clock.js';
import { addSeconds } from '../../shared/clock.js';
import { AcmeError } from './acme.js';
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
   * Starts the challenge's validation. The first attempt runs before anything is written:
   * when it ends within FIRST_ATTEMPT_WAIT_MS its outcome (or the pause before a retry) is
   * the only write, in one conditional transaction, and the answer is what was written. A
   * slower attempt gets the challenge marked processing under a lease, and records its
   * outcome when it ends. Nothing is lost if this node stops before writing: the client
   * got no answer and sends the challenge response again. A challenge already processing
   * or decided is answered as it is (RFC 8555 section 7.5.1: retrying is a no-op).
   */
  async start(a: VersionedAuthz, type: ChallengeType, thumbprint: string): Promise<AcmeAuthorization> {
    const now = this.deps.clock.now();
    if (a.status !== 'pending' || a.expiresAt <= now || this.#closed) return a;
    const c = a.challenges.find((x) => x.type === type)!;
    if (c.status !== 'pending' || a.challenges.some((x) => x.status === 'processing')) return a;
    const outcome = this.#validate(a, type, thumbprint);
    this.#track(outcome.then(() => undefined));
    let timer: NodeJS.Timeout | undefined;
    const first = await Promise.race([
      outcome.then((problem) => ({ problem })),
      new Promise<undefined>((resolve) => {
        timer = setTimeout(() => resolve(undefined), FIRST_ATTEMPT_WAIT_MS);
        timer.unref();
      }),
    ]);
    clearTimeout(timer);
    if (first) {
      const written = await this.#record(a, type, thumbprint, 0, first.problem);
      return written ?? (await this.#reread(a));
    }
    // Slow: hold the validation under a lease, so that another node's poll can take it over.
    const next: VersionedAuthz = {
      ...a,
      challenges: a.challenges.map((x) => (x.type === type ? { ...x, status: 'processing' as const } : x)),
      validationLeaseUntil: addSeconds(now, LEASE_SECONDS),
    };
    if (!(await this.deps.repo.transaction((tx) => this.deps.repo.updateAuthz(tx, next, now)))) return this.#reread(a);
    const held = { ...next, version: next.version + 1 };
    this.#track(outcome.then((problem) => this.#record(held, type, thumbprint, 0, problem)).then(() => undefined));
    return next;
  }

  async #reread(a: VersionedAuthz): Promise<AcmeAuthorization> {
    return (await this.deps.repo.authorization(this.deps.repo.executor, a.mountId, a.id)) ?? a;
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
        if (account) this.#run({ ...next, version: next.version + 1 }, c.type, account.thumbprint, c.attempts);
      });
    this.#track(p);
  }

  /** Runs one more attempt in the background and records it. */
  #run(a: VersionedAuthz, type: ChallengeType, thumbprint: string, attempt: number): void {
    if (this.#closed) return;
    this.#track(
      this.#validate(a, type, thumbprint).then(async (problem) => {
        await this.#record(a, type, thumbprint, attempt, problem);
      }),
    );
  }

  #track(p: Promise<void>): Promise<void> {
    const tracked = p.catch((err: unknown) => this.deps.onError?.(err)).finally(() => this.#inFlight.delete(tracked));
    this.#inFlight.add(tracked);
    return tracked;
  }

  /** One attempt: undefined when the challenge is met, else the problem. Never rejects. */
  async #validate(a: VersionedAuthz, type: ChallengeType, thumbprint: string): Promise<AcmeProblem | undefined> {
    const validate = this.deps.validate ?? validateChallenge;
    try {
      const config = await this.deps.configOf(a.mountId);
      await validate({
        type,
        identifier: a.identifier,
        token: a.token,
        keyAuthorization: keyAuthorization(a.token, thumbprint),
        dnsResolver: config.dnsResolver,
        timeoutMs: ATTEMPT_TIMEOUT_MS,
      });
      return undefined;
    } catch (err) {
      return err instanceof AcmeError
        ? { type: err.acmeType, detail: err.message }
        : { type: 'connection', detail: err instanceof Error ? err.message : String(err) };
    }
  }

  /**
   * Records attempt number `attempt` of `a` as stored at its version: the outcome when it
   * decides, else the attempt and a lease held over the pause before the next one. Returns
   * what was written; undefined when the authorization changed meanwhile (or shutting down
   * before a retry: the challenge stays as stored, and a lease that runs out is taken over).
   */
  async #record(
    a: VersionedAuthz,
    type: ChallengeType,
    thumbprint: string,
    attempt: number,
    problem: AcmeProblem | undefined,
  ): Promise<VersionedAuthz | undefined> {
    const now = this.deps.clock.now();
    const attempts = attempt + 1;
    if (!problem || attempts >= ATTEMPTS) return this.#decide(a, type, attempts, problem, now);
    if (this.#closed) return undefined;
    const held: VersionedAuthz = {
      ...a,
      challenges: a.challenges.map((x) =>
        x.type === type ? { ...x, status: 'processing' as const, attempts, error: problem } : x,
      ),
      validationLeaseUntil: addSeconds(now, LEASE_SECONDS + RETRY_DELAYS[attempt]!),
    };
    if (!(await this.deps.repo.transaction((tx) => this.deps.repo.updateAuthz(tx, held, now)))) return undefined;
    const stored = { ...held, version: held.version + 1 };
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      this.#run(stored, type, thumbprint, attempts);
    }, RETRY_DELAYS[attempt]! * 1000);
    timer.unref();
    this.#timers.add(timer);
    return stored;
  }

  /**
   * Writes the outcome: challenge and authorization, and in the same transaction the order
   * when this decides it (invalid at once; ready when no other authorization is left undone).
   */
  async #decide(
    a: VersionedAuthz,
    type: ChallengeType,
    attempts: number,
    problem: AcmeProblem | undefined,
    now: Date,
  ): Promise<VersionedAuthz | undefined> {
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
    const ok = await repo.transaction(async (tx) => {
      if (!(await repo.updateAuthz(tx, decided, now))) return false;
      if (problem)
        await repo.moveOrder(tx, a.orderId, ['pending'], 'invalid', now, {
          error: problem,
        });
      else await repo.readyOrderIfAuthorized(tx, a.orderId, now);
      return true;
    });
    return ok ? { ...decided, version: decided.version + 1 } : undefined;
  }

  /** Stops retries and waits for the attempts under way (shutdown). */
  async close(): Promise<void> {
    this.#closed = true;
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight]);
  }
}
