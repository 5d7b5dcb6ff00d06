import type { FastifyInstance, FastifyReply, HookHandlerDoneFunction } from 'fastify';
import { invalid } from '../../shared/errors.js';
import { defineFields } from '../vault-fields.js';
import { vaultError } from '../vault-envelope.js';
import type { SystemRoute } from '../sys/system-route.js';
import type { QuotaService } from './quota-service.js';
import type { RateLimitQuota } from './quota.js';

/**
 * sys/quotas/rate-limit/:name, LIST sys/quotas/rate-limit and sys/quotas/config, as Vault has them.
 * https://developer.hashicorp.com/vault/api-docs/system/rate-limit-quotas
 * https://developer.hashicorp.com/vault/api-docs/system/quotas-config
 */
const QUOTA_FIELDS = defineFields({
  name: { type: 'string' },
  path: { type: 'string' },
  rate: { type: 'any' },
  interval: { type: 'duration' },
  block_interval: { type: 'duration' },
  role: { type: 'string' },
  inheritable: { type: 'bool' },
  type: { type: 'string' },
});

const CONFIG_FIELDS = defineFields({
  rate_limit_exempt_paths: { type: 'commaList' },
  enable_rate_limit_audit_logging: { type: 'bool' },
  enable_rate_limit_response_headers: { type: 'bool' },
});

function parseRate(v: unknown): number | undefined {
  if (v === undefined || v === null || v === '') return undefined;
  const n = typeof v === 'number' ? v : Number(v);
  if (!Number.isFinite(n)) throw invalid(`error converting input ${JSON.stringify(v)} for field "rate"`, 'rate');
  return n;
}

export function quotaRoutes(quotas: QuotaService): SystemRoute[] {
  return [
    {
      pattern: 'sys/quotas/rate-limit',
      operations: ['list'],
      mountType: 'system',
      async handler() {
        return { kind: 'json', data: { keys: quotas.list() } };
      },
    },
    {
      pattern: 'sys/quotas/rate-limit/:name',
      operations: ['read', 'create', 'update', 'delete'],
      mountType: 'system',
      exists: async (ctx) => quotas.exists(ctx.params['name'] as string),
      async handler(ctx) {
        const name = ctx.params['name'] as string;
        if (ctx.operation === 'read') {
          const q = quotas.read(name);
          return {
            kind: 'json',
            data: {
              name: q.name,
              path: q.path === '' ? '' : `${q.path}/`,
              type: 'rate-limit',
              rate: q.rate,
              interval: q.intervalSeconds,
              block_interval: q.blockIntervalSeconds,
              role: '',
              inheritable: q.inheritable,
            },
          };
        }
        if (ctx.operation === 'delete') {
          await quotas.delete(name);
          return { kind: 'empty' };
        }
        const { values, supplied, warnings } = QUOTA_FIELDS.parse(ctx.body, { name });
        if (values.role) throw invalid('role-based rate-limit quotas are not supported by this server', 'role');
        if (values.type && values.type !== 'rate-limit') throw invalid(`unsupported quota type "${values.type}"`);
        await quotas.write(name, {
          ...(supplied.has('path') ? { path: values.path as string } : {}),
          ...(supplied.has('rate') ? { rate: parseRate(values.rate) as number } : {}),
          ...(supplied.has('interval') ? { interval: values.interval as number } : {}),
          ...(supplied.has('block_interval') ? { blockInterval: values.block_interval as number } : {}),
          ...(supplied.has('inheritable') ? { inheritable: values.inheritable as boolean } : {}),
        });
        return warnings.length > 0 ? { kind: 'json', data: null, warnings: [...warnings] } : { kind: 'empty' };
      },
    },
    {
      pattern: 'sys/quotas/config',
      operations: ['read', 'update'],
      mountType: 'system',
      async handler(ctx) {
        if (ctx.operation === 'read') {
          const c = await quotas.config();
          return {
            kind: 'json',
            data: {
              rate_limit_exempt_paths: c.rateLimitExemptPaths,
              enable_rate_limit_audit_logging: c.enableRateLimitAuditLogging,
              enable_rate_limit_response_headers: c.enableRateLimitResponseHeaders,
            },
          };
        }
        const { values, supplied } = CONFIG_FIELDS.parse(ctx.body);
        await quotas.writeConfig({
          ...(supplied.has('rate_limit_exempt_paths')
            ? { rateLimitExemptPaths: values.rate_limit_exempt_paths as string[] }
            : {}),
          ...(supplied.has('enable_rate_limit_audit_logging')
            ? { enableRateLimitAuditLogging: values.enable_rate_limit_audit_logging as boolean }
            : {}),
          ...(supplied.has('enable_rate_limit_response_headers')
            ? { enableRateLimitResponseHeaders: values.enable_rate_limit_response_headers as boolean }
            : {}),
        });
        return { kind: 'empty' };
      },
    },
  ];
}

/**
 * Applies the quotas to every request under /v1 before anything else runs (no token is read, nothing is written):
 * over the limit, 429 with Retry-After in Vault's envelope, as Vault answers.
 */
export function registerQuotaGuard(app: FastifyInstance, quotas: QuotaService): void {
  app.addHook('onRequest', (request, reply, done) => {
    if (quotas.empty) {
      done();
      return;
    }
    const url = request.url;
    const q = url.indexOf('?');
    const path = (q < 0 ? url.slice(4) : url.slice(4, q)).replace(/^\/+|\/+$/g, '');
    const quota = quotas.quotaFor(path);
    if (!quota) {
      done();
      return;
    }
    const client = request.ip;
    if (quotas.needsPrime(quota, client)) {
      quotas.prime(quota, client).then(
        () => decide(quota, path, client, reply, done),
        (err: unknown) => done(err as Error),
      );
      return;
    }
    decide(quota, path, client, reply, done);
  });

  function decide(
    quota: RateLimitQuota,
    path: string,
    client: string,
    reply: FastifyReply,
    done: HookHandlerDoneFunction,
  ): void {
    const a = quotas.admit(quota, client);
    if (a.headers) {
      void reply.header('x-ratelimit-limit', String(a.limit));
      void reply.header('x-ratelimit-remaining', String(a.remaining));
      void reply.header('x-ratelimit-reset', String(a.resetSeconds));
    }
    if (a.allowed) {
      done();
      return;
    }
    void reply
      .status(429)
      .header('retry-after', String(a.resetSeconds))
      .type('application/json')
      .send(vaultError([`request path ${JSON.stringify(path)}: rate limit quota exceeded`]));
  }
}
