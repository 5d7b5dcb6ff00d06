/**
 * Request rules shared by root and intermediate generation: subject and SAN building,
 * output formats and validity. https://developer.hashicorp.com/vault/api-docs/secret/pki#generate-root
 */
import { invalid } from '../../shared/errors.js';
import { isValidOid } from '../crypto/der.js';
import { ipToBytes } from '../crypto/general-names.js';
import type { GeneralName } from '../crypto/general-names.js';
import { encodeSubject } from '../crypto/names.js';
import { SUBJECT_NAME_FIELDS } from '../vault-fields.js';

export type OutputFormat = 'pem' | 'der' | 'pem_bundle';
export type PrivateKeyFormat = 'der' | 'pem' | 'pkcs8';
export type GenerateType = 'internal' | 'exported' | 'existing';

export interface CaSubjectRequest {
  commonName: string;
  altNames: string[];
  ipSans: string[];
  uriSans: string[];
  otherSans: string[];
  excludeCnFromSans: boolean;
  ou: string[];
  organization: string[];
  country: string[];
  locality: string[];
  province: string[];
  streetAddress: string[];
  postalCode: string[];
  serialNumber: string;
}

/** Request fields of a CA's subject and SANs (root and intermediate generation, sign-intermediate). */
export const CA_SUBJECT_FIELDS = {
  common_name: { type: 'string', default: '' },
  alt_names: { type: 'commaList', default: [] },
  ip_sans: { type: 'commaList', default: [] },
  uri_sans: { type: 'commaList', default: [] },
  other_sans: { type: 'commaList', default: [] },
  exclude_cn_from_sans: { type: 'bool', default: false },
  ...SUBJECT_NAME_FIELDS,
  serial_number: { type: 'string', default: '' },
} as const;

type CaSubjectValues = {
  [K in keyof typeof CA_SUBJECT_FIELDS]: K extends 'exclude_cn_from_sans'
    ? boolean
    : K extends 'common_name' | 'serial_number'
      ? string
      : string[];
};

export function subjectRequest(v: CaSubjectValues): CaSubjectRequest {
  return {
    commonName: v.common_name,
    altNames: v.alt_names,
    ipSans: v.ip_sans,
    uriSans: v.uri_sans,
    otherSans: v.other_sans,
    excludeCnFromSans: v.exclude_cn_from_sans,
    ou: v.ou,
    organization: v.organization,
    country: v.country,
    locality: v.locality,
    province: v.province,
    streetAddress: v.street_address,
    postalCode: v.postal_code,
    serialNumber: v.serial_number,
  };
}

export interface KeyRequest {
  type: GenerateType;
  keyType: string;
  keyBits: number;
  keyName: string;
  keyRef: string;
  managedKeyName: string;
  managedKeyId: string;
}

export interface RootRequest extends CaSubjectRequest, KeyRequest {
  /** Seconds; undefined = the mount default. */
  ttl: number | undefined;
  notAfter: string;
  format: OutputFormat;
  privateKeyFormat: PrivateKeyFormat;
  signatureBits: number;
  usePss: boolean;
  maxPathLength: number;
  keyUsage: string[];
  permittedDnsDomains: string[];
  notBeforeDuration: number;
  issuerName: string;
}

export interface IntermediateRequest extends CaSubjectRequest, KeyRequest {
  format: OutputFormat;
  privateKeyFormat: PrivateKeyFormat;
  signatureBits: number;
  addBasicConstraints: boolean;
  keyUsage: string[];
}

/** `:type` of the generate paths; `kms` needs managed keys, which this server does not have. */
export function parseGenerateType(v: string): GenerateType {
  if (v === 'internal' || v === 'exported' || v === 'existing') return v;
  if (v === 'kms')
    throw invalid('managed keys are not supported by this server; use "internal", "exported" or "existing"');
  throw invalid(`the "exported" path parameter must be "internal", "existing", exported" or "kms"`);
}

export function parseFormat(v: string): OutputFormat {
  if (v === 'pem' || v === 'der' || v === 'pem_bundle') return v;
  throw invalid(`invalid format specified: ${JSON.stringify(v)}; must be "pem", "der" or "pem_bundle"`, 'format');
}

export function parsePrivateKeyFormat(v: string): PrivateKeyFormat {
  if (v === '' || v === 'der') return 'der';
  if (v === 'pem' || v === 'pkcs8') return v;
  throw invalid(
    `invalid private_key_format specified: ${JSON.stringify(v)}; must be "der", "pem" or "pkcs8"`,
    'private_key_format',
  );
}

/** Managed (KMS) keys are an enterprise feature this server does not offer. */
export function rejectManagedKeys(r: Pick<KeyRequest, 'managedKeyName' | 'managedKeyId'>): void {
  if (r.managedKeyName !== '' || r.managedKeyId !== '') {
    throw invalid('managed keys (managed_key_name, managed_key_id) are not supported by this server');
  }
}

