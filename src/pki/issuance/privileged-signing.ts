/**
 * Pure rules of the privileged signing paths: sign-intermediate, sign-self-issued and
 * sign-verbatim (reference 4.4-4.6 and 16.8-16.11).
 * https://developer.hashicorp.com/vault/api-docs/secret/pki#sign-intermediate
 * https://developer.hashicorp.com/vault/api-docs/secret/pki#sign-self-issued
 * https://developer.hashicorp.com/vault/api-docs/secret/pki#sign-verbatim
 */
import { invalid } from '../../shared/errors.js';
import { isValidOid, parseDer, sequence } from '../crypto/der.js';
import { EXT, keyUsageBit } from '../crypto/extensions.js';
import type { NameConstraints, RawExtension } from '../crypto/extensions.js';
import { encodeName, nameValues } from '../crypto/names.js';
import type { ParsedName } from '../crypto/names.js';
import { leafExtKeyUsages } from '../roles/role-policy.js';
import { CA_SUBJECT_FIELDS } from '../issuers/ca-request.js';
import { defineFields } from '../vault-fields.js';
import {
  CERT_METADATA_FIELD,
  CHAIN_AND_USER_ID_FIELDS,
  OUTPUT_FORMAT_FIELDS,
  ROLE_AND_ISSUER_FIELDS,
  SIGNATURE_FIELDS,
  VALIDITY_FIELDS,
} from './issuance.js';

/** Request fields of root/sign-intermediate and issuer/:ref/sign-intermediate. */
export const SIGN_INTERMEDIATE_FIELDS = defineFields({
  issuer_ref: { type: 'string' },
  csr: { type: 'string', default: '' },
  ...CA_SUBJECT_FIELDS,
  ttl: { type: 'duration', default: 0 },
  not_after: { type: 'string', default: '' },
  format: { type: 'string', default: 'pem' },
  max_path_length: { type: 'int', default: -1 },
  key_usage: { type: 'commaList', default: ['CertSign', 'CRLSign'] },
  use_csr_values: { type: 'bool', default: false },
  permitted_dns_domains: { type: 'commaList', default: [] },
  excluded_dns_domains: { type: 'commaList', default: [] },
  permitted_ip_ranges: { type: 'commaList', default: [] },
  excluded_ip_ranges: { type: 'commaList', default: [] },
  permitted_email_addresses: { type: 'commaList', default: [] },
  excluded_email_addresses: { type: 'commaList', default: [] },
  permitted_uri_domains: { type: 'commaList', default: [] },
  excluded_uri_domains: { type: 'commaList', default: [] },
  not_before_duration: { type: 'duration', default: 30 },
  signature_bits: { type: 'int', default: 0 },
  use_pss: { type: 'bool', default: false },
  skid: { type: 'string', default: '' },
  enforce_leaf_not_after_behavior: { type: 'bool', default: false },
});

export type SignIntermediateInput = ReturnType<typeof SIGN_INTERMEDIATE_FIELDS.parse>['values'];

/** Request fields of root/sign-self-issued and issuer/:ref/sign-self-issued. */
export const SIGN_SELF_ISSUED_FIELDS = defineFields({
  issuer_ref: { type: 'string' },
  certificate: { type: 'string', default: '' },
  require_matching_certificate_algorithms: { type: 'bool', default: false },
});

/** Request fields of sign-verbatim(/:role) and issuer/:ref/sign-verbatim(/:role). */
export const SIGN_VERBATIM_FIELDS = defineFields({
  ...ROLE_AND_ISSUER_FIELDS,
  csr: { type: 'string', default: '' },
  key_usage: { type: 'commaList', default: ['DigitalSignature', 'KeyAgreement', 'KeyEncipherment'] },
  ext_key_usage: { type: 'commaList', default: [] },
  ext_key_usage_oids: { type: 'commaList', default: [] },
  ...VALIDITY_FIELDS,
  ...OUTPUT_FORMAT_FIELDS,
  ...CHAIN_AND_USER_ID_FIELDS,
  ...SIGNATURE_FIELDS,
  ...CERT_METADATA_FIELD,
  enforce_leaf_not_after_behavior: { type: 'bool', default: false },
});

export type SignVerbatimInput = ReturnType<typeof SIGN_VERBATIM_FIELDS.parse>['values'];

/**
 * pathLen of a signed intermediate. -1 asks for no limit of its own: the new CA then gets
 * one less than the signer's limit, or none when the signer has none. An explicit value
 * at or beyond the signer's limit is lowered to one less than it (a larger value could
 * never be used). A signer with pathLen 0 cannot sign CAs at all.
 */
export function intermediatePathLength(
  requested: number,
  signerPathLen: number | undefined,
): { pathLen: number | undefined; warnings: string[] } {
  if (signerPathLen === 0)
    throw invalid(
      'signing certificate has a max path length of zero, and cannot issue further CA certificates',
      'max_path_length',
    );
  if (requested < -1)
    throw invalid(`max_path_length must be -1 (no limit) or at least 0, got ${requested}`, 'max_path_length');
  if (signerPathLen === undefined) return { pathLen: requested >= 0 ? requested : undefined, warnings: [] };
  if (requested < 0) return { pathLen: signerPathLen - 1, warnings: [] };
  if (requested >= signerPathLen) {
    return {
      pathLen: signerPathLen - 1,
      warnings: [
        `max_path_length ${requested} is not below the signing certificate's path length ${signerPathLen}; ` +
          `using ${signerPathLen - 1}`,
      ],
    };
  }
  return { pathLen: requested, warnings: [] };
}

