import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { forbidden, invalid, isDomainError, unauthenticated as noValidToken } from '../shared/errors.js';
import { RouteTable } from './mounts/route-table.js';
import type { RouteMatch } from './mounts/route-table.js';
import { mountAccessor, toMountInfo } from './mounts/mount.js';
import type { Mount } from './mounts/mount.js';
import type { MountService } from './mounts/mount-service.js';
import type { PolicyService } from './acl/policy-service.js';
import type { PkiRequestContext, PkiRoute, VaultOperation } from './pki-route.js';
import type { SystemRequestContext, SystemResult, SystemRoute } from './sys/system-route.js';
import type { Authenticated, TokenService } from './tokens/token-service.js';
import type { AuditService } from '../audit/audit-service.js';
import { VaultAuditTrail } from './sys/vault-audit-trail.js';
import type { TrailTarget } from './sys/vault-audit-trail.js';
import { classifyError } from '../http/error-kind.js';
import { vaultError, vaultResponse, vaultResponseJson, vaultStatusFor } from './vault-envelope.js';
import type { AuthMount } from './auth/auth-mount.js';
import { authMountAccessor, methodOf } from './auth/auth-mount.js';
import type { AuthMountService } from './auth/auth-mount-service.js';
import type { AuthRequestContext, AuthRoute } from './auth/auth-route.js';
import { cidrsAllow } from '../shared/cidr.js';
import { isSudoPkiPath, isSudoSystemPath, isUnauthenticatedPkiPath, resolveOperation } from './vault-paths.js';

/**
 * The one entry point under /v1: resolves `sys/…`, `auth/token/…` and mounted paths,
 * authenticates the token, checks the ACL on the full path (plus `sudo` where Vault asks
 * for it), then calls the route. Static routes registered elsewhere under /v1 (the TFE
 * upload URLs under /v1/object) win over this catch-all in Fastify's router.
 * https://developer.hashicorp.com/vault/api-docs#http-verbs
 */
export interface DispatchDeps {
  mounts: MountService;
  tokens: TokenService;
  policies: PolicyService;
  /** Routes inside mounts; modules may add to it later. */
  mountRoutes: RouteTable<PkiRoute>;
  systemRoutes: readonly SystemRoute[];
  /** Audit devices: every request and answer is written to them (when any is enabled). */
  audit?: AuditService;
  /** Auth methods mounted under auth/ and the routes of each method. */
  authMounts: AuthMountService;
  authRoutes: Readonly<Record<'approle' | 'jwt' | 'cert', RouteTable<AuthRoute>>>;
}

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

type Target =
  | { kind: 'system'; match: RouteMatch<SystemRoute> | undefined; pathExists: boolean }
  | { kind: 'mount'; mount: Mount; rest: string; match: RouteMatch<PkiRoute> | undefined; pathExists: boolean }
  | { kind: 'auth'; mount: AuthMount; rest: string; match: RouteMatch<AuthRoute> | undefined; pathExists: boolean }
  | { kind: 'none' };