export function subjectDer(r: CaSubjectRequest): Buffer {
  return encodeSubject({
    commonName: r.commonName,
    country: r.country,
    province: r.province,
    locality: r.locality,
    streetAddress: r.streetAddress,
    postalCode: r.postalCode,
    organization: r.organization,
    ou: r.ou,
    serialNumber: r.serialNumber || undefined,
  });
}

/** Parses `<oid>;UTF8:<value>` (the only type Vault writes). */
export function parseOtherSan(text: string): GeneralName {
  const semi = text.indexOf(';');
  const colon = text.indexOf(':', semi + 1);
  if (semi <= 0 || colon < 0) throw invalid(`invalid other_sans format: ${text}`, 'other_sans');
  const oid = text.slice(0, semi);
  const type = text.slice(semi + 1, colon).toUpperCase();
  if (!isValidOid(oid)) throw invalid(`invalid OID in other_sans: ${oid}`, 'other_sans');
  if (type !== 'UTF8' && type !== 'UTF-8')
    throw invalid(`only UTF8 other_sans types are supported, got ${type}`, 'other_sans');
  return { type: 'otherName', oid, value: text.slice(colon + 1), raw: Buffer.alloc(0) };
}

const HOSTNAME = /^(\*\.)?([A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?\.)*[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?\.?$/;

/**
 * SANs of a CA certificate or CSR: the common name (unless excluded) and `alt_names` as
 * DNS names or e-mail addresses, then IPs, URIs and other names. No role applies.
 */
export function subjectAltNames(r: CaSubjectRequest): GeneralName[] {
  const dns: string[] = [];
  const email: string[] = [];
  const add = (n: string): void => {
    const list = n.includes('@') ? email : dns;
    if (!list.includes(n)) list.push(n);
  };
  // The CN becomes a SAN only when it is an e-mail address or a host name ("Root CA" is neither).
  if (r.commonName !== '' && !r.excludeCnFromSans && (r.commonName.includes('@') || HOSTNAME.test(r.commonName)))
    add(r.commonName);
  for (const n of r.altNames) add(n);
  for (const ip of r.ipSans) {
    try {
      ipToBytes(ip);
    } catch {
      throw invalid(`the value "${ip}" is not a valid IP address`, 'ip_sans');
    }
  }
  for (const u of r.uriSans) {
    try {
      new URL(u);
    } catch {
      throw invalid(`the value "${u}" is not a valid URI`, 'uri_sans');
    }
  }
  return [
    ...dns.map((value): GeneralName => ({ type: 'dns', value })),
    ...email.map((value): GeneralName => ({ type: 'email', value })),
    ...r.ipSans.map((value): GeneralName => ({ type: 'ip', value })),
    ...r.uriSans.map((value): GeneralName => ({ type: 'uri', value })),
    ...r.otherSans.map(parseOtherSan),
  ];
}

/** Key usages of a CA certificate: CertSign and CRLSign always, DigitalSignature when asked for. */
export function caKeyUsage(requested: readonly string[]): string[] {
  const wantsDigital = requested.some(
    (u) =>
      u
        .trim()
        .toLowerCase()
        .replace(/^keyusage/, '') === 'digitalsignature',
  );
  return wantsDigital ? ['DigitalSignature', 'CertSign', 'CRLSign'] : ['CertSign', 'CRLSign'];
}

/** Validity of a new root: `not_after` wins; else `ttl` (mount default) clamped to the mount maximum with a warning. */
export function rootValidity(
  r: Pick<RootRequest, 'ttl' | 'notAfter' | 'notBeforeDuration'>,
  now: Date,
  mount: { defaultTtlSeconds: number; maxTtlSeconds: number },
): { notBefore: Date; notAfter: Date; warnings: string[] } {
  const warnings: string[] = [];
  const notBefore = new Date(now.getTime() - r.notBeforeDuration * 1000);
  let notAfter: Date;
  if (r.notAfter !== '') {
    const t = Date.parse(r.notAfter);
    if (!/^\d{4}-\d{2}-\d{2}T/.test(r.notAfter) || Number.isNaN(t)) {
      throw invalid(`unable to parse not_after: ${r.notAfter}; expected format YYYY-MM-ddTHH:MM:SSZ`, 'not_after');
    }
    notAfter = new Date(t);
    if (notAfter.getTime() <= now.getTime()) throw invalid('not_after must be in the future', 'not_after');
  } else {
    let ttl = r.ttl === undefined || r.ttl === 0 ? mount.defaultTtlSeconds : r.ttl;
    if (ttl > mount.maxTtlSeconds) {
      warnings.push(
        `TTL of ${ttl}s is greater than the mount's maximum of ${mount.maxTtlSeconds}s; capping to the maximum`,
      );
      ttl = mount.maxTtlSeconds;
    }
    notAfter = new Date(now.getTime() + ttl * 1000);
  }
  return { notBefore, notAfter, warnings };
}
