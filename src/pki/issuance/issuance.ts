/**
 * Pure parts of issue and sign: the request fields, what a CSR asks for, and the
 * response shapes of reference 16.12.
 * https://developer.hashicorp.com/vault/api-docs/secret/pki#generate-certificate-and-key
 * https://developer.hashicorp.com/vault/api-docs/secret/pki#sign-certificate
 */
import { invalid } from '../../shared/errors.js';
import type { Executor } from '../certs/cert-repo.js';
import type { ParsedCsr } from '../crypto/csr.js';
import type { GeneralName } from '../crypto/general-names.js';
import { commonName, nameValues } from '../crypto/names.js';
import type { CertNames, CsrNames } from '../roles/role-policy.js';
import { defineFields } from '../vault-fields.js';

/**
 * Field groups that issue, sign and sign-verbatim compose, as Vault's path framework does
 * (each path declares the groups it takes, in this order).
 */
/** The role (from the path) and the issuer. */
export const ROLE_AND_ISSUER_FIELDS = {
  name: { type: 'string' },
  issuer_ref: { type: 'string' },
} as const;
/** The names a leaf asks for. */
export const SUBJECT_NAME_REQUEST_FIELDS = {
  common_name: { type: 'string', default: '' },
  alt_names: { type: 'commaList', default: [] },
  ip_sans: { type: 'commaList', default: [] },
  uri_sans: { type: 'commaList', default: [] },
  other_sans: { type: 'commaList', default: [] },
} as const;
/** How long the certificate lives. */
export const VALIDITY_FIELDS = {
  ttl: { type: 'duration', default: 0 },
  not_after: { type: 'string', default: '' },
} as const;
/** How the answer is encoded. */
export const OUTPUT_FORMAT_FIELDS = {
  format: { type: 'string', default: 'pem' },
  private_key_format: { type: 'string', default: 'der' },
} as const;
/** The chain in the answer, and user ids in the subject. */
export const CHAIN_AND_USER_ID_FIELDS = {
  remove_roots_from_chain: { type: 'bool', default: false },
  user_ids: { type: 'commaList', default: [] },
} as const;
/** The signature's parameters. */
export const SIGNATURE_FIELDS = {
  signature_bits: { type: 'int', default: 0 },
  use_pss: { type: 'bool', default: false },
} as const;
export const CERT_METADATA_FIELD = { cert_metadata: { type: 'string', default: '' } } as const;

/** issue/:role and sign/:role (both also accept the other's csr or key parameters, as before). */
export const ISSUE_FIELDS = defineFields({
  ...ROLE_AND_ISSUER_FIELDS,
  ...SUBJECT_NAME_REQUEST_FIELDS,
  ...VALIDITY_FIELDS,
  ...OUTPUT_FORMAT_FIELDS,
  exclude_cn_from_sans: { type: 'bool', default: false },
  ...CHAIN_AND_USER_ID_FIELDS,
  serial_number: { type: 'string', default: '' },
  ...CERT_METADATA_FIELD,
  ...SIGNATURE_FIELDS,
  key_type: { type: 'string', default: '' },
  key_bits: { type: 'int', default: 0 },
  csr: { type: 'string', default: '' },
});

export type IssueInput = ReturnType<typeof ISSUE_FIELDS.parse>['values'];

/**
 * What a caller other than the Vault API (the ACME server) adds to sign and sign-verbatim:
 * extended key usages that replace the role's or the CSR's, a latest notAfter, and
 * cert_metadata stored with the certificate (left out when the role has no_store_metadata).
 */
export interface IssuanceOverrides {
  extKeyUsage?: string[];
  notAfterCap?: Date;
  metadata?: string;
  /** Write-only statements that join the certificate's own commit (the ACME order that gets it). */
  recordWith?: IssuedWrites;
  /** No lease for the certificate (ACME: no token asked for it, as in Vault). */
  withoutLease?: boolean;
}

/** The certificate just signed, as a caller that records it with its own rows needs it. */
export interface SignedForRecord {
  serialHex: string;
  notAfter: Date;
  pem: string;
  /** The issuer's chain, the issuer first. */
  caChainPems: readonly string[];
}

/** Statements that only write (no result is read), run in the transaction that stores the certificate. */
export type IssuedWrites = (cert: SignedForRecord) => (tx: Executor) => Promise<void>;

/** Caps a validity at `cap` (notAfter only). */
export function capValidity<V extends { notAfter: Date }>(v: V, cap: Date | undefined): V {
  return cap && v.notAfter > cap ? { ...v, notAfter: cap } : v;
}

export type OutputFormat = 'pem' | 'der' | 'pem_bundle';

export function parseFormat(v: string): OutputFormat {
  const f = v.trim() === '' ? 'pem' : v.trim().toLowerCase();
  if (f === 'pem' || f === 'der' || f === 'pem_bundle') return f;
  throw invalid(`unknown format "${v}"; expected pem, der or pem_bundle`, 'format');
}

