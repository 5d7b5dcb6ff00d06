import type { TLSSocket } from 'node:tls';
import type { FastifyRequest } from 'fastify';
import { invalid } from '../../../shared/errors.js';
import { defineFields } from '../../vault-fields.js';
import type { AuthRoute } from '../auth-route.js';
import { loginResult, roleName } from '../auth-route.js';
import { TOKEN_PARAM_FIELDS } from '../login-token.js';
import { certRoleView } from './cert-auth.js';
import type { CertAuthService } from './cert-auth-service.js';

/**
 * TLS certificates under auth/<path>/: certs/:name and login with the connection's client
 * certificate (the HTTPS listener asks for one without requiring it).
 * https://developer.hashicorp.com/vault/api-docs/auth/cert
 */

const CERT_FIELDS = defineFields({
  name: { type: 'string' },
  certificate: { type: 'string' },
  display_name: { type: 'string' },
  allowed_common_names: { type: 'commaList' },
  allowed_names: { type: 'commaList' },
  allowed_dns_sans: { type: 'commaList' },
  allowed_email_sans: { type: 'commaList' },
  allowed_uri_sans: { type: 'commaList' },
  allowed_organizational_units: { type: 'commaList' },
  required_extensions: { type: 'commaList' },
  ocsp_enabled: { type: 'bool' },
  lease: { type: 'duration' },
  ...TOKEN_PARAM_FIELDS,
});

const LOGIN_FIELDS = defineFields({ name: { type: 'string', default: '' } });

export function certAuthRoutes(certs: CertAuthService): AuthRoute[] {
  return [
    {
      pattern: 'login',
      fields: LOGIN_FIELDS,
      operations: ['update', 'create'],
      unauthenticated: true,
      async handler(ctx) {
        const { name } = LOGIN_FIELDS.parse(ctx.body).values;
        return loginResult(await certs.login(ctx.mount, name, peerChain(ctx.request), ctx.clientIp));
      },
    },
    {
      pattern: 'certs',
      operations: ['list'],
      handler: async (ctx) => ({ kind: 'json', data: { keys: await certs.list(ctx.mount) } }),
    },
    {
      pattern: 'certs/:name',
      fields: CERT_FIELDS,
      operations: ['read', 'create', 'update', 'delete'],
      async handler(ctx) {
        const name = roleName(ctx.params, 'name');
        if (ctx.operation === 'read') return { kind: 'json', data: certRoleView(await certs.read(ctx.mount, name)) };
        if (ctx.operation === 'delete') {
          await certs.delete(ctx.mount, name);
          return { kind: 'empty' };
        }
        const { values: v, warnings } = CERT_FIELDS.parse(ctx.body, ctx.params);
        // Checks this server does not make are refused rather than stored and silently skipped.
        if (v.ocsp_enabled === true) throw invalid('ocsp_enabled is not supported by this server', 'ocsp_enabled');
        if ((v.required_extensions ?? []).some((e) => e !== ''))
          throw invalid('required_extensions is not supported by this server', 'required_extensions');
        await certs.write(ctx.mount, name, ctx.body, {
          certificate: v.certificate,
          display_name: v.display_name,
          allowed_common_names: v.allowed_common_names ?? v.allowed_names,
          allowed_dns_sans: v.allowed_dns_sans,
          allowed_email_sans: v.allowed_email_sans,
          allowed_uri_sans: v.allowed_uri_sans,
          allowed_organizational_units: v.allowed_organizational_units,
        });
        return warnings.length > 0 ? { kind: 'json', data: null, warnings: [...warnings] } : { kind: 'empty' };
      },
    },
  ];
}

/** The client's certificate chain (leaf first, DER) from the TLS connection; empty without one. */
function peerChain(request: FastifyRequest): Buffer[] {
  const socket = request.raw.socket as Partial<TLSSocket>;
  if (typeof socket.getPeerCertificate !== 'function') return [];
  const out: Buffer[] = [];
  let c = socket.getPeerCertificate(true);
  const seen = new Set<string>();
  while (c && c.raw && !seen.has(c.fingerprint256) && out.length < 8) {
    seen.add(c.fingerprint256);
    out.push(c.raw);
    c = c.issuerCertificate;
  }
  return out;
}
