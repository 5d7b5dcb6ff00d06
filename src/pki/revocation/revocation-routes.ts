/**
 * Revocation and CRLs: revoke, revoke-with-key, issuer/:ref/revoke, LIST certs/revoked,
 * config/crl, crl/rotate(-delta), issuer/:ref/sign-revocation-list and the CRL fetches.
 * https://developer.hashicorp.com/vault/api-docs/secret/pki#revoke-certificate
 * https://developer.hashicorp.com/vault/api-docs/secret/pki#read-issuer-crl
 * https://developer.hashicorp.com/vault/api-docs/secret/pki#set-revocation-configuration
 * https://developer.hashicorp.com/vault/api-docs/secret/pki#sign-revocation-list
 */
import { invalid } from '../../shared/errors.js';
import { parseDurationSeconds } from '../../shared/durations.js';
import { emptyResult, jsonResult, parseInput } from '../config/route-kit.js';
import { crlToPem } from '../crypto/crl.js';
import type { RevokedEntry } from '../crypto/crl.js';
import type { RawExtension } from '../crypto/extensions.js';
import { formatSerial, normalizeSerial } from '../crypto/serial.js';
import { issuerData } from '../issuers/issuer-routes.js';
import type { IssuerService } from '../issuers/issuer-service.js';
import type { PkiRequestContext, PkiResult, PkiRoute } from '../pki-route.js';
import { defineFields } from '../vault-fields.js';
import type { CrlService } from './crl-service.js';
import { revocationTimeFields } from './revocation.js';
import type { CrlConfig, CrlKind } from './revocation.js';
import type { RevocationService } from './revocation-service.js';

const PKIX_CRL = 'application/pkix-crl';
const PEM_FILE = 'application/x-pem-file';

const revokeFields = defineFields({ serial_number: { type: 'string' }, certificate: { type: 'string' } });
const revokeWithKeyFields = defineFields({
  serial_number: { type: 'string' },
  certificate: { type: 'string' },
  private_key: { type: 'string' },
});
const refFields = defineFields({ issuer_ref: { type: 'string', required: true } });
const pageFields = defineFields({ after: { type: 'string', default: '' }, limit: { type: 'int', default: 0 } });

const crlConfigFields = defineFields({
  expiry: { type: 'string' },
  disable: { type: 'bool' },
  ocsp_disable: { type: 'bool' },
  ocsp_expiry: { type: 'string' },
  auto_rebuild: { type: 'bool' },
  auto_rebuild_grace_period: { type: 'string' },
  enable_delta: { type: 'bool' },
  delta_rebuild_interval: { type: 'string' },
  cross_cluster_revocation: { type: 'bool' },
  unified_crl: { type: 'bool' },
  unified_crl_on_existing_paths: { type: 'bool' },
  max_crl_entries: { type: 'int' },
});

const signListFields = defineFields({
  issuer_ref: { type: 'string', required: true },
  crl_number: { type: 'int', required: true },
  delta_crl_base_number: { type: 'int', default: -1 },
  format: { type: 'string', default: 'pem' },
  next_update: { type: 'string', default: '72h' },
  revoked_certs: { type: 'any', default: [] },
  extensions: { type: 'any', default: [] },
});

/** CRL extensions a caller may not set on sign-revocation-list: CRL number, delta indicator, AKI. */
const RESERVED_CRL_EXTENSIONS = ['2.5.29.20', '2.5.29.27', '2.5.29.35'];

const crlConfigData = (c: CrlConfig): Record<string, unknown> => ({
  expiry: c.expiry,
  disable: c.disable,
  ocsp_disable: c.ocspDisable,
  ocsp_expiry: c.ocspExpiry,
  auto_rebuild: c.autoRebuild,
  auto_rebuild_grace_period: c.autoRebuildGracePeriod,
  enable_delta: c.enableDelta,
  delta_rebuild_interval: c.deltaRebuildInterval,
  cross_cluster_revocation: c.crossClusterRevocation,
  unified_crl: c.unifiedCrl,
  unified_crl_on_existing_paths: c.unifiedCrlOnExistingPaths,
  max_crl_entries: c.maxCrlEntries,
});

/** Stringish durations: Vault keeps the text; a bare number is seconds. */
const durationText = (v: string | undefined): string | undefined =>
  v === undefined ? undefined : /^\d+$/.test(v.trim()) ? `${v.trim()}s` : v.trim();

function extensionList(v: unknown, field: string): RawExtension[] {
  if (v === '' || v === null || v === undefined) return [];
  if (!Array.isArray(v)) throw invalid(`${field} must be a list of objects with id, critical and value`, field);
  return v.map((e: unknown, i: number) => {
    const o = e as { id?: unknown; critical?: unknown; value?: unknown };
    if (typeof o !== 'object' || o === null || typeof o.id !== 'string' || !/^\d+(\.\d+)+$/.test(o.id))
      throw invalid(`${field}[${i}]: id must be a dotted OID`, field);
    const value = Buffer.from(typeof o.value === 'string' ? o.value : '', 'base64');
    return { oid: o.id, critical: o.critical === true || o.critical === 'true', value };
  });
}

