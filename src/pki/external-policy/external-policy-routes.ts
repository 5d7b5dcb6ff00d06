/**
 * config/external-policy and the external-policy issue / sign / sign-intermediate paths,
 * with and without issuer/:ref/ and :policy.
 * https://developer.hashicorp.com/vault/api-docs/secret/pki (config/external-policy, external-policy/*)
 * https://developer.hashicorp.com/vault/docs/secrets/pki/cieps (the protocol)
 */
import { jsonResult, mountLimits, parseInput } from '../config/route-kit.js';
import type { PkiRequestContext, PkiResult, PkiRoute } from '../pki-route.js';
import { defineFields } from '../vault-fields.js';
import type { FieldValues } from '../vault-fields.js';
import { ExternalPolicyFailure } from './external-policy.js';
import type { ExternalPolicyConfig, IssuanceMode } from './external-policy.js';
import type { ExternalPolicyRequest, ExternalPolicyService } from './external-policy-service.js';

const configFields = defineFields({
  enabled: { type: 'bool' },
  external_service_url: { type: 'string' },
  timeout: { type: 'duration' },
  trusted_ca: { type: 'string' },
  trusted_leaf_certificate_bundle: { type: 'string' },
  vault_client_cert_bundle: { type: 'string' },
});

/**
 * The only parameters parsed here, per mode; everything else, including a key_type sent to a
 * sign path or a csr sent to issue, goes to the service exactly as sent (reference 4.7).
 */
const outputFields = {
  format: { type: 'string', default: 'pem' },
  private_key_format: { type: 'string', default: 'der' },
  remove_roots_from_chain: { type: 'bool', default: false },
} as const;
const issueFields = defineFields({
  ...outputFields,
  key_type: { type: 'string', default: 'rsa' },
  key_bits: { type: 'int', default: 0 },
});
const signFields = defineFields({ ...outputFields, csr: { type: 'string', default: '' } });

type ParsedRequest = Pick<
  ExternalPolicyRequest,
  'format' | 'privateKeyFormat' | 'removeRootsFromChain' | 'keyType' | 'keyBits' | 'csr'
>;

const outputValues = (v: FieldValues<typeof outputFields>): ParsedRequest => ({
  format: v.format,
  privateKeyFormat: v.private_key_format,
  removeRootsFromChain: v.remove_roots_from_chain,
});

/** Parses the fields `mode` knows; the key is made here only on issue, a CSR is read only on the sign paths. */
function parseModeFields(mode: IssuanceMode, body: unknown): ParsedRequest {
  if (mode === 'issue') {
    const { values: v } = issueFields.parse(body);
    return { ...outputValues(v), keyType: v.key_type, keyBits: v.key_bits };
  }
  const { values: v } = signFields.parse(body);
  return { ...outputValues(v), csr: v.csr };
}

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
    // Beyond Vault: when the current settings were last validated by a well-formed answer.
    external_service_last_validated: rfc3339(c.validatedAt),
    last_successful_request: rfc3339(c.lastSuccessAt),
  };
}

export function externalPolicyRoutes(service: ExternalPolicyService): PkiRoute[] {
  const run = async (ctx: PkiRequestContext, mode: IssuanceMode): Promise<PkiResult> => {
    const parsed = parseModeFields(mode, ctx.body);
    const limits = mountLimits(ctx);
    try {
      const r = await service.issue({
        ...parsed,
        mount: ctx.mount,
        mode,
        policyName: ctx.params.policy ?? '',
        issuerRef: ctx.params.ref,
        userValues: ctx.body,
        actor: ctx.token,
        mountDefaultTtl: limits.defaultTtlSeconds,
        mountMaxTtl: limits.maxTtlSeconds,
      });
      // No lease on these paths: lease_id stays empty and lease_duration 0 (spec envelope table).
      return jsonResult(r.data, r.warnings);
    } catch (err) {
      // The upstream service failed: a gateway error whose message says what went wrong.
      if (err instanceof ExternalPolicyFailure)
        return {
          kind: 'raw',
          status: 502,
          contentType: 'application/json',
          body: JSON.stringify({ errors: [err.message] }),
        };
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
  const modes: [string, IssuanceMode][] = [
    ['issue', 'issue'],
    ['sign', 'sign'],
    ['sign-intermediate', 'ica'],
  ];
  for (const prefix of ['', 'issuer/:ref/']) {
    for (const [op, mode] of modes) {
      for (const suffix of ['', '/:policy']) {
        routes.push({
          pattern: `${prefix}external-policy/${op}${suffix}`,
          operations: ['update', 'create'],
          handler: (ctx) => run(ctx, mode),
        });
      }
    }
  }
  return routes;
}