export function registerDispatcher(app: FastifyInstance, deps: DispatchDeps): void {
  const systemTable = new RouteTable<SystemRoute>();
  systemTable.addAll(deps.systemRoutes);
  const mountTable = deps.mountRoutes;

  const handler = async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | void> => {
    const audit = deps.audit;
    const auditing = audit ? (audit.enabledNow() ?? (await audit.enabled())) : false;
    if (!auditing) return serve(request, reply, undefined);
    const trail = new VaultAuditTrail(audit as AuditService, request);
    try {
      return await serve(request, reply, trail);
    } catch (err) {
      const c = classifyError(err);
      throw await trail.failed(err, c.kind === 'http' ? (c.status ?? 400) : vaultStatusFor(c.kind));
    }
  };

  const serve = async (
    request: FastifyRequest,
    reply: FastifyReply,
    trail: VaultAuditTrail | undefined,
  ): Promise<FastifyReply | void> => {
    const rawPath = ((request.params as Record<string, string | undefined>)['*'] ?? '').replace(/^\/+/, '');
    const query = flattenQuery(request.query);
    const method = request.headers['x-original-method'] === 'LIST' ? 'LIST' : request.method;
    const resolved = resolveOperation(method, query);
    if (!resolved) throw httpError(405, 'unsupported operation');
    const isList = resolved.kind === 'list';
    const routePath = rawPath.replace(/\/+$/, '');
    const ops: VaultOperation[] =
      resolved.kind === 'write' ? ['update', 'create'] : [resolved.operations[0] as VaultOperation];

    const target =
      findTargetNow(routePath, ops) ??
      (isAuthMethodPath(routePath)
        ? authTarget(await deps.authMounts.resolve(routePath.slice(5)), ops)
        : mountTarget(await deps.mounts.resolve(routePath), ops));
    const route = target.kind === 'none' ? undefined : target.match?.route;
    // Inside a mount only Vault's list of unauthenticated PKI paths decides (a route's own
    // flag cannot make a path public); system routes (sys/health, sys/seal-status) carry theirs.
    const unauthenticated =
      target.kind === 'mount'
        ? isUnauthenticatedPkiPath(target.rest, method, query)
        : (target.kind === 'system' || target.kind === 'auth') && route?.unauthenticated === true;

    let auth: Authenticated | undefined;
    let token = '';
    let sudo = false;
    let operation: VaultOperation = ops[0] as VaultOperation;
    const data = requestData(request, resolved.kind, query);
    // Like Vault, the status endpoints (sys/health, sys/seal-status) are not audited.
    if (trail && target.kind === 'system' && unauthenticated) trail.skip();
    if (trail) trail.resolved(trailTarget(target, routePath, operation, data, isList));
    if (!unauthenticated) {
      token = readToken(request);
      auth = token ? (deps.tokens.authenticateNow(token) ?? (await deps.tokens.authenticate(token))) : undefined;
      if (trail) trail.authenticated(token, auth);
      // Vault's words for each: no token at all, or one it does not know (or that lapsed).
      if (!auth) throw noValidToken(token ? 'invalid token' : 'missing client token');
      // Tokens made by a login may be bound to the addresses it allowed.
      if (auth.entry?.boundCidrs && !cidrsAllow(auth.entry.boundCidrs, request.ip))
        throw forbidden('permission denied');
      if (resolved.kind === 'write' && target.kind === 'system' && target.match?.route.exists) {
        const m = target.match;
        const exists = await m.route.exists!({
          path: routePath,
          params: m.params,
          operation: 'update',
          body: data,
          query,
          requestId: request.id,
          request,
          reply,
        });
        operation = exists ? 'update' : 'create';
        if (trail) trail.resolved(trailTarget(target, routePath, operation, data, isList));
      }
      const aclPath = target.kind === 'mount' ? `${target.mount.path}/${target.rest}` : routePath;
      const acl = deps.policies.aclForNow(auth.info.policies) ?? (await deps.policies.aclFor(auth.info.policies));
      // Parameter constraints of the policy (allowed/denied/required) apply to the request data.
      const check = acl.check(aclPath, operation, data);
      if (!check.allowed) throw forbidden('permission denied');
      const listPath = isList ? `${routePath}/` : routePath;
      const needsSudo =
        (route !== undefined && 'sudo' in route && route.sudo === true) ||
        (target.kind === 'mount'
          ? isSudoPkiPath(isList ? `${target.rest}/` : target.rest)
          : target.kind === 'system' && isSudoSystemPath(listPath));
      if (needsSudo && !check.sudo) throw forbidden('permission denied');
      sudo = check.sudo;
    }

    // Response wrapping is not offered: refuse rather than hand out unwrapped what the client asked to have wrapped.
    if (firstHeader(request.headers['x-vault-wrap-ttl']))
      throw invalid('response wrapping (X-Vault-Wrap-TTL) is not supported by this server');

    if (target.kind === 'none' || !target.match) {
      if (target.kind !== 'none' && target.pathExists) throw httpError(405, 'unsupported operation');
      // No mount at that path: Vault's router names the path (a known mount without the route stays `[]`).
      const errors = target.kind === 'none' ? [`no handler for route "${rawPath}". route entry not found.`] : [];
      if (trail) {
        await trail.beforePerform();
        await trail.respond({ kind: 'status', status: 404, errors });
      }
      void reply.status(404).type('application/json').send(vaultError(errors));
      return reply;
    }
    if (resolved.kind === 'patch' && !isMergePatch(request.headers['content-type'])) {
      throw httpError(415, 'PATCH requires Content-Type: application/merge-patch+json');
    }

    const params = target.match.params;
    const requestId = request.id;
    let result: SystemResult;
    let mountType: string;
    // The request entry is written before anything is performed; no device able to write it refuses the request.
    if (trail) await trail.beforePerform();
    try {
      if (target.kind === 'mount') {
        // Plain literals of fixed shape: one context per request on the hot paths.
        const ctx: PkiRequestContext = {
          params,
          operation,
          body: data,
          query,
          requestId,
          request,
          reply,
          mount: toMountInfo(target.mount),
          path: target.rest,
          token: auth?.info,
        };
        result = await target.match.route.handler(ctx);
        mountType = target.mount.type;
      } else if (target.kind === 'auth') {
        const ctx: AuthRequestContext = {
          mount: target.mount,
          path: target.rest,
          params,
          operation,
          body: data,
          query,
          clientIp: request.ip,
          requestId,
          request,
          reply,
        };
        result = await target.match.route.handler(ctx);
        mountType = target.mount.type;
      } else {
        const ctx: SystemRequestContext = {
          params,
          operation,
          body: data,
          query,
          requestId,
          request,
          reply,
          path: routePath,
          caller: auth ? { token, info: auth.info, entry: auth.entry } : undefined,
          sudo,
        };
        result = await target.match.route.handler(ctx);
        mountType = target.match.route.mountType;
      }
    } catch (err) {
      // Vault answers a read or list that found nothing with an empty error list.
      if (isDomainError(err) && err.kind === 'not_found' && (operation === 'read' || operation === 'list')) {
        if (trail) await trail.respond({ kind: 'status', status: 404, errors: [] });
        void reply.status(404).type('application/json').send(vaultError([]));
        return reply;
      }
      throw err;
    }
    if (trail) await trail.respond(result);
    render(reply, result, { requestId: request.id, mountType, isList });
    // The answer may still be on its way when this returns (a stream, or an onSend hook that waits for the other
    // workers): Fastify must not answer again for an undefined result.
    return reply;
  };

  /**
   * The system route, or the mount route from the cached mount table; null when the mount table must be read (awaited).
   */
  function findTargetNow(path: string, ops: readonly VaultOperation[]): Target | null {
    if (path === 'sys' || path.startsWith('sys/') || path === 'auth/token' || path.startsWith('auth/token/')) {
      return { kind: 'system', ...lookupAny(systemTable, path, ops) };
    }
    if (isAuthMethodPath(path)) {
      const auth = deps.authMounts.resolveNow(path.slice(5));
      return auth ? authTarget(auth, ops) : null;
    }
    const hit = deps.mounts.resolveNow(path);
    return hit ? mountTarget(hit, ops) : null;
  }

  function mountTarget(hit: { mount: Mount; rest: string } | undefined, ops: readonly VaultOperation[]): Target {
    if (!hit) return { kind: 'none' };
    return { kind: 'mount', mount: hit.mount, rest: hit.rest, ...lookupAny(mountTable, hit.rest, ops) };
  }

  function authTarget(hit: { mount: AuthMount; rest: string } | undefined, ops: readonly VaultOperation[]): Target {
    if (!hit) return { kind: 'none' };
    const table = deps.authRoutes[methodOf(hit.mount.type)];
    return { kind: 'auth', mount: hit.mount, rest: hit.rest, ...lookupAny(table, hit.rest, ops) };
  }

  app.route({ method: [...METHODS], url: '/*', handler });
  app.route({ method: [...METHODS], url: '/', handler });
}

