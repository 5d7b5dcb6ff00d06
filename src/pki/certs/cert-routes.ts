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
import type { CertService } from './cert-service.js';

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
