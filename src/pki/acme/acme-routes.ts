/**
 * The Vault API of the ACME server: config/acme, external account binding keys
 * (acme/new-eab under every directory prefix, LIST eab, DELETE eab/:key_id) and account
 * management (acme/mgmt/account/keyid). These take a Vault token like any other path.
 * https://developer.hashicorp.com/vault/api-docs/secret/pki/issuance#set-acme-configuration
 * https://developer.hashicorp.com/vault/api-docs/secret/pki/issuance#get-acme-eab-binding-token
 * https://developer.hashicorp.com/vault/api-docs/secret/pki/issuance#acme-account-management
 */
import { emptyResult, jsonResult, parseInput } from '../config/route-kit.js';
import type { PkiRoute } from '../pki-route.js';
import { defineFields } from '../vault-fields.js';
import type { AcmeConfig, EabPolicy } from './acme.js';
import type { AccountDetails, AcmeService } from './acme-service.js';

const configFields = defineFields({
  enabled: { type: 'bool' },
  allowed_issuers: { type: 'commaList' },
  allowed_roles: { type: 'commaList' },
  allow_role_ext_key_usage: { type: 'bool' },
  default_directory_policy: { type: 'string' },
  dns_resolver: { type: 'string' },
  eab_policy: { type: 'string' },
  max_ttl: { type: 'duration' },
});

const statusFields = defineFields({ status: { type: 'string', default: '' } });

const rfc3339 = (d: Date): string => d.toISOString().replace(/\.\d{3}Z$/, 'Z');

export const acmeConfigData = (c: AcmeConfig) => ({
  enabled: c.enabled,
  allowed_issuers: c.allowedIssuers,
  allowed_roles: c.allowedRoles,
  allow_role_ext_key_usage: c.allowRoleExtKeyUsage,
  default_directory_policy: c.defaultDirectoryPolicy,
  dns_resolver: c.dnsResolver,
  eab_policy: c.eabPolicy,
  max_ttl: c.maxTtl,
});

const accountData = ({ account: a, orders }: AccountDetails) => ({
  key_id: a.id,
  status: a.status,
  contacts: a.contact,
  created_time: rfc3339(a.createdAt),
  revoked_time: a.revokedAt ? rfc3339(a.revokedAt) : null,
  directory: a.directory,
  eab: a.eab
    ? { eab_id: a.eab.id, directory: a.directory, created_time: rfc3339(a.eab.createdAt), key_type: 'hs' }
    : {},
  orders: orders.map((o) => ({
    order_id: o.id,
    status: o.status,
    identifiers: o.identifiers.map((i) => i.value),
    cert_serial_number: o.certSerial ? o.certSerial.replace(/(..)(?!$)/g, '$1:') : '',
    cert_expiry: o.certNotAfter ? rfc3339(o.certNotAfter) : '',
    order_expiry: rfc3339(o.expiresAt),
  })),
});

export function acmeRoutes(acme: AcmeService): PkiRoute[] {
  const newEab: PkiRoute['handler'] = async (ctx) => {
    const e = await acme.newEab(ctx.mount, { issuerRef: ctx.params.ref, role: ctx.params.role });
    return jsonResult({
      id: e.id,
      key_type: e.keyType,
      key: e.key,
      acme_directory: `${e.directory}directory`,
      created_on: rfc3339(e.createdAt),
    });
  };
  return [
    {
      pattern: 'config/acme',
      operations: ['read'],
      handler: async (ctx) => jsonResult(acmeConfigData(await acme.getConfig(ctx.mount.id))),
    },
    {
      pattern: 'config/acme',
      operations: ['update', 'create'],
      handler: async (ctx) => {
        const { values: v, warnings } = parseInput(ctx, configFields);
        const c = await acme.updateConfig(ctx.mount.id, {
          enabled: v.enabled,
          allowedIssuers: v.allowed_issuers,
          allowedRoles: v.allowed_roles,
          allowRoleExtKeyUsage: v.allow_role_ext_key_usage,
          defaultDirectoryPolicy: v.default_directory_policy,
          dnsResolver: v.dns_resolver,
          eabPolicy: v.eab_policy as EabPolicy | undefined,
          maxTtl: v.max_ttl,
        });
        return jsonResult(acmeConfigData(c), warnings);
      },
    },
    ...['', 'issuer/:ref/', 'roles/:role/', 'issuer/:ref/roles/:role/'].map((prefix): PkiRoute => ({
      pattern: `${prefix}acme/new-eab`,
      operations: ['update', 'create'],
      handler: newEab,
    })),
    {
      pattern: 'eab',
      operations: ['list'],
      handler: async (ctx) => {
        const all = await acme.listEab(ctx.mount.id);
        return jsonResult({
          keys: all.map((e) => e.id),
          key_info: Object.fromEntries(
            all.map((e) => [
              e.id,
              { created_on: rfc3339(e.createdAt), key_type: e.keyType, acme_directory: `${e.directory}directory` },
            ]),
          ),
        });
      },
    },
    {
      pattern: 'eab/:key_id',
      operations: ['delete'],
      handler: async (ctx) => {
        await acme.deleteEab(ctx.mount.id, ctx.params.key_id!);
        return emptyResult();
      },
    },
    {
      pattern: 'acme/mgmt/account/keyid',
      operations: ['list'],
      handler: async (ctx) => jsonResult({ keys: await acme.accountIds(ctx.mount.id) }),
    },
    {
      pattern: 'acme/mgmt/account/keyid/:keyid',
      operations: ['read'],
      handler: async (ctx) => jsonResult(accountData(await acme.accountDetails(ctx.mount.id, ctx.params.keyid!))),
    },
    {
      pattern: 'acme/mgmt/account/keyid/:keyid',
      operations: ['update', 'create'],
      handler: async (ctx) => {
        const { values: v } = parseInput(ctx, statusFields);
        return jsonResult(accountData(await acme.setAccountStatus(ctx.mount.id, ctx.params.keyid!, v.status)));
      },
    },
  ];
}
