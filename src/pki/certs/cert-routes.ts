/**
 * LIST certs (paginated with `after`/`limit`, as OpenBao added) and the certificate
 * metadata reads. cert/:serial itself is served with the other authority fetches.
 * https://developer.hashicorp.com/vault/api-docs/secret/pki#list-certificates
 * https://developer.hashicorp.com/vault/api-docs/secret/pki#read-certificate-metadata
 */
import { jsonResult, notFoundResult } from '../config/route-kit.js';
import { formatSerial, normalizeSerial } from '../crypto/serial.js';
import type { PkiRoute } from '../pki-route.js';
import { defineFields } from '../vault-fields.js';
import { checkLimit, checkSort, decodeCursor, nameSubstring, parseInstant, serialPrefix } from './cert-search.js';
import type { CertService } from './cert-service.js';

const SEARCH_FIELDS = defineFields({
  serial: { type: 'string', default: '' },
  name: { type: 'string', default: '' },
  issuer: { type: 'string', default: '' },
  role: { type: 'string', default: '' },
  not_after_from: { type: 'string', default: '' },
  not_after_to: { type: 'string', default: '' },
  expiring_within: { type: 'duration' },
  revoked: { type: 'bool' },
  sort: { type: 'string', default: 'not_after' },
  order: { type: 'string', default: 'asc' },
  limit: { type: 'int', default: 0 },
  after: { type: 'string', default: '' },
});

const PAGE_FIELDS = defineFields({ after: { type: 'string', default: '' }, limit: { type: 'int', default: 0 } });

export function certRoutes(certs: CertService): PkiRoute[] {
  return [
    {
      pattern: 'certs',
      operations: ['list'],
      handler: async (ctx) => {
        const { values } = PAGE_FIELDS.parse(ctx.query);
        const after = values.after === '' ? undefined : normalizeSerial(values.after);
        const serials = await certs.listSerials(ctx.mount.id, { after, limit: values.limit });
        return jsonResult({ keys: serials.map((s) => formatSerial(s)) });
      },
    },
    {
      // Ours, not Vault's: docs/pki-cert-search.md.
      pattern: 'certs/search',
      operations: ['read'],
      handler: async (ctx) => {
        const { values: v, warnings } = SEARCH_FIELDS.parse(ctx.query);
        const page = await certs.search(ctx.mount.id, {
          serialPrefix: v.serial.trim() === '' ? undefined : serialPrefix(v.serial),
          name: nameSubstring(v.name),
          issuer: v.issuer.trim() === '' ? undefined : v.issuer.trim(),
          role: v.role.trim() === '' ? undefined : v.role.trim(),
          notAfterFrom: parseInstant(v.not_after_from, 'not_after_from'),
          notAfterTo: parseInstant(v.not_after_to, 'not_after_to'),
          expiringWithinSeconds: v.expiring_within,
          revoked: v.revoked,
          ...checkSort(v.sort, v.order),
          limit: checkLimit(v.limit),
          after: decodeCursor(v.after),
        });
        return jsonResult(
          {
            keys: page.hits.map((h) => formatSerial(h.serial)),
            certificates: page.hits.map((h) => ({
              serial_number: formatSerial(h.serial),
              common_name: h.commonName,
              names: h.names,
              issuer_id: h.issuerId ?? '',
              role: h.role ?? '',
              not_after: unixSeconds(h.notAfter),
              created_at: unixSeconds(h.createdAt),
              revoked: h.revokedAt !== null,
              revocation_time: h.revokedAt ? unixSeconds(h.revokedAt) : 0,
            })),
            next: page.next ?? '',
          },
          warnings,
        );
      },
    },
    {
      pattern: 'cert-metadata',
      operations: ['list'],
      handler: async (ctx) =>
        jsonResult({ keys: (await certs.metadataSerials(ctx.mount.id)).map((s) => formatSerial(s)) }),
    },
    {
      pattern: 'cert-metadata/:serial',
      operations: ['read'],
      handler: async (ctx) => {
        const m = await certs.metadata(ctx.mount.id, normalizeSerial(ctx.params.serial ?? ''));
        if (!m) return notFoundResult();
        return jsonResult({
          cert_metadata: m.metadata,
          expiration: m.notAfter.toISOString().replace(/\.\d{3}Z$/, 'Z'),
          issuer_id: m.issuerId,
          role: m.role,
          serial_number: formatSerial(m.serial),
        });
      },
    },
  ];
}

const unixSeconds = (d: Date): number => Math.floor(d.getTime() / 1000);
