import { invalid, notFound } from '../../shared/errors.js';
import type { SystemRequestContext, SystemResult, SystemRoute } from '../sys/system-route.js';
import type { PolicyService } from './policy-service.js';

/**
 * ACL policy endpoints: sys/policies/acl and the legacy sys/policy that hvac uses.
 * https://developer.hashicorp.com/vault/api-docs/system/policies
 * https://developer.hashicorp.com/vault/api-docs/system/policy
 */
export function policyRoutes(policies: PolicyService): SystemRoute[] {
  const exists = async (ctx: Pick<SystemRequestContext, 'params'>) => policies.exists(ctx.params['name'] as string);

  const write = async (ctx: SystemRequestContext, ...keys: string[]): Promise<SystemResult> => {
    let text: unknown;
    for (const k of keys) if (text === undefined || text === null) text = ctx.body[k];
    if (typeof text !== 'string' || text.trim() === '')
      throw invalid("'policy' parameter not supplied or empty", 'policy');
    await policies.write(ctx.params['name'] as string, text);
    ctx.request.log.info({ policy: ctx.params['name'] }, 'policy written');
    return { kind: 'empty' };
  };

  return [
    {
      pattern: 'sys/policies/acl',
      operations: ['list'],
      mountType: 'system',
      async handler() {
        return { kind: 'json', data: { keys: await policies.list() } };
      },
    },
    {
      pattern: 'sys/policies/acl/:name',
      operations: ['read', 'create', 'update', 'delete'],
      mountType: 'system',
      exists,
      async handler(ctx) {
        const name = ctx.params['name'] as string;
        if (ctx.operation === 'read') {
          const p = await policies.read(name);
          if (!p) throw notFound(`no policy named ${name}`);
          return { kind: 'json', data: { name: p.name, policy: p.text } };
        }
        if (ctx.operation === 'delete') {
          await policies.delete(name);
          ctx.request.log.info({ policy: name }, 'policy deleted');
          return { kind: 'empty' };
        }
        return write(ctx, 'policy');
      },
    },
    {
      pattern: 'sys/policy',
      operations: ['read', 'list'],
      mountType: 'system',
      async handler() {
        const names = await policies.list();
        return { kind: 'json', data: { keys: names, policies: names }, copyToTopLevel: true };
      },
    },
    {
      pattern: 'sys/policy/:name',
      operations: ['read', 'create', 'update', 'delete'],
      mountType: 'system',
      exists,
      async handler(ctx) {
        const name = ctx.params['name'] as string;
        if (ctx.operation === 'read') {
          const p = await policies.read(name);
          if (!p) throw notFound(`no policy named ${name}`);
          return { kind: 'json', data: { name: p.name, rules: p.text }, copyToTopLevel: true };
        }
        if (ctx.operation === 'delete') {
          await policies.delete(name);
          ctx.request.log.info({ policy: name }, 'policy deleted');
          return { kind: 'empty' };
        }
        return write(ctx, 'policy', 'rules');
      },
    },
  ];
}
