/**
 * issue/:role, sign/:role, issuer/:ref/issue/:role, issuer/:ref/sign/:role.
 * https://developer.hashicorp.com/vault/api-docs/secret/pki#generate-certificate-and-key
 * https://developer.hashicorp.com/vault/api-docs/secret/pki#sign-certificate
 */
import { mountLimits } from '../config/route-kit.js';
import type { PkiRequestContext, PkiResult, PkiRoute } from '../pki-route.js';
import { ISSUE_FIELDS } from './issuance.js';
import type { IssuanceService, IssueResult } from './issuance-service.js';

/** The issuer's certificate and chain: the same in every answer of an issuer. */
const REPEATED_FIELDS = ['issuing_ca', 'ca_chain'] as const;

export function issuanceRoutes(issuance: IssuanceService): PkiRoute[] {
  const run = async (ctx: PkiRequestContext, op: 'issue' | 'sign'): Promise<PkiResult> => {
    const fromPath: Record<string, string> = { name: ctx.params.role ?? '' };
    if (ctx.params.ref !== undefined) fromPath.issuer_ref = ctx.params.ref;
    const parsed = ISSUE_FIELDS.parse(ctx.body, fromPath);
    const limits = mountLimits(ctx);
    const req = {
      mount: ctx.mount,
      path: ctx.path,
      roleName: ctx.params.role ?? '',
      issuerRef: ctx.params.ref,
      input: parsed.values,
      tokenAccessor: ctx.token?.accessor,
      mountDefaultTtl: limits.defaultTtlSeconds,
      mountMaxTtl: limits.maxTtlSeconds,
    };
    const r: IssueResult = op === 'issue' ? await issuance.issue(req) : await issuance.sign(req);
    const warnings = [...r.warnings, ...parsed.warnings.filter((w) => !w.includes('captured from'))];
    return {
      kind: 'json',
      data: r.data,
      repeated: REPEATED_FIELDS,
      ...(warnings.length > 0 ? { warnings } : {}),
      leaseId: r.leaseId,
      leaseDuration: r.leaseDuration,
    };
  };
  return [
    {
      pattern: 'issue/:role',
      operations: ['update', 'create'],
      fields: ISSUE_FIELDS,
      handler: (ctx) => run(ctx, 'issue'),
    },
    {
      pattern: 'sign/:role',
      operations: ['update', 'create'],
      fields: ISSUE_FIELDS,
      handler: (ctx) => run(ctx, 'sign'),
    },
    {
      pattern: 'issuer/:ref/issue/:role',
      operations: ['update', 'create'],
      fields: ISSUE_FIELDS,
      handler: (ctx) => run(ctx, 'issue'),
    },
    {
      pattern: 'issuer/:ref/sign/:role',
      operations: ['update', 'create'],
      fields: ISSUE_FIELDS,
      handler: (ctx) => run(ctx, 'sign'),
    },
  ];
}