export function parsePrivateKeyFormat(v: string): 'der' | 'pkcs8' {
  const f = v.trim().toLowerCase();
  if (f === '' || f === 'der' || f === 'pem') return 'der';
  if (f === 'pkcs8') return 'pkcs8';
  throw invalid(`unknown private_key_format "${v}"; expected der or pkcs8`, 'private_key_format');
}

export function checkSignatureBits(bits: number): void {
  if (![0, 256, 384, 512].includes(bits))
    throw invalid(`unsupported hash signature algorithm: ${bits}`, 'signature_bits');
}

/** cert_metadata must be base64 (reference 4.2). */
export function checkCertMetadata(v: string): void {
  if (v !== '' && !/^[A-Za-z0-9+/]*={0,2}$/.test(v.replace(/\s+/g, '')))
    throw invalid('cert_metadata must be base64-encoded', 'cert_metadata');
}

/** The names a CSR asks for, for role checks (use_csr_common_name / use_csr_sans). */
export function csrNames(csr: Pick<ParsedCsr, 'subject' | 'extensions'>): CsrNames {
  const out: CsrNames = {
    commonName: commonName(csr.subject),
    dns: [],
    emails: [],
    ips: [],
    uris: [],
    otherSans: [],
    userIds: nameValues(csr.subject, 'UID'),
    serialNumber: nameValues(csr.subject, 'serialNumber')[0] ?? '',
  };
  for (const n of csr.extensions.subjectAltNames ?? []) {
    if (n.type === 'dns') out.dns.push(n.value);
    else if (n.type === 'email') out.emails.push(n.value);
    else if (n.type === 'ip') out.ips.push(n.value);
    else if (n.type === 'uri') out.uris.push(n.value);
    else if (n.type === 'otherName' && n.value !== undefined) out.otherSans.push({ oid: n.oid, value: n.value });
  }
  return out;
}

/** SANs in the order Go-based CAs write them: DNS, e-mail, IP, URI, then otherNames. */
export function subjectAltNames(n: CertNames): GeneralName[] {
  return [
    ...n.dns.map((value): GeneralName => ({ type: 'dns', value })),
    ...n.emails.map((value): GeneralName => ({ type: 'email', value })),
    ...n.ips.map((value): GeneralName => ({ type: 'ip', value })),
    ...n.uris.map((value): GeneralName => ({ type: 'uri', value })),
    ...n.otherSans.map((o): GeneralName => ({ type: 'otherName', oid: o.oid, value: o.value, raw: Buffer.alloc(0) })),
  ];
}

const pemBody = (pem: string): string => pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, '');

/** A PEM as base64 of its DER (format=der). */
export const pemToBase64 = (pem: string): string => pemBody(pem);

export interface CertificateResult {
  certificatePem: string;
  issuingCaPem: string;
  chainPems: readonly string[];
  serialNumber: string;
  expiration: number;
  /** `bundlePem`: the key in its native encoding (PKCS#1, SEC1, PKCS#8 for Ed25519), for format=pem_bundle. */
  privateKey?: { pem: string; base64: string; type: string; bundlePem?: string };
  /** Whether the issuing CA is a self-signed root; asked only under format=pem_bundle without a key. */
  issuerIsSelfSigned?: () => boolean;
}

/**
 * `certificate` under format=pem_bundle on the signing paths (sign, sign-intermediate,
 * sign-verbatim and their external-policy forms): the certificate, followed by the issuing
 * CA unless that CA is a self-signed root.
 */
export function pemBundle(certificatePem: string, issuingCaPem: string, issuerIsSelfSigned: boolean): string {
  return issuerIsSelfSigned ? certificatePem : `${certificatePem}\n${issuingCaPem}`;
}

/**
 * `data` of issue/sign for a format (reference 16.12). Under pem_bundle, `certificate`
 * follows the spec rather than Vault: on issue the key and the certificate, nothing more;
 * on the signing paths the certificate and a non-root issuing CA (pemBundle).
 */
export function certificateData(r: CertificateResult, format: OutputFormat): Record<string, unknown> {
  const der = format === 'der';
  const enc = (pem: string): string => (der ? pemToBase64(pem) : pem);
  const data: Record<string, unknown> = {};
  if (format === 'pem_bundle') {
    data.certificate = r.privateKey
      ? `${r.privateKey.bundlePem ?? r.privateKey.pem}\n${r.certificatePem}`
      : pemBundle(r.certificatePem, r.issuingCaPem, r.issuerIsSelfSigned?.() ?? false);
  } else data.certificate = enc(r.certificatePem);
  data.issuing_ca = enc(r.issuingCaPem);
  if (r.chainPems.length > 0) data.ca_chain = r.chainPems.map(enc);
  if (r.privateKey) {
    data.private_key = der ? r.privateKey.base64 : r.privateKey.pem;
    data.private_key_type = r.privateKey.type;
  }
  data.serial_number = r.serialNumber;
  data.expiration = r.expiration;
  return data;
}