/** Where a request goes, as audit entries name it: mount point, type and accessor. */
type TrailMount = Pick<TrailTarget, 'mountPoint' | 'mountType' | 'mountAccessor'>;

const SYS_MOUNT: TrailMount = { mountPoint: 'sys/', mountType: 'system', mountAccessor: 'system' };
const TOKEN_MOUNT: TrailMount = { mountPoint: 'auth/token/', mountType: 'token', mountAccessor: 'auth_token' };
const NO_MOUNT: TrailMount = { mountPoint: '', mountType: '', mountAccessor: '' };
/** Made once per Mount or AuthMount object (a tune replaces the object). */
const trailMounts = new WeakMap<Mount | AuthMount, TrailMount>();

function trailMount(target: Target, path: string): TrailMount {
  if (target.kind === 'mount' || target.kind === 'auth') {
    const m = target.mount;
    let t = trailMounts.get(m);
    if (!t) {
      t =
        target.kind === 'mount'
          ? { mountPoint: `${m.path}/`, mountType: m.type, mountAccessor: mountAccessor(target.mount) }
          : { mountPoint: `auth/${m.path}/`, mountType: m.type, mountAccessor: authMountAccessor(target.mount) };
      trailMounts.set(m, t);
    }
    return t;
  }
  if (target.kind === 'system')
    return path === 'auth/token' || path.startsWith('auth/token/') ? TOKEN_MOUNT : SYS_MOUNT;
  return NO_MOUNT;
}

/** The mount a request goes to, as audit entries name it. */
function trailTarget(
  target: Target,
  path: string,
  operation: VaultOperation,
  data: unknown,
  isList: boolean,
): TrailTarget {
  const m = trailMount(target, path);
  return {
    operation,
    path,
    data,
    isList,
    mountPoint: m.mountPoint,
    mountType: m.mountType,
    mountAccessor: m.mountAccessor,
  };
}