function revokedList(v: unknown): RevokedEntry[] {
  if (v === '' || v === null || v === undefined) return [];
  if (!Array.isArray(v)) throw invalid('revoked_certs must be a list of objects', 'revoked_certs');
  return v.map((e: unknown, i: number) => {
    const o = e as { serial_number?: unknown; revocation_time?: unknown; extensions?: unknown };
    if (typeof o !== 'object' || o === null || typeof o.serial_number !== 'string')
      throw invalid(`revoked_certs[${i}]: serial_number is required`, 'revoked_certs');
    let at: number;
    const t = o.revocation_time;
    if (typeof t === 'number' || (typeof t === 'string' && /^\d+$/.test(t))) at = Number(t) * 1000;
    else if (typeof t === 'string' && t !== '') at = Date.parse(t);
    else throw invalid(`revoked_certs[${i}]: revocation_time is required (Unix seconds or RFC 3339)`, 'revoked_certs');
    if (!Number.isFinite(at))
      throw invalid(`revoked_certs[${i}]: invalid revocation_time ${String(t)}`, 'revoked_certs');
    return {
      serial: normalizeSerial(o.serial_number),
      revocationDate: at,
      extensions: extensionList(o.extensions, `revoked_certs[${i}].extensions`),
    };
  });
}

export function revocationRoutes(revocation: RevocationService, crls: CrlService, issuers: IssuerService): PkiRoute[] {
  const revoke =
    (requireKey: boolean) =>
    async (ctx: PkiRequestContext): Promise<PkiResult> => {
      const { values, warnings } = requireKey ? parseInput(ctx, revokeWithKeyFields) : parseInput(ctx, revokeFields);
      const input = {
        serialNumber: values.serial_number,
        certificate: values.certificate,
        privateKey: (values as { private_key?: string }).private_key,
      };
      const r = await revocation.revoke(ctx.mount.id, input, { requireKey });
      if (r.kind === 'expired') return { kind: 'json', data: null, warnings: [...warnings, r.warning] };
      return jsonResult({ ...revocationTimeFields(r.revokedAt), state: 'revoked' }, warnings, r.warnings);
    };

  /** Raw DER/PEM: 204 when nothing is built. */
  const crlRaw = async (ctx: PkiRequestContext, ref: string, kind: CrlKind, pem: boolean): Promise<PkiResult> => {
    const crl = await crls.fetch(ctx.mount.id, ref, kind);
    if (!crl) return emptyResult();
    return pem
      ? { kind: 'raw', contentType: PEM_FILE, body: crlToPem(crl.der) }
      : { kind: 'raw', contentType: PKIX_CRL, body: crl.der };
  };
  /** JSON forms: cert/crl and cert/delta-crl put the PEM in `certificate` (a Vault quirk), issuer/:ref/crl in `crl`. */
  const crlJson = async (
    ctx: PkiRequestContext,
    ref: string,
    kind: CrlKind,
    field: 'certificate' | 'crl',
  ): Promise<PkiResult> => {
    const crl = await crls.fetch(ctx.mount.id, ref, kind);
    const pem = crl ? crlToPem(crl.der) : '';
    return jsonResult(
      field === 'certificate' ? { certificate: pem, revocation_time: 0, revocation_time_rfc3339: '' } : { crl: pem },
    );
  };
  const issuerRef = (ctx: PkiRequestContext): string => refFields.parse({}, ctx.params).values.issuer_ref;
  const fetchRoute = (pattern: string, handler: (ctx: PkiRequestContext) => Promise<PkiResult>): PkiRoute => ({
    pattern,
    operations: ['read'],
    unauthenticated: true,
    handler,
  });

  return [
    { pattern: 'revoke', operations: ['update', 'create'], handler: revoke(false) },
    { pattern: 'revoke-with-key', operations: ['update', 'create'], handler: revoke(true) },
    {
      pattern: 'issuer/:issuer_ref/revoke',
      operations: ['update', 'create'],
      handler: async (ctx) => {
        const { issuer, warnings } = await revocation.revokeIssuer(ctx.mount.id, issuerRef(ctx));
        return jsonResult(await issuerData(issuers, issuer), warnings);
      },
    },
    {
      pattern: 'certs/revoked',
      operations: ['list'],
      handler: async (ctx) => {
        const { values } = pageFields.parse(ctx.query);
        const after = values.after === '' ? undefined : normalizeSerial(values.after);
        const serials = await revocation.listRevoked(ctx.mount.id, { after, limit: values.limit });
        return jsonResult({ keys: serials.map((s) => formatSerial(s)) });
      },
    },
    {
      pattern: 'config/crl',
      operations: ['read'],
      handler: async (ctx) => jsonResult(crlConfigData(await crls.getConfig(ctx.mount.id))),
    },
    {
      pattern: 'config/crl',
      operations: ['update', 'create'],
      handler: async (ctx) => {
        const { values: v, warnings } = parseInput(ctx, crlConfigFields);
        const r = await crls.updateConfig(ctx.mount.id, {
          expiry: durationText(v.expiry),
          disable: v.disable,
          ocspDisable: v.ocsp_disable,
          ocspExpiry: durationText(v.ocsp_expiry),
          autoRebuild: v.auto_rebuild,
          autoRebuildGracePeriod: durationText(v.auto_rebuild_grace_period),
          enableDelta: v.enable_delta,
          deltaRebuildInterval: durationText(v.delta_rebuild_interval),
          crossClusterRevocation: v.cross_cluster_revocation,
          unifiedCrl: v.unified_crl,
          unifiedCrlOnExistingPaths: v.unified_crl_on_existing_paths,
          maxCrlEntries: v.max_crl_entries,
        });
        return jsonResult(crlConfigData(r.config), warnings, r.warnings);
      },
    },
    {
      pattern: 'crl/rotate',
      operations: ['read'],
      handler: async (ctx) =>
        jsonResult(
          { success: true },
          await crls.request(ctx.mount.id, { complete: true, delta: true, issuers: 'all' }),
        ),
    },
    {
      pattern: 'crl/rotate-delta',
      operations: ['read'],
      handler: async (ctx) => {
        const config = await crls.getConfig(ctx.mount.id);
        if (!config.enableDelta)
          return jsonResult({ success: true }, [
            'requested rebuild of delta CRL when delta CRL is not enabled; this is a no-op',
          ]);
        return jsonResult(
          { success: true },
          await crls.request(ctx.mount.id, { complete: false, delta: true, issuers: 'all' }),
        );
      },
    },
    {
      pattern: 'issuer/:issuer_ref/sign-revocation-list',
      operations: ['update', 'create'],
      handler: async (ctx) => {
        const { values: v, warnings } = parseInput(ctx, signListFields);
        if (v.format !== 'pem' && v.format !== 'der')
          throw invalid(`unknown format value: ${v.format}; must be pem or der`, 'format');
        if (v.crl_number < 0) throw invalid('crl_number must be non-negative', 'crl_number');
        if (v.delta_crl_base_number < -1)
          throw invalid('delta_crl_base_number must be -1 (a complete CRL) or non-negative', 'delta_crl_base_number');
        const extensions = extensionList(v.extensions, 'extensions');
        const reserved = extensions.find((e) => RESERVED_CRL_EXTENSIONS.includes(e.oid));
        if (reserved) throw invalid(`extension ${reserved.oid} is not allowed: it is set by the engine`, 'extensions');
        const der = await crls.signRevocationList(ctx.mount.id, v.issuer_ref, {
          crlNumber: v.crl_number,
          deltaCrlBaseNumber: v.delta_crl_base_number,
          nextUpdateSeconds: parseDurationSeconds(v.next_update, 'next_update'),
          revoked: revokedList(v.revoked_certs),
          extensions,
        });
        return jsonResult({ crl: v.format === 'pem' ? crlToPem(der) : der.toString('base64') }, warnings);
      },
    },
    fetchRoute('crl', (ctx) => crlRaw(ctx, 'default', 'complete', false)),
    fetchRoute('crl/pem', (ctx) => crlRaw(ctx, 'default', 'complete', true)),
    fetchRoute('crl/delta', (ctx) => crlRaw(ctx, 'default', 'delta', false)),
    fetchRoute('crl/delta/pem', (ctx) => crlRaw(ctx, 'default', 'delta', true)),
    fetchRoute('cert/crl', (ctx) => crlJson(ctx, 'default', 'complete', 'certificate')),
    fetchRoute('cert/delta-crl', (ctx) => crlJson(ctx, 'default', 'delta', 'certificate')),
    fetchRoute('issuer/:issuer_ref/crl', (ctx) => crlJson(ctx, issuerRef(ctx), 'complete', 'crl')),
    fetchRoute('issuer/:issuer_ref/crl/der', (ctx) => crlRaw(ctx, issuerRef(ctx), 'complete', false)),
    fetchRoute('issuer/:issuer_ref/crl/pem', (ctx) => crlRaw(ctx, issuerRef(ctx), 'complete', true)),
    fetchRoute('issuer/:issuer_ref/crl/delta', (ctx) => crlJson(ctx, issuerRef(ctx), 'delta', 'crl')),
    fetchRoute('issuer/:issuer_ref/crl/delta/der', (ctx) => crlRaw(ctx, issuerRef(ctx), 'delta', false)),
    fetchRoute('issuer/:issuer_ref/crl/delta/pem', (ctx) => crlRaw(ctx, issuerRef(ctx), 'delta', true)),
  ];
}
