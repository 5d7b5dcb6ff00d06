/**
 * Creating CAs: root/generate, issuers/generate/root, root/rotate, intermediate/generate,
 * issuers/generate/intermediate, intermediate/cross-sign, intermediate/set-signed,
 * config/ca, issuers/import/{bundle,cert}, DELETE root.
 * https://developer.hashicorp.com/vault/api-docs/secret/pki#generate-root
 * https://developer.hashicorp.com/vault/api-docs/secret/pki#generate-intermediate-csr
 * https://developer.hashicorp.com/vault/api-docs/secret/pki#import-ca-certificates-and-keys
 */
import type { KeyObject } from 'node:crypto';
import { emptyResult, jsonResult, mountLimits, parseInput } from '../config/route-kit.js';
import { exportPrivateKey } from '../crypto/keys.js';
import { formatSerial } from '../crypto/serial.js';
import type { PkiRequestContext, PkiRoute } from '../pki-route.js';
import { defineFields } from '../vault-fields.js';
import {
  CA_SUBJECT_FIELDS,
  parseFormat,
  parseGenerateType,
  parsePrivateKeyFormat,
  subjectRequest,
} from './ca-request.js';
import type { KeyRequest, OutputFormat, PrivateKeyFormat } from './ca-request.js';
import type { CaService, ImportResult } from './ca-service.js';
import { certificatePem } from './issuer-service.js';

const keyFields = {
  exported: { type: 'string', default: 'existing' },
  key_type: { type: 'string', default: 'rsa' },
  key_bits: { type: 'int', default: 0 },
  key_name: { type: 'string', default: '' },
  key_ref: { type: 'string', default: 'default' },
  managed_key_name: { type: 'string', default: '' },
  managed_key_id: { type: 'string', default: '' },
  format: { type: 'string', default: 'pem' },
  private_key_format: { type: 'string', default: 'der' },
  signature_bits: { type: 'int', default: 0 },
  key_usage: { type: 'commaList' },
} as const;

const rootFields = defineFields({
  ...CA_SUBJECT_FIELDS,
  ...keyFields,
  ttl: { type: 'duration' },
  not_after: { type: 'string', default: '' },
  use_pss: { type: 'bool', default: false },
  max_path_length: { type: 'int', default: -1 },
  permitted_dns_domains: { type: 'commaList', default: [] },
  not_before_duration: { type: 'duration', default: 30 },
  issuer_name: { type: 'string', default: '' },
});

const intermediateFields = defineFields({
  ...CA_SUBJECT_FIELDS,
  ...keyFields,
  add_basic_constraints: { type: 'bool', default: false },
});

const bundleFields = defineFields({ pem_bundle: { type: 'string', required: true } });
const setSignedFields = defineFields({ certificate: { type: 'string', required: true } });

function keyRequest(v: {
  exported: string;
  key_type: string;
  key_bits: number;
  key_name: string;
  key_ref: string;
  managed_key_name: string;
  managed_key_id: string;
}): KeyRequest {
  return {
    type: parseGenerateType(v.exported),
    keyType: v.key_type,
    keyBits: v.key_bits,
    keyName: v.key_name,
    keyRef: v.key_ref,
    managedKeyName: v.managed_key_name,
    managedKeyId: v.managed_key_id,
  };
}

/** Vault's `format`: PEM text, or base64 DER. */
const encodeCert = (der: Buffer, format: OutputFormat): string =>
  format === 'der' ? der.toString('base64') : certificatePem(der);

function privateKeyFields(
  key: KeyObject | undefined,
  format: OutputFormat,
  pkf: PrivateKeyFormat,
): Record<string, string> {
  if (!key) return {};
  return {
    private_key: exportPrivateKey(key, { format: format === 'der' ? 'der' : 'pem', privateKeyFormat: pkf }),
    private_key_type: key.asymmetricKeyType ?? '',
  };
}

async function generateRoot(
  ca: CaService,
  ctx: PkiRequestContext,
  opts: { rotate: boolean },
): Promise<ReturnType<typeof jsonResult>> {
  const { values: v, warnings } = rootFields.parse(ctx.body, ctx.params);
  const format = parseFormat(v.format);
  const pkf = parsePrivateKeyFormat(v.private_key_format);
  const issuerName = opts.rotate ? await ca.rotateName(ctx.mount.id, v.issuer_name) : v.issuer_name;
  const r = await ca.generateRoot(ctx.mount.id, mountLimits(ctx), {
    ...subjectRequest(v),
    ...keyRequest(v),
    ttl: v.ttl,
    notAfter: v.not_after,
    format,
    privateKeyFormat: pkf,
    signatureBits: v.signature_bits,
    usePss: v.use_pss,
    maxPathLength: v.max_path_length,
    keyUsage: v.key_usage ?? [],
    permittedDnsDomains: v.permitted_dns_domains,
    notBeforeDuration: v.not_before_duration,
    issuerName,
  });
  const cert = encodeCert(r.certificate.der, format);
  const pk = privateKeyFields(r.privateKey, format, pkf);
  const data: Record<string, unknown> = {
    expiration: Math.floor(r.certificate.notAfter.getTime() / 1000),
    serial_number: formatSerial(r.certificate.serialHex),
    certificate: format === 'pem_bundle' && pk.private_key ? `${pk.private_key}\n${cert}` : cert,
    issuing_ca: cert,
    issuer_id: r.issuer.id,
    issuer_name: r.issuer.name,
    key_id: r.key.id,
    key_name: r.key.name,
    ...pk,
  };
  return jsonResult(data, warnings, r.warnings);
}

