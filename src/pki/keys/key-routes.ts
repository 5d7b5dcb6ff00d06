/**
 * Keys: LIST keys, keys/generate/:type, keys/import, key/:key_ref, config/keys.
 * https://developer.hashicorp.com/vault/api-docs/secret/pki#list-keys
 */
import { emptyResult, jsonResult, notFoundResult, parseInput } from '../config/route-kit.js';
import { exportPrivateKey } from '../crypto/keys.js';
import type { PkiRoute } from '../pki-route.js';
import { defineFields } from '../vault-fields.js';
import { invalid } from '../../shared/errors.js';
import { colonHex } from './key.js';
import type { PkiKey } from './key.js';
import type { KeyService } from './key-service.js';

const generateFields = defineFields({
  exported: { type: 'string', required: true },
  key_name: { type: 'string', default: '' },
  key_type: { type: 'string', default: 'rsa' },
  key_bits: { type: 'int', default: 0 },
  managed_key_name: { type: 'string', default: '' },
  managed_key_id: { type: 'string', default: '' },
});

const importFields = defineFields({
  pem_bundle: { type: 'string', required: true },
  key_name: { type: 'string', default: '' },
});

const refFields = defineFields({ key_ref: { type: 'string', required: true } });
const updateFields = defineFields({
  key_ref: { type: 'string', required: true },
  key_name: { type: 'string', default: '' },
});
const configFields = defineFields({ default: { type: 'string', default: '' } });

export const keyData = (k: PkiKey) => ({
  key_id: k.id,
  key_name: k.name,
  key_type: k.type,
  subject_key_id: colonHex(k.subjectKeyId),
});

export function keyRoutes(keys: KeyService): PkiRoute[] {
  return [
    {
      pattern: 'keys',
      operations: ['list'],
      handler: async (ctx) => {
        const list = await keys.list(ctx.mount.id);
        if (list.length === 0) return notFoundResult();
        return jsonResult({
          keys: list.map((k) => k.id),
          key_info: Object.fromEntries(list.map((k) => [k.id, { key_name: k.name }])),
        });
      },
    },
    {
      pattern: 'keys/generate/:exported',
      operations: ['update', 'create'],
      handler: async (ctx) => {
        const { values: v, warnings } = parseInput(ctx, generateFields);
        if (v.exported === 'kms' || v.managed_key_name !== '' || v.managed_key_id !== '') {
          throw invalid('managed keys (kms, managed_key_name, managed_key_id) are not supported by this server');
        }
        if (v.exported !== 'internal' && v.exported !== 'exported')
          throw invalid('invalid type: must be "internal", "exported" or "kms"');
        const { key, privateKey } = await keys.generate(ctx.mount.id, {
          keyType: v.key_type,
          keyBits: v.key_bits,
          keyName: v.key_name,
        });
        const data: Record<string, unknown> = { key_id: key.id, key_name: key.name, key_type: key.type };
        if (v.exported === 'exported') data.private_key = exportPrivateKey(privateKey, { format: 'pem' });
        return jsonResult(data, warnings);
      },
    },
    {
      pattern: 'keys/import',
      operations: ['update', 'create'],
      handler: async (ctx) => {
        const { values: v, warnings } = parseInput(ctx, importFields);
        const r = await keys.importKey(ctx.mount.id, v.pem_bundle, v.key_name);
        const extra = r.existing ? [`key ${r.key.id} already exists in this mount; it was not imported again`] : [];
        return jsonResult({ key_id: r.key.id, key_name: r.key.name, key_type: r.key.type }, warnings, extra);
      },
    },
    {
      pattern: 'key/:key_ref',
      operations: ['read'],
      handler: async (ctx) => {
        const { values: v } = refFields.parse({}, ctx.params);
        return jsonResult(keyData(await keys.resolve(ctx.mount.id, v.key_ref)));
      },
    },
    {
      pattern: 'key/:key_ref',
      operations: ['update', 'create'],
      handler: async (ctx) => {
        const { values: v, warnings } = parseInput(ctx, updateFields);
        return jsonResult(keyData(await keys.rename(ctx.mount.id, v.key_ref, v.key_name)), warnings);
      },
    },
    {
      pattern: 'key/:key_ref',
      operations: ['delete'],
      handler: async (ctx) => {
        const { values: v } = refFields.parse({}, ctx.params);
        const r = await keys.delete(ctx.mount.id, v.key_ref);
        if (r.wasDefault)
          return jsonResult(null, ['the deleted key was the default key; set a new default with config/keys']);
        return emptyResult();
      },
    },
    {
      pattern: 'config/keys',
      operations: ['read'],
      handler: async (ctx) => jsonResult({ default: await keys.getDefaultKeyId(ctx.mount.id) }),
    },
    {
      pattern: 'config/keys',
      operations: ['update', 'create'],
      handler: async (ctx) => {
        const { values: v, warnings } = parseInput(ctx, configFields);
        return jsonResult({ default: await keys.setDefault(ctx.mount.id, v.default) }, warnings);
      },
    },
  ];
}
