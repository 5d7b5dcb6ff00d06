import type { AuditService } from '../../audit/audit-service.js';
import type { AuditDevice } from '../../audit/audit-device.js';
import { defineFields } from '../vault-fields.js';
import type { SystemRoute } from './system-route.js';

/**
 * sys/audit (list, enable, disable: `sudo`, as in vault-paths.ts) and sys/audit-hash.
 * https://developer.hashicorp.com/vault/api-docs/system/audit
 * https://developer.hashicorp.com/vault/api-docs/system/audit-hash
 */
const ENABLE_FIELDS = defineFields({
  type: { type: 'string', default: '' },
  description: { type: 'string' },
  options: { type: 'map' },
  local: { type: 'bool' },
});
const HASH_FIELDS = defineFields({
  input: { type: 'string', default: '' },
});

export function auditRoutes(audit: AuditService): SystemRoute[] {
  return [
    {
      pattern: 'sys/audit',
      operations: ['read'],
      mountType: 'system',
      sudo: true,
      async handler() {
        const data: Record<string, unknown> = {};
        for (const d of await audit.list()) data[`${d.path}/`] = deviceEntry(d);
        return { kind: 'json', data, copyToTopLevel: true };
      },
    },
    {
      pattern: 'sys/audit/*path',
      operations: ['create', 'update', 'delete'],
      mountType: 'system',
      sudo: true,
      async handler(ctx) {
        const path = ctx.params['path'] as string;
        if (ctx.operation === 'delete') {
          await audit.disable(path);
          return { kind: 'empty' };
        }
        const v = ENABLE_FIELDS.parse(ctx.body).values;
        await audit.enable(path, {
          type: v.type,
          description: v.description,
          options: v.options as Record<string, unknown> | undefined,
          local: v.local,
        });
        return { kind: 'empty' };
      },
    },
    {
      pattern: 'sys/audit-hash/*path',
      operations: ['create', 'update'],
      mountType: 'system',
      async handler(ctx) {
        const input = HASH_FIELDS.parse(ctx.body).values.input;
        const hash = await audit.hash(ctx.params['path'] as string, input);
        return { kind: 'json', data: { hash }, copyToTopLevel: true };
      },
    },
  ];
}

function deviceEntry(d: AuditDevice): Record<string, unknown> {
  return { type: d.type, description: d.description, options: d.options, local: d.local, path: `${d.path}/` };
}
