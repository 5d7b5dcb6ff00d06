import type { FastifyInstance, FastifyRequest } from 'fastify';
import { invalid } from '../../shared/errors.js';
import { requireActor } from '../identity/request-actor.js';
import { AUDITED_ROUTES, actionOf, actorFields, hcpAuditEntry } from './audit-event.js';
import type { AuditSubject, RouteAudit } from './audit-event.js';
import type { AuditEventService, NewAuditEvent } from './audit-event-service.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set before the handler of a recorded route runs. */
    tfeAudit: { route: RouteAudit; subject: AuditSubject | undefined } | null;
    /** A handler that finds its state version only as it runs (the upload URL) names it here. */
    tfeAuditStateVersion: string | null;
  }
}

const MAX_AUDIT_PAGE_SIZE = 1000;
/** The id of the resource a create answered with, at the head of its JSON:API document. */
const CREATED_ID = /^\{"data":\{"id":"([^"]{1,100})"/;

/**
 * Records the requests AUDITED_ROUTES names: the subject (organization, workspace) is found
 * before the handler runs (a deleted team is still found), the event is recorded with the
 * answer's status before the answer leaves. `prefix` is the scope's URL prefix (/api/v2).
 */
export function registerAuditTrailHooks(app: FastifyInstance, events: AuditEventService, prefix: string): void {
  app.decorateRequest('tfeAudit', null);
  app.decorateRequest('tfeAuditStateVersion', null);
  app.addHook('preHandler', (request, _reply, done) => {
    const url = request.routeOptions.url;
    if (url === undefined) return done();
    const route = AUDITED_ROUTES[`${request.method} ${url.startsWith(prefix) ? url.slice(prefix.length) : url}`];
    if (!route) return done();
    const pending: { route: RouteAudit; subject: AuditSubject | undefined } = { route, subject: undefined };
    request.tfeAudit = pending;
    const ref = subjectRef(route, request);
    const admit = () => events.admit(eventOf(request, 0, pending, undefined));
    const cached = ref === undefined ? undefined : events.subjectNow(route.subject, ref);
    if (cached) pending.subject = cached;
    const found = ref === undefined || cached ? Promise.resolve(pending.subject) : events.subjectOf(route.subject, ref);
    found
      .then((s) => {
        pending.subject = s;
        return admit();
      })
      .then(() => done(), done);
  });
  app.addHook('onSend', (request, reply, payload, done) => {
    const pending = request.tfeAudit;
    if (!pending) return done(null, payload);
    record(events, request, reply.statusCode, pending, payload).then(
      () => done(null, payload),
      (err: unknown) => {
        request.log.error({ err }, 'the audit trail could not record a request');
        done(null, payload);
      },
    );
  });
}

async function record(
  events: AuditEventService,
  request: FastifyRequest,
  status: number,
  pending: { route: RouteAudit; subject: AuditSubject | undefined },
  payload: unknown,
): Promise<void> {
  const named = request.tfeAuditStateVersion;
  if (!pending.subject && named) pending.subject = await events.subjectOf('set-by-handler', named);
  await events.record(eventOf(request, status, pending, payload));
}

/** The event of a request; status 0 while it has not been answered yet (outcome `pending`). */
function eventOf(
  request: FastifyRequest,
  status: number,
  pending: { route: RouteAudit; subject: AuditSubject | undefined },
  payload: unknown,
): NewAuditEvent {
  const { route, subject } = pending;
  const named = request.tfeAuditStateVersion;
  const actor = request.tfeActor ?? null;
  const ok = status > 0 && status < 400;
  const created = ok && typeof payload === 'string' ? CREATED_ID.exec(payload)?.[1] : undefined;
  const orgOfActor =
    actor && actor.kind !== 'user'
      ? { organizationId: actor.organizationId, organization: actor.organization }
      : undefined;
  return {
    organizationId: subject?.organizationId || orgOfActor?.organizationId || '',
    organization: subject?.organization || orgOfActor?.organization || '',
    workspaceId: subject?.workspaceId ?? null,
    ...actorFields(actor),
    action: actionOf(route, request.params as Record<string, string | undefined>),
    resourceType: route.resourceType,
    resourceId: created ?? subject?.resourceId ?? named ?? null,
    outcome: status === 0 ? 'pending' : ok ? 'success' : 'failure',
    status,
    sourceIp: request.ip,
    requestId: request.id,
  };
}

function subjectRef(route: RouteAudit, request: FastifyRequest): string | undefined {
  switch (route.subject) {
    case 'set-by-handler':
      return undefined;
    case 'query-organization': {
      const v = (request.query as Record<string, unknown>)[route.param];
      return typeof v === 'string' && v !== '' ? v : undefined;
    }
    case 'body-workspace': {
      const body = request.body as { data?: { relationships?: { workspace?: { data?: { id?: unknown } } } } };
      const id = body?.data?.relationships?.workspace?.data?.id;
      return typeof id === 'string' ? id : undefined;
    }
    default:
      return (request.params as Record<string, string | undefined>)[route.param] || undefined;
  }
}

/**
 * HCP's audit trail: `GET /organization/audit-trail` with `since` and `page[number]` /
 * `page[size]` (1000 by default and at most). Not JSON:API: `data` holds the events and
 * `pagination` the page numbers.
 * https://developer.hashicorp.com/terraform/cloud-docs/api-docs/audit-trails
 */
export function registerAuditTrailRoutes(app: FastifyInstance, events: AuditEventService): void {
  app.get('/organization/audit-trail', async (request, reply) => {
    const q = request.query as Record<string, unknown>;
    const since = parseSince(q['since']);
    const page = pageParam(q['page[number]'], 'page[number]', Number.MAX_SAFE_INTEGER) ?? 1;
    const size = pageParam(q['page[size]'], 'page[size]', MAX_AUDIT_PAGE_SIZE) ?? MAX_AUDIT_PAGE_SIZE;
    const { items, total } = await events.list(requireActor(request), { since, page, size });
    const totalPages = Math.max(1, Math.ceil(total / size));
    return reply
      .status(200)
      .type('application/json')
      .send(
        JSON.stringify({
          data: items.map(hcpAuditEntry),
          pagination: {
            current_page: page,
            prev_page: page > 1 ? page - 1 : null,
            next_page: page < totalPages ? page + 1 : null,
            total_pages: totalPages,
            total_count: total,
          },
        }),
      );
  });
}

function parseSince(raw: unknown): Date | undefined {
  if (raw === undefined || raw === '') return undefined;
  const d = typeof raw === 'string' ? new Date(raw) : new Date(NaN);
  if (Number.isNaN(d.getTime()) || !/^\d{4}-\d{2}-\d{2}/.test(String(raw)))
    throw invalid('since must be an ISO 8601 time such as 2026-01-30T17:52:46.000Z', '/query/since');
  return d;
}

function pageParam(raw: unknown, name: string, max: number): number | undefined {
  if (raw === undefined || raw === '') return undefined;
  const s = String(raw);
  if (!/^\d{1,16}$/.test(s) || Number(s) < 1 || Number(s) > max)
    throw invalid(`${name} must be an integer from 1 to ${max}`, `/query/${name}`);
  return Number(s);
}