/** Key usages of a signed CA: CertSign and CRLSign always, plus the requested ones (unknown names are ignored). */
export function intermediateKeyUsage(requested: readonly string[]): string[] {
  const out = ['CertSign', 'CRLSign'];
  for (const name of requested) {
    if (keyUsageBit(name) === undefined) continue;
    const canonical = name.trim().replace(/^keyusage/i, '');
    if (!out.some((u) => keyUsageBit(u) === keyUsageBit(canonical))) out.push(canonical);
  }
  return out;
}

/** `skid` as hex, with `:`, `-` or spaces between bytes allowed; undefined when empty. */
export function parseSkid(text: string): Buffer | undefined {
  const hex = text.replace(/[\s:-]/g, '');
  if (hex === '') return undefined;
  if (!/^([0-9a-fA-F]{2})+$/.test(hex))
    throw invalid(`skid must be hex bytes (optionally separated by ':'), got "${text}"`, 'skid');
  return Buffer.from(hex, 'hex');
}

export function nameConstraintsFrom(v: SignIntermediateInput): NameConstraints | undefined {
  const c: NameConstraints = {
    permittedDnsDomains: v.permitted_dns_domains,
    excludedDnsDomains: v.excluded_dns_domains,
    permittedIpRanges: v.permitted_ip_ranges,
    excludedIpRanges: v.excluded_ip_ranges,
    permittedEmailAddresses: v.permitted_email_addresses,
    excludedEmailAddresses: v.excluded_email_addresses,
    permittedUriDomains: v.permitted_uri_domains,
    excludedUriDomains: v.excluded_uri_domains,
  };
  for (const r of [...v.permitted_ip_ranges, ...v.excluded_ip_ranges]) {
    if (!/^[0-9a-fA-F:.]+\/\d{1,3}$/.test(r))
      throw invalid(
        `IP ranges of name constraints must be in CIDR form (e.g. 10.0.0.0/8), got "${r}"`,
        'permitted_ip_ranges',
      );
  }
  return Object.values(c).some((l: readonly string[]) => l.length > 0) ? c : undefined;
}

/** Extensions the signer always writes itself, so a CSR's copy of them is never carried over. */
const SIGNER_OWNED = new Set<string>([
  EXT.basicConstraints,
  EXT.subjectKeyIdentifier,
  EXT.authorityKeyIdentifier,
  EXT.authorityInfoAccess,
  EXT.crlDistributionPoints,
  EXT.freshestCrl,
]);

/** CSR extensions to copy into the certificate: all but Basic Constraints and the signer-owned ones. */
export function copiedCsrExtensions(all: readonly RawExtension[]): RawExtension[] {
  return all.filter((e) => !SIGNER_OWNED.has(e.oid));
}

/**
 * Validity behaviour of the privileged paths: the result is truncated to the signer's
 * notAfter, unless `enforce_leaf_not_after_behavior` asks for the issuer's own rule.
 */
export function notAfterBehavior(
  enforce: boolean,
  issuerBehavior: 'err' | 'truncate' | 'permit',
): 'err' | 'truncate' | 'permit' {
  return enforce ? issuerBehavior : 'truncate';
}

/**
 * Key usage and EKUs of a sign-verbatim certificate: the request values are only defaults
 * for what the CSR does not ask for itself (the CSR's extensions are copied as they are).
 */
export function verbatimUsages(
  csr: { keyUsage: readonly string[] | undefined; extKeyUsage: readonly string[] | undefined },
  v: Pick<SignVerbatimInput, 'key_usage' | 'ext_key_usage' | 'ext_key_usage_oids'>,
): { keyUsage: string[] | undefined; extKeyUsage: string[] | undefined } {
  for (const o of v.ext_key_usage_oids)
    if (!isValidOid(o)) throw invalid(`ext_key_usage_oids: "${o}" is not a valid OID`, 'ext_key_usage_oids');
  const keyUsage = csr.keyUsage === undefined ? v.key_usage.filter((n) => n.trim() !== '') : undefined;
  const extKeyUsage =
    csr.extKeyUsage === undefined
      ? leafExtKeyUsages({
          server_flag: false,
          client_flag: false,
          code_signing_flag: false,
          email_protection_flag: false,
          ext_key_usage: v.ext_key_usage.filter((n) => n.trim() !== ''),
          ext_key_usage_oids: v.ext_key_usage_oids,
        })
      : undefined;
  return { keyUsage, extKeyUsage };
}

/** The CSR's subject with `user_ids` appended as UID attributes (those it does not already carry). */
export function subjectWithUserIds(subject: ParsedName, userIds: readonly string[]): Buffer {
  const present = new Set(nameValues(subject, 'UID'));
  const extra = [...new Set(userIds)].filter((u) => u !== '' && !present.has(u));
  if (extra.length === 0) return subject.der;
  const rdns = parseDer(subject.der)
    .children()
    .rest()
    .map((e) => e.raw());
  const added = parseDer(encodeName(extra.map((value) => ({ type: 'UID', value }))))
    .children()
    .rest()
    .map((e) => e.raw());
  return sequence(...rdns, ...added);
}

/**
 * sign-self-issued keeps the submitted certificate's signature hash (and PSS) when the
 * signer's key is of the same type; SHA-1 is never written again (SHA-256 instead).
 */
export function signatureOptionsOf(alg: { kind: string; hash: string | null }): {
  signatureBits: number;
  usePss: boolean;
} {
  const bits = alg.hash === 'sha384' ? 384 : alg.hash === 'sha512' ? 512 : 0;
  return { signatureBits: bits, usePss: alg.kind === 'rsa-pss' };
}
