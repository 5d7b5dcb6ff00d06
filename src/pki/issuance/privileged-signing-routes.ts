/**
 * root/sign-intermediate, issuer/:ref/sign-intermediate, root/sign-self-issued (sudo),
 * issuer/:ref/sign-self-issued, sign-verbatim(/:role), issuer/:ref/sign-verbatim(/:role).
 * https://developer.hashicorp.com/vault/api-docs/secret/pki#sign-intermediate
 * https://developer.hashicorp.com/vault/api-docs/secret/pki#sign-self-issued
 * https://developer.hashicorp.com/vault/api-docs/secret/pki#sign-verbatim
 */
import { mountLimits } from '../config/route-kit.js';
import type { PkiRequestContext, PkiResult, PkiRoute } from '../pki-route.js';
import type { IssueResult } from './issuance-service.js';
import { SIGN_INTERMEDIATE_FIELDS, SIGN_SELF_ISSUED_FIELDS, SIGN_VERBATIM_FIELDS } from './privileged-signing.js';
import type { PrivilegedRequest, PrivilegedSigningService } from './privileged-signing-service.js';

function request(ctx: PkiRequestContext): PrivilegedRequest {
  const limits = mountLimits(ctx);
  return {
    mount: ctx.mount,
    path: ctx.path,
    issuerRef: ctx.params.ref,
    tokenAccessor: ctx.token?.accessor,
    mountDefaultTtl: limits.defaultTtlSeconds,
    mountMaxTtl: limits.maxTtlSeconds,
  };
}

/** Path captures (issuer ref, role name) win over body keys of the same name. */
function pathParams(ctx: PkiRequestContext): Record<string, string> {
  const out: Record<string, string> = {};
  if (ctx.params.ref !== undefined) out.issuer_ref = ctx.params.ref;
  if (ctx.params.role !== undefined) out.name = ctx.params.role;
  return out;
}

function result(r: IssueResult, parseWarnings: readonly string[]): PkiResult {
  // Clients such as hvac repeat path values in the body; that is not worth a warning.
  const warnings = [...r.warnings, ...parseWarnings.filter((w) => !w.includes('captured from'))];
  return {
    kind: 'json',
    data: r.data,
    ...(warnings.length > 0 ? { warnings } : {}),
    ...(r.leaseId ? { leaseId: r.leaseId, leaseDuration: r.leaseDuration } : {}),
  };
}

export function privilegedSigningRoutes(service: PrivilegedSigningService): PkiRoute[] {
  const write = ['update', 'create'] as const;
  const intermediate = async (ctx: PkiRequestContext): Promise<PkiResult> => {
    const parsed = SIGN_INTERMEDIATE_FIELDS.parse(ctx.body, pathParams(ctx));
    return result(await service.signIntermediate(request(ctx), parsed.values), parsed.warnings);
  };
  const selfIssued = async (ctx: PkiRequestContext): Promise<PkiResult> => {
    const parsed = SIGN_SELF_ISSUED_FIELDS.parse(ctx.body, pathParams(ctx));
    return result(await service.signSelfIssued(request(ctx), parsed.values), parsed.warnings);
  };
  const verbatim = async (ctx: PkiRequestContext): Promise<PkiResult> => {
    const parsed = SIGN_VERBATIM_FIELDS.parse(ctx.body, pathParams(ctx));
    return result(
      await service.signVerbatim({ ...request(ctx), roleName: ctx.params.role }, parsed.values),
      parsed.warnings,
    );
  };
  return [
    {
      pattern: 'root/sign-intermediate',
      operations: [...write],
      fields: SIGN_INTERMEDIATE_FIELDS,
      handler: intermediate,
    },
    {
      pattern: 'issuer/:ref/sign-intermediate',
      operations: [...write],
      fields: SIGN_INTERMEDIATE_FIELDS,
      handler: intermediate,
    },
    // Reference 2.2: only the root/ form needs sudo; the per-issuer form does not.
    {
      pattern: 'root/sign-self-issued',
      operations: [...write],
      sudo: true,
      fields: SIGN_SELF_ISSUED_FIELDS,
      handler: selfIssued,
    },
    {
      pattern: 'issuer/:ref/sign-self-issued',
      operations: [...write],
      fields: SIGN_SELF_ISSUED_FIELDS,
      handler: selfIssued,
    },
    { pattern: 'sign-verbatim', operations: [...write], fields: SIGN_VERBATIM_FIELDS, handler: verbatim },
    { pattern: 'sign-verbatim/:role', operations: [...write], fields: SIGN_VERBATIM_FIELDS, handler: verbatim },
    { pattern: 'issuer/:ref/sign-verbatim', operations: [...write], fields: SIGN_VERBATIM_FIELDS, handler: verbatim },
    {
      pattern: 'issuer/:ref/sign-verbatim/:role',
      operations: [...write],
      fields: SIGN_VERBATIM_FIELDS,
      handler: verbatim,
    },
  ];
}
