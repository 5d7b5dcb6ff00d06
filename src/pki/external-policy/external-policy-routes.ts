/**
 * config/external-policy and the external-policy issue / sign / sign-intermediate paths,
 * with and without issuer/:ref/ and :policy.
 * https://developer.hashicorp.com/vault/api-docs/secret/pki (config/external-policy, external-policy/*)
 * https://developer.hashicorp.com/vault/docs/secrets/pki/cieps (the protocol)
 */
import { jsonResult, mountLimits, parseInput } from '../config/route-kit.js';
import type { PkiRequestContext, PkiResult, PkiRoute } from '../pki-route.js';
import { defineFields } from '../vault-fields.js';
import { ExternalPolicyFailure } from './external-policy.js';
import type { ExternalPolicyConfig, IssuanceMode } from './external-policy.js';
import type { ExternalPolicyService } from './external-policy-service.js';

const configFields = defineFields({
  enabled: { type: 'bool' },
  external_service_url: { type: 'string' },
  timeout: { type: 'duration' },
  trusted_ca: { type: 'string' },
  trusted_leaf_certificate_bundle: { type: 'string' },
  vault_client_cert_bundle: { type: 'string' },
});

/** The only parameters parsed here; everything else goes to the service as sent (reference 4.7). */
const issueFields = defineFields({
  format: { type: 'string', default: 'pem' },
  private_key_format: { type: 'string', default: 'der' },
  remove_roots_from_chain: { type: 'bool', default: false },
  key_type: { type: 'string', default: 'rsa' },
  key_bits: { type: 'int', default: 0 },
  csr: { type: 'string', default: '' },
});

const rfc3339 = (d: Date | null): string | null => (d ? d.toISOString().replace(/\.\d{3}Z$/, 'Z') : null);

/** The read shape; the client key is never part of it. `timeout` is in nanoseconds as Vault reads it back. */
export function configData(c: ExternalPolicyConfig): Record<string, unknown> {
  return {
    enabled: c.enabled,
    external_service_url: c.serviceUrl,
    timeout: c.timeoutSeconds * 1_000_000_000,
    trusted_ca: c.trustedCa,
    trusted_leaf_certificate_bundle: c.trustedLeafBundle,
    vault_client_cert_bundle: c.clientCertBundle,
    entity_jmespath: '',
    group_jmespath: '',
    external_service_last_updated: rfc3339(c.updatedAt),
    external_service_validated: c.validatedAt !== null,
    last_successful_request: rfc3339(c.lastSuccessAt),
  };
}

export function externalPolicyRoutes(service: ExternalPolicyService): PkiRoute[] {
  const run = async (ctx: PkiRequestContext, mode: IssuanceMode): Promise<PkiResult> => {
    const { values: v } = issueFields.parse(ctx.body);
    const limits = mountLimits(ctx);
    try {
      const r = await service.issue({
        mount: ctx.mount,
        mode,
        policyName: ctx.params.policy ?? '',
        issuerRef: ctx.params.ref,
        userValues: ctx.body,
        format: v.format,
        privateKeyFormat: v.private_key_format,
        removeRootsFromChain: v.remove_roots_from_chain,
        keyType: v.key_type,
        keyBits: v.key_bits,
        csr: v.csr,
        actor: ctx.token,
        mountDefaultTtl: limits.defaultTtlSeconds,
        mountMaxTtl: limits.maxTtlSeconds,
      });
      // No lease on these paths: lease_id stays empty and lease_duration 0 (spec envelope table).
      return jsonResult(r.data, r.warnings);
    } catch (err) {
      // The upstream service failed: a gateway error whose message says what went wrong.
      if (err instanceof ExternalPolicyFailure) return { kind: 'raw', status: 502, contentType: 'application/json', body: JSON.stringify({ errors: [err.message] }) };
      throw err;
    }
  };

  const routes: PkiRoute[] = [
    {
      pattern: 'config/external-policy',
      operations: ['read'],
      handler: async (ctx) => jsonResult(configData(await service.getConfig(ctx.mount.id))),
    },
    {
      pattern: 'config/external-policy',
      operations: ['update', 'create'],
      handler: async (ctx) => {
        const { values: v, warnings } = parseInput(ctx, configFields);
        const c = await service.updateConfig(ctx.mount.id, {
          enabled: v.enabled,
          serviceUrl: v.external_service_url,
          timeoutSeconds: v.timeout,
          trustedCa: v.trusted_ca,
          trustedLeafBundle: v.trusted_leaf_certificate_bundle,
          clientBundle: v.vault_client_cert_bundle,
        });
        return jsonResult(configData(c), warnings);
      },
    },
  ];
  const modes: [string, IssuanceMode][] = [['issue', 'issue'], ['sign', 'sign'], ['sign-intermediate', 'ica']];
  for (const prefix of ['', 'issuer/:ref/']) {
    for (const [op, mode] of modes) {
      for (const suffix of ['', '/:policy']) {
        routes.push({ pattern: `${prefix}external-policy/${op}${suffix}`, operations: ['update', 'create'], handler: (ctx) => run(ctx, mode) });
      }
    }
  }
  return routes;
}