async function generateIntermediate(
  ca: CaService,
  ctx: PkiRequestContext,
  crossSign: boolean,
): Promise<ReturnType<typeof jsonResult>> {
  const params = crossSign ? { ...ctx.params, exported: 'existing' } : ctx.params;
  const { values: v, warnings } = intermediateFields.parse(ctx.body, params);
  const format = parseFormat(v.format);
  const pkf = parsePrivateKeyFormat(v.private_key_format);
  const r = await ca.generateIntermediate(ctx.mount.id, {
    ...subjectRequest(v),
    ...keyRequest(v),
    format,
    privateKeyFormat: pkf,
    signatureBits: v.signature_bits,
    addBasicConstraints: v.add_basic_constraints,
    keyUsage: v.key_usage ?? [],
  });
  const pk = privateKeyFields(r.privateKey, format, pkf);
  const csr = format === 'der' ? r.csr.der.toString('base64') : r.csr.pem.trimEnd();
  const data: Record<string, unknown> = {
    csr: format === 'pem_bundle' && pk.private_key ? `${pk.private_key}\n${csr}` : csr,
    key_id: r.key.id,
    ...pk,
  };
  // cross-sign sends no `exported`; the replaced-parameter warning would only confuse.
  return jsonResult(
    data,
    crossSign ? warnings.filter((w) => !w.includes('captured from the endpoint')) : warnings,
    r.warnings,
  );
}

const importData = (r: ImportResult) => ({
  imported_issuers: r.importedIssuers.length > 0 ? r.importedIssuers : null,
  imported_keys: r.importedKeys.length > 0 ? r.importedKeys : null,
  mapping: r.mapping,
  existing_issuers: r.existingIssuers.length > 0 ? r.existingIssuers : null,
  existing_keys: r.existingKeys.length > 0 ? r.existingKeys : null,
});

export function caRoutes(ca: CaService): PkiRoute[] {
  const write = ['update', 'create'] as const;
  const importRoute = (pattern: string, allowKeys: boolean): PkiRoute => ({
    pattern,
    operations: [...write],
    handler: async (ctx) => {
      const { values: v, warnings } = parseInput(ctx, bundleFields);
      const r = await ca.importBundle(ctx.mount.id, v.pem_bundle, { allowKeys });
      return jsonResult(importData(r), warnings, r.warnings);
    },
  });
  return [
    {
      pattern: 'root/generate/:exported',
      operations: [...write],
      handler: (ctx) => generateRoot(ca, ctx, { rotate: false }),
    },
    {
      pattern: 'issuers/generate/root/:exported',
      operations: [...write],
      handler: (ctx) => generateRoot(ca, ctx, { rotate: false }),
    },
    {
      pattern: 'root/rotate/:exported',
      operations: [...write],
      handler: (ctx) => generateRoot(ca, ctx, { rotate: true }),
    },
    {
      pattern: 'intermediate/generate/:exported',
      operations: [...write],
      handler: (ctx) => generateIntermediate(ca, ctx, false),
    },
    {
      pattern: 'issuers/generate/intermediate/:exported',
      operations: [...write],
      handler: (ctx) => generateIntermediate(ca, ctx, false),
    },
    {
      pattern: 'intermediate/cross-sign',
      operations: [...write],
      handler: (ctx) => generateIntermediate(ca, ctx, true),
    },
    importRoute('config/ca', true),
    importRoute('issuers/import/bundle', true),
    importRoute('issuers/import/cert', false),
    {
      pattern: 'intermediate/set-signed',
      operations: [...write],
      handler: async (ctx) => {
        const { values: v, warnings } = parseInput(ctx, setSignedFields);
        const r = await ca.importBundle(ctx.mount.id, v.certificate, { allowKeys: false });
        return jsonResult(importData(r), warnings, r.warnings);
      },
    },
    {
      pattern: 'root',
      operations: ['delete'],
      sudo: true,
      handler: async (ctx) => {
        await ca.deleteAll(ctx.mount.id);
        return emptyResult();
      },
    },
  ];
}
