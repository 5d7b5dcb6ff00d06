/**
 * roles, roles/:name: LIST, read, write (full replace), PATCH, delete.
 * https://developer.hashicorp.com/vault/api-docs/secret/pki#create-update-role
 * https://developer.hashicorp.com/vault/api-docs/secret/pki#patch-role
 */
import { jsonResult, emptyResult, parseInput } from '../config/route-kit.js';
import type { PkiRoute } from '../pki-route.js';
import { defineFields } from '../vault-fields.js';
import { ROLE_FIELD_NAMES, ROLE_FIELDS, roleData } from './role.js';
import type { RoleService } from './role-service.js';

const LIST_FIELDS = defineFields({ after: { type: 'string', default: '' }, limit: { type: 'int', default: 0 } });

export function roleRoutes(roles: RoleService): PkiRoute[] {
  return [
    {
      pattern: 'roles',
      operations: ['list'],
      handler: async (ctx) => {
        const q = LIST_FIELDS.parse(ctx.query);
        return jsonResult({ keys: await roles.list(ctx.mount.id, { after: q.values.after, limit: q.values.limit }) });
      },
    },
    {
      pattern: 'roles/:name',
      operations: ['read'],
      handler: async (ctx) => jsonResult(roleData(await roles.read(ctx.mount.id, ctx.params.name ?? ''))),
    },
    {
      pattern: 'roles/:name',
      operations: ['update', 'create'],
      handler: async (ctx) => {
        const input = parseInput(ctx, ROLE_FIELDS);
        const values: Record<string, unknown> = {};
        for (const k of ROLE_FIELD_NAMES) values[k] = input.values[k];
        const { role, warnings } = await roles.write(
          ctx.mount.id,
          ctx.params.name ?? '',
          values as Parameters<RoleService['write']>[2],
        );
        return jsonResult(roleData(role), warnings, input.warnings);
      },
    },
    {
      pattern: 'roles/:name',
      operations: ['patch'],
      handler: async (ctx) => {
        const input = parseInput(ctx, ROLE_FIELDS);
        const changes: Record<string, unknown> = {};
        // A merge patch sets a field to null to remove it, which puts back its default.
        for (const k of ROLE_FIELD_NAMES)
          if (input.supplied.has(k) || ctx.body[k] === null) changes[k] = input.values[k];
        const { role, warnings } = await roles.patch(ctx.mount.id, ctx.params.name ?? '', changes);
        return jsonResult(roleData(role), warnings, input.warnings);
      },
    },
    {
      pattern: 'roles/:name',
      operations: ['delete'],
      handler: async (ctx) => {
        await roles.delete(ctx.mount.id, ctx.params.name ?? '');
        return emptyResult();
      },
    },
  ];
}
