import type { FastifyRequest } from 'fastify';
import { AuditUnavailableError } from '../../audit/audit-service.js';
import type { AuditService } from '../../audit/audit-service.js';
import type { AuditAuth, AuditRequestInfo, AuditResponseInfo, EntryMemo } from '../../audit/audit-entry.js';
import type { Authenticated } from '../tokens/token-service.js';
import type { SystemResult } from './system-route.js';

/** What the dispatcher knows of a request once it has resolved and authenticated it. */
export interface TrailTarget {
  operation: string;
  path: string;
  mountPoint: string;
  mountType: string;
  mountAccessor: string;
  data: unknown;
  isList: boolean;
}

/** The auth block of each caller (by the token check's cached answer), made once. */
const authBlocks = new WeakMap<Authenticated, AuditAuth>();

/**
 * One /v1 request as the audit devices see it: the request entry is written before the
 * request is performed (a refusal is recorded with its error), the response entry before
 * the answer is sent. When no device can write, the request is refused with 500 (the
 * error the dispatcher then throws) and nothing is performed.
 * https://developer.hashicorp.com/vault/docs/audit#blocked-audit-devices
 */
export class VaultAuditTrail {
  private target: TrailTarget | undefined;
  private auth: Authenticated | undefined;
  private token = '';
  private requestWritten = false;
  private responded = false;
  private skipped = false;
  /** What every entry of the request repeats, made once (and again if the target or token changes). */
  private info: { auth: AuditAuth | null; request: AuditRequestInfo; memo: EntryMemo } | undefined;

  constructor(
    private readonly audit: AuditService,
    private readonly request: FastifyRequest,
  ) {}

  /** The request is not audited after all. */
  skip(): void {
    this.skipped = true;
  }

  /** Called as soon as the path and its data are known (before authentication). */
  resolved(target: TrailTarget): void {
    this.target = target;
    this.info = undefined;
  }

  /** The token presented, and what it authenticated as (undefined when it did not). */
  authenticated(token: string, auth: Authenticated | undefined): void {
    this.token = token;
    this.auth = auth;
    this.info = undefined;
  }

  /** Writes the request entry; rejects (500) when no device could. */
  beforePerform(): Promise<void> {
    this.requestWritten = true;
    if (this.skipped) return Promise.resolve();
    return this.audit.log({
      type: 'request',
      time: this.audit.now(),
      ...this.shared(),
      error: '',
      isList: this.target?.isList ?? false,
    });
  }

  /** Writes the response entry of an answer about to be sent. */
  respond(result: SystemResult | { kind: 'status'; status: number; errors: string[] }): Promise<void> {
    this.responded = true;
    if (this.skipped) return Promise.resolve();
    const response = responseInfo(result);
    return this.audit.log({
      type: 'response',
      time: this.audit.now(),
      ...this.shared(),
      response,
      error: 'errors' in result ? result.errors.join('; ') : '',
      isList: this.target?.isList ?? false,
    });
  }

  /**
   * The request failed with `err`: a refusal before the request entry is recorded as a
   * request entry with the error (as Vault records a denied request), a failure after it as a
   * response entry. Returns the error to throw: `err`, or the audit failure that replaces it.
   */
  async failed(err: unknown, status: number): Promise<unknown> {
    if (err instanceof AuditUnavailableError || this.responded || this.skipped) return err;
    const message = (err as Error)?.message ?? String(err);
    try {
      await this.audit.log({
        type: this.requestWritten ? 'response' : 'request',
        time: this.audit.now(),
        ...this.shared(),
        ...(this.requestWritten ? { response: { status, data: null, warnings: null, auth: null } } : {}),
        error: status >= 500 ? 'internal error' : status === 403 ? 'permission denied' : message,
        isList: this.target?.isList ?? false,
      });
    } catch (auditErr) {
      return auditErr;
    }
    return err;
  }

  private shared(): { auth: AuditAuth | null; request: AuditRequestInfo; memo: EntryMemo } {
    this.info ??= { auth: this.authBlock(), request: this.requestInfo(), memo: new Map() };
    return this.info;
  }

  private authBlock(): AuditAuth | null {
    const a = this.auth;
    if (!a) return null;
    // The token check's cached answer is the same object for every request of the caller.
    const cached = authBlocks.get(a);
    if (cached?.clientToken === this.token) return cached;
    const e = a.entry;
    const block: AuditAuth = {
      clientToken: this.token,
      accessor: a.info.accessor,
      displayName: a.info.displayName,
      policies: a.info.policies,
      tokenPolicies: a.info.policies,
      metadata: e?.meta ?? null,
      tokenType: 'service',
      tokenTtl: e?.ttl ?? 0,
      ...(e ? { tokenIssueTime: e.createdAt.toISOString() } : {}),
      key: a,
    };
    authBlocks.set(a, block);
    return block;
  }

  private requestInfo(): AuditRequestInfo {
    const t = this.target;
    const raw = this.request.raw;
    return {
      id: this.request.id,
      operation: t?.operation ?? '',
      mountPoint: t?.mountPoint ?? '',
      mountType: t?.mountType ?? '',
      mountAccessor: t?.mountAccessor ?? '',
      path: t?.path ?? '',
      data: t?.data ?? null,
      remoteAddress: this.request.ip,
      remotePort: raw.socket?.remotePort ?? 0,
      clientToken: this.token,
      clientTokenAccessor: this.auth?.info.accessor ?? '',
    };
  }
}

function responseInfo(result: SystemResult | { kind: 'status'; status: number; errors: string[] }): AuditResponseInfo {
  switch (result.kind) {
    case 'json': {
      const r = result as { data: unknown; warnings?: string[]; status?: number; auth?: unknown };
      const auth = r.auth && typeof r.auth === 'object' ? (r.auth as Record<string, unknown>) : null;
      return { status: r.status ?? 200, data: r.data ?? null, warnings: r.warnings ?? null, auth };
    }
    case 'raw': {
      const body = typeof result.body === 'string' ? result.body : result.body.toString('base64');
      return {
        status: result.status ?? 200,
        data: { http_content_type: result.contentType, http_raw_body: body, http_status_code: result.status ?? 200 },
        warnings: null,
        auth: null,
      };
    }
    case 'empty':
      return { status: 204, data: null, warnings: null, auth: null };
    case 'status':
      return { status: result.status, data: null, warnings: null, auth: null };
    case 'stream':
      // A snapshot or other stream: its bytes are not copied into the log.
      return { status: 200, data: { http_content_type: result.contentType }, warnings: null, auth: null };
  }
}