/** `auth/<mount>/…` other than the built-in token store. */
function isAuthMethodPath(path: string): boolean {
  return path.startsWith('auth/') && path !== 'auth/token' && !path.startsWith('auth/token/');
}

function lookupAny<R extends SystemRoute | PkiRoute | AuthRoute>(
  table: RouteTable<R>,
  path: string,
  ops: readonly VaultOperation[],
): { match: RouteMatch<R> | undefined; pathExists: boolean } {
  let pathExists = false;
  for (const op of ops) {
    const r = table.lookup(path, op);
    if (r.found) return { match: r.found, pathExists: true };
    pathExists ||= r.pathExists;
  }
  return { match: undefined, pathExists };
}

function render(
  reply: FastifyReply,
  result: SystemResult,
  opts: { requestId: string; mountType: string; isList: boolean },
): void {
  switch (result.kind) {
    case 'empty':
      void reply.status(204).send();
      return;
    case 'status':
      void reply.status(result.status).send();
      return;
    case 'stream':
      void reply.status(200).headers(result.headers).type(result.contentType).send(Readable.from(result.body));
      return;
    case 'raw':
      void reply
        .status(result.status ?? 200)
        .type(result.contentType)
        .send(result.body);
      return;
    case 'json': {
      const r = result as Extract<SystemResult, { kind: 'json' }> & {
        auth?: unknown;
        copyToTopLevel?: boolean;
        repeated?: readonly string[];
      };
      if (opts.isList && isEmptyList(r.data) && !(r.warnings && r.warnings.length > 0)) {
        void reply.status(404).type('application/json').send(vaultError([]));
        return;
      }
      const envelope = vaultResponse(r.data ?? null, {
        requestId: opts.requestId,
        leaseId: r.leaseId,
        leaseDuration: r.leaseDuration,
        warnings: r.warnings,
        auth: r.auth,
        mountType: opts.mountType,
      });
      const body =
        r.copyToTopLevel && isRecord(r.data)
          ? JSON.stringify({ ...r.data, ...envelope })
          : vaultResponseJson(envelope, r.repeated);
      void reply
        .status(r.status ?? 200)
        .type('application/json')
        .send(body);
      return;
    }
  }
}

/** A LIST answer with no keys and nothing else is Vault's 404. */
function isEmptyList(data: unknown): boolean {
  if (data === null || data === undefined) return true;
  if (!isRecord(data)) return false;
  const keys = data['keys'];
  const others = Object.keys(data).filter((k) => k !== 'keys' && k !== 'key_info');
  return others.length === 0 && (!Array.isArray(keys) || keys.length === 0);
}

/** X-Secrets-Token, X-Vault-Token, or Authorization: Bearer. */
export function readToken(request: FastifyRequest): string {
  const h = request.headers;
  const direct = h['x-secrets-token'] ?? h['x-vault-token'];
  const v = Array.isArray(direct) ? direct[0] : direct;
  if (v) return v.trim();
  const authz = h.authorization;
  const m = authz ? /^Bearer\s+(.+)$/i.exec(authz) : null;
  return m ? (m[1] as string).trim() : '';
}

/** GET, LIST and DELETE take their parameters from the query string; writes from the body. */
function requestData(request: FastifyRequest, kind: string, query: Record<string, string>): Record<string, unknown> {
  const body: unknown = request.body;
  const hasBody = body !== undefined && body !== null && body !== '';
  if (hasBody && kind !== 'read' && kind !== 'list') {
    if (!isRecord(body)) throw invalid('the request body must be a JSON object');
    if (kind !== 'delete') return body;
  }
  const fromQuery: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(query)) if (k !== 'list') fromQuery[k] = v;
  return hasBody && kind === 'delete' ? { ...fromQuery, ...(body as Record<string, unknown>) } : fromQuery;
}

function flattenQuery(q: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (!isRecord(q)) return out;
  for (const [k, v] of Object.entries(q)) {
    const first: unknown = Array.isArray(v) ? v[0] : v;
    if (typeof first === 'string') out[k] = first;
  }
  return out;
}

function firstHeader(v: string | string[] | undefined): string {
  return (Array.isArray(v) ? (v[0] ?? '') : (v ?? '')).trim();
}

function isMergePatch(contentType: string | undefined): boolean {
  return (contentType ?? '').split(';')[0]?.trim().toLowerCase() === 'application/merge-patch+json';
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function httpError(status: number, message: string): Error & { statusCode: number } {
  return Object.assign(new Error(message), { statusCode: status });
}
