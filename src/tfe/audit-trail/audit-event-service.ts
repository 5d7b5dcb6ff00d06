import type { Logger } from 'pino';
import type { AuditService } from '../../audit/audit-service.js';
import type { UnitsOfWork } from '../../db/unit-of-work.js';
import type { BatchQueue } from '../../shared/batch-queue.js';
import type { Clock } from '../../shared/clock.js';
import { notFound } from '../../shared/errors.js';
import { timeOrderedUuid, uuid } from '../../shared/ids.js';
import type { Actor } from '../identity/actor.js';
import { hcpAuditEntry } from './audit-event.js';
import type { AuditEvent, AuditSubject, SubjectKind } from './audit-event.js';
import type { AuditEventRepo } from './audit-event-repo.js';

/** Subjects never move between organizations or workspaces, so what is found is kept (up to this many). */
const SUBJECT_CACHE_SIZE = 10_000;

export type NewAuditEvent = Omit<AuditEvent, 'id' | 'timestamp'>;

interface Pending {
  event: AuditEvent;
  resolve(): void;
  reject(err: unknown): void;
}

/** Most events one commit carries. */
const MAX_BATCH = 1000;

/**
 * The state service's audit trail. Events are recorded before the answer is sent: the rows
 * of requests answered together are inserted by one write-only unit (group commit), and each
 * event is also written to the audit devices. Reading is HCP's audit-trail API, for
 * organization tokens only.
 */
export class AuditEventService {
  private subjects = new Map<string, AuditSubject>();
  readonly #batches: BatchQueue<Pending>;

  constructor(
    private readonly deps: {
      repo: AuditEventRepo;
      units: UnitsOfWork;
      audit: AuditService;
      clock: Clock;
      logger: Logger;
    },
  ) {
    this.#batches = deps.units.batches<Pending>((batch) => this.#write(batch), { maxBatch: MAX_BATCH });
  }

  /** The organization and workspace of a request's subject (cached: they never change). */
  async subjectOf(kind: SubjectKind, ref: string): Promise<AuditSubject | undefined> {
    const key = `${kind}:${ref}`;
    const hit = this.subjects.get(key);
    if (hit) return hit;
    const found = await this.deps.repo.subject(kind, ref);
    // A user has no organization, and a token may be revoked next: only lasting answers are kept.
    if (found && kind !== 'user' && kind !== 'token') {
      if (this.subjects.size >= SUBJECT_CACHE_SIZE) this.subjects.clear();
      this.subjects.set(key, found);
    }
    return found;
  }

  /** The subject from the cache alone, without waiting (undefined when it must be looked up). */
  subjectNow(kind: SubjectKind, ref: string): AuditSubject | undefined {
    return this.subjects.get(`${kind}:${ref}`);
  }

  /**
   * Records an event: resolves once its row is committed. The devices get it too; a device
   * that cannot write it is logged (the request has been performed; the row is the durable
   * record, and `admit` already refused requests no device could record).
   */
  record(input: NewAuditEvent): Promise<void> {
    const timestamp = this.deps.clock.now();
    const event: AuditEvent = { id: timeOrderedUuid(timestamp.getTime()), timestamp, ...input };
    // The devices' entry is made only when there may be devices (null: the table is read again first).
    if (this.deps.audit.enabledNow() !== false) {
      this.deps.audit
        .log({ type: 'state', time: event.timestamp, event: { phase: 'response', ...hcpAuditEntry(event) } })
        .catch((err: unknown) => {
          this.deps.logger.error({ err, requestId: event.requestId }, 'no audit device could record a state event');
        });
    }
    if (!event.organizationId) return Promise.resolve();
    return new Promise<void>((resolve, reject) => this.#batches.push({ event, resolve, reject }));
  }

  /** One statement for the events of requests answered together (audit-event-repo.ts says why). */
  async #write(batch: Pending[]): Promise<void> {
    try {
      await this.deps.repo.insertMany(batch.map((p) => p.event));
      for (const p of batch) p.resolve();
    } catch (err) {
      for (const p of batch) p.reject(err);
    }
  }

  /**
   * Before a recorded request is performed: when audit devices are enabled, its entry
   * (outcome `pending`) is written to them first, and the request is refused (500, nothing
   * performed) when no device can write it, as /v1 requests are.
   */
  async admit(input: NewAuditEvent): Promise<void> {
    const audit = this.deps.audit;
    if (!(audit.enabledNow() ?? (await audit.enabled()))) return;
    const event: AuditEvent = { id: uuid(), timestamp: this.deps.clock.now(), ...input };
    await audit.log({ type: 'state', time: event.timestamp, event: { phase: 'request', ...hcpAuditEntry(event) } });
  }

  /** HCP's `GET /organization/audit-trail`: the events of the token's organization. */
  async list(
    actor: Actor,
    opts: { since: Date | undefined; page: number; size: number },
  ): Promise<{ items: AuditEvent[]; total: number }> {
    // HCP serves the audit trail to organization tokens only.
    if (actor.kind !== 'organization') throw notFound('audit trails are read with an organization token');
    return this.deps.repo.page(actor.organizationId, opts.since, (opts.page - 1) * opts.size, opts.size);
  }
}
