/**
 * Certificate extensions (RFC 5280 4.2): encoders for the ones the engine writes and a
 * decoder for the ones it reads from CSRs and certificates; anything else is kept raw.
 */
import { DomainError } from '../../shared/errors.js';
import {
  TAG,
  boolean,
  decodeBoolean,
  decodeNamedBits,
  decodeOid,
  decodeSmallInt,
  explicit,
  ia5String,
  implicitConstructed,
  implicitPrimitive,
  integer,
  namedBits,
  octetString,
  oid,
  parseDer,
  sequence,
  utf8String,
} from './der.js';
import type { DerElement } from './der.js';
import { decodeGeneralNames, encodeGeneralName, encodeGeneralNames, ipToBytes } from './general-names.js';
import type { GeneralName } from './general-names.js';

export const EXT = {
  subjectKeyIdentifier: '2.5.29.14',
  keyUsage: '2.5.29.15',
  subjectAltName: '2.5.29.17',
  basicConstraints: '2.5.29.19',
  nameConstraints: '2.5.29.30',
  crlDistributionPoints: '2.5.29.31',
  certificatePolicies: '2.5.29.32',
  authorityKeyIdentifier: '2.5.29.35',
  extKeyUsage: '2.5.29.37',
  freshestCrl: '2.5.29.46',
  authorityInfoAccess: '1.3.6.1.5.5.7.1.1',
} as const;

const AD_OCSP = '1.3.6.1.5.5.7.48.1';
const AD_CA_ISSUERS = '1.3.6.1.5.5.7.48.2';

/** KeyUsage bit positions by the case-insensitive names Vault accepts (without the `KeyUsage` prefix). */
const KEY_USAGE_BITS: ReadonlyArray<readonly [string, number]> = [
  ['DigitalSignature', 0],
  ['ContentCommitment', 1],
  ['KeyEncipherment', 2],
  ['DataEncipherment', 3],
  ['KeyAgreement', 4],
  ['CertSign', 5],
  ['CRLSign', 6],
  ['EncipherOnly', 7],
  ['DecipherOnly', 8],
];
const KU_BY_LOWER = new Map(KEY_USAGE_BITS.map(([n, b]) => [n.toLowerCase(), b]));

/** Bit position of a key usage name, or undefined for names Vault ignores. */
export function keyUsageBit(name: string): number | undefined {
  const n = name
    .trim()
    .toLowerCase()
    .replace(/^keyusage/, '');
  return KU_BY_LOWER.get(n) ?? (n === 'nonrepudiation' ? 1 : undefined);
}

/** Extended key usages by name, in the order Vault writes them (reference 16.9). */
export const EKU_OIDS: ReadonlyArray<readonly [string, string]> = [
  ['Any', '2.5.29.37.0'],
  ['ServerAuth', '1.3.6.1.5.5.7.3.1'],
  ['ClientAuth', '1.3.6.1.5.5.7.3.2'],
  ['CodeSigning', '1.3.6.1.5.5.7.3.3'],
  ['EmailProtection', '1.3.6.1.5.5.7.3.4'],
  ['IPSECEndSystem', '1.3.6.1.5.5.7.3.5'],
  ['IPSECTunnel', '1.3.6.1.5.5.7.3.6'],
  ['IPSECUser', '1.3.6.1.5.5.7.3.7'],
  ['TimeStamping', '1.3.6.1.5.5.7.3.8'],
  ['OCSPSigning', '1.3.6.1.5.5.7.3.9'],
  ['MicrosoftServerGatedCrypto', '1.3.6.1.4.1.311.10.3.3'],
  ['NetscapeServerGatedCrypto', '2.16.840.1.113730.4.1'],
];
const EKU_BY_LOWER = new Map(EKU_OIDS.map(([n, o]) => [n.toLowerCase(), o]));

/** OID of an extended key usage name (case-insensitive, `ExtKeyUsage` prefix optional). */
export function extKeyUsageOid(name: string): string | undefined {
  return EKU_BY_LOWER.get(
    name
      .trim()
      .toLowerCase()
      .replace(/^extkeyusage/, ''),
  );
}

export interface RawExtension {
  oid: string;
  critical: boolean;
  /** Contents of extnValue (the DER of the extension's own structure). */
  value: Buffer;
}

export function encodeExtension(e: RawExtension): Buffer {
  return e.critical
    ? sequence(oid(e.oid), boolean(true), octetString(e.value))
    : sequence(oid(e.oid), octetString(e.value));
}

export function basicConstraintsExt(ca: boolean, pathLen?: number): RawExtension {
  const parts: Buffer[] = [];
  if (ca) parts.push(boolean(true));
  if (ca && pathLen !== undefined && pathLen >= 0) parts.push(integer(pathLen));
  return { oid: EXT.basicConstraints, critical: true, value: sequence(...parts) };
}

/** KeyUsage from names; unknown names are ignored as Vault does. Undefined when nothing is left. */
export function keyUsageExt(names: readonly string[]): RawExtension | undefined {
  const bits = names.map(keyUsageBit).filter((b): b is number => b !== undefined);
  if (bits.length === 0) return undefined;
  return { oid: EXT.keyUsage, critical: true, value: namedBits(bits) };
}

/** ExtendedKeyUsage from OIDs, kept in the given order without duplicates. */
export function extKeyUsageExt(oids: readonly string[]): RawExtension | undefined {
  const uniq = [...new Set(oids)];
  if (uniq.length === 0) return undefined;
  return { oid: EXT.extKeyUsage, critical: false, value: sequence(...uniq.map((o) => oid(o))) };
}

/** subjectAltName; critical when the subject is empty (RFC 5280 4.2.1.6). */
export function subjectAltNameExt(names: readonly GeneralName[], subjectEmpty: boolean): RawExtension | undefined {
  if (names.length === 0) return undefined;
  return { oid: EXT.subjectAltName, critical: subjectEmpty, value: encodeGeneralNames(names) };
}

export const subjectKeyIdentifierExt = (ski: Buffer): RawExtension => ({
  oid: EXT.subjectKeyIdentifier,
  critical: false,
  value: octetString(ski),
});

export const authorityKeyIdentifierExt = (keyId: Buffer): RawExtension => ({
  oid: EXT.authorityKeyIdentifier,
  critical: false,
  value: sequence(implicitPrimitive(0, keyId)),
});

/** AuthorityInfoAccess with OCSP responders first, then CA issuer URLs. */
export function authorityInfoAccessExt(
  ocspServers: readonly string[],
  issuingCertificates: readonly string[],
): RawExtension | undefined {
  const uri = (u: string): GeneralName => ({ type: 'uri', value: u });
  const items = [
    ...ocspServers.map((u) => sequence(oid(AD_OCSP), encodeGeneralName(uri(u)))),
    ...issuingCertificates.map((u) => sequence(oid(AD_CA_ISSUERS), encodeGeneralName(uri(u)))),
  ];
  if (items.length === 0) return undefined;
  return { oid: EXT.authorityInfoAccess, critical: false, value: sequence(...items) };
}

/** CRLDistributionPoints (or FreshestCRL) with one distribution point per URL. */
export function crlDistributionPointsExt(
  urls: readonly string[],
  extOid: string = EXT.crlDistributionPoints,
): RawExtension | undefined {
  if (urls.length === 0) return undefined;
  const dps = urls.map((u) =>
    sequence(explicit(0, implicitConstructed(0, encodeGeneralName({ type: 'uri', value: u })))),
  );
  return { oid: extOid, critical: false, value: sequence(...dps) };
}

export interface PolicyInformation {
  oid: string;
  cps?: string;
  notice?: string;
}

export function certificatePoliciesExt(policies: readonly PolicyInformation[]): RawExtension | undefined {
  if (policies.length === 0) return undefined;
  const items = policies.map((p) => {
    const q: Buffer[] = [];
    if (p.cps) q.push(sequence(oid('1.3.6.1.5.5.7.2.1'), ia5String(p.cps)));
    if (p.notice) q.push(sequence(oid('1.3.6.1.5.5.7.2.2'), sequence(utf8String(p.notice))));
    return q.length ? sequence(oid(p.oid), sequence(...q)) : sequence(oid(p.oid));
  });
  return { oid: EXT.certificatePolicies, critical: false, value: sequence(...items) };
}

export interface NameConstraints {
  permittedDnsDomains?: readonly string[];
  excludedDnsDomains?: readonly string[];
  permittedIpRanges?: readonly string[];
  excludedIpRanges?: readonly string[];
  permittedEmailAddresses?: readonly string[];
  excludedEmailAddresses?: readonly string[];
  permittedUriDomains?: readonly string[];
  excludedUriDomains?: readonly string[];
}

function cidrBytes(cidr: string): Buffer {
  const [addr, bitsText] = cidr.split('/') as [string, string | undefined];
  const ip = ipToBytes(addr);
  const bits = Number(bitsText ?? ip.length * 8);
  if (!Number.isInteger(bits) || bits < 0 || bits > ip.length * 8)
    throw new DomainError('invalid', `invalid CIDR "${cidr}"`);
  const mask = Buffer.alloc(ip.length);
  for (let i = 0; i < bits; i++) mask[i >> 3]! |= 0x80 >> (i & 7);
  for (let i = 0; i < ip.length; i++) ip[i]! &= mask[i]!;
  return Buffer.concat([ip, mask]);
}

/** Critical NameConstraints, as CA certificates carry them; undefined when no list is set. */
export function nameConstraintsExt(c: NameConstraints): RawExtension | undefined {
  const subtrees = (
    dns?: readonly string[],
    ips?: readonly string[],
    emails?: readonly string[],
    uris?: readonly string[],
  ): Buffer[] => [
    ...(dns ?? []).map((d) => sequence(encodeGeneralName({ type: 'dns', value: d }))),
    ...(ips ?? []).map((r) => sequence(implicitPrimitive(7, cidrBytes(r)))),
    ...(emails ?? []).map((e) => sequence(encodeGeneralName({ type: 'email', value: e }))),
    ...(uris ?? []).map((u) => sequence(encodeGeneralName({ type: 'uri', value: u }))),
  ];
  const permitted = subtrees(
    c.permittedDnsDomains,
    c.permittedIpRanges,
    c.permittedEmailAddresses,
    c.permittedUriDomains,
  );
  const excluded = subtrees(c.excludedDnsDomains, c.excludedIpRanges, c.excludedEmailAddresses, c.excludedUriDomains);
  if (permitted.length === 0 && excluded.length === 0) return undefined;
  const parts: Buffer[] = [];
  if (permitted.length) parts.push(implicitConstructed(0, ...permitted));
  if (excluded.length) parts.push(implicitConstructed(1, ...excluded));
  return { oid: EXT.nameConstraints, critical: true, value: sequence(...parts) };
}

// ---------------------------------------------------------------- decoding

export interface ParsedExtensions {
  /** Every extension in order, raw. */
  all: RawExtension[];
  subjectAltNames: GeneralName[] | undefined;
  basicConstraints: { ca: boolean; pathLen: number | undefined } | undefined;
  /** KeyUsage names as in KEY_USAGE_BITS. */
  keyUsage: string[] | undefined;
  /** ExtendedKeyUsage OIDs. */
  extKeyUsage: string[] | undefined;
  subjectKeyId: Buffer | undefined;
  authorityKeyId: Buffer | undefined;
  ocspServers: string[];
  issuingCertificates: string[];
  crlDistributionPoints: string[];
}

/** Extensions ::= SEQUENCE OF Extension. */
export function parseExtensions(el: DerElement | undefined): ParsedExtensions {
  const out: ParsedExtensions = {
    all: [],
    subjectAltNames: undefined,
    basicConstraints: undefined,
    keyUsage: undefined,
    extKeyUsage: undefined,
    subjectKeyId: undefined,
    authorityKeyId: undefined,
    ocspServers: [],
    issuingCertificates: [],
    crlDistributionPoints: [],
  };
  if (!el) return out;
  const seen = new Set<string>();
  const r = el.children();
  while (r.hasMore()) {
    const ext = r.expect(TAG.SEQUENCE, 'Extension').children();
    const extOid = decodeOid(ext.expect(TAG.OID, 'extnID'));
    const crit = ext.optional(TAG.BOOLEAN);
    const value = ext.expect(TAG.OCTET_STRING, 'extnValue').content();
    ext.done('Extension');
    if (seen.has(extOid)) throw new DomainError('invalid', `duplicate extension ${extOid}`);
    seen.add(extOid);
    out.all.push({ oid: extOid, critical: crit ? decodeBoolean(crit) : false, value });
    decodeKnown(out, extOid, value);
  }
  return out;
}

function decodeKnown(out: ParsedExtensions, extOid: string, value: Buffer): void {
  switch (extOid) {
    case EXT.subjectAltName:
      out.subjectAltNames = decodeGeneralNames(parseDer(value));
      break;
    case EXT.basicConstraints: {
      const r = parseDer(value).children();
      const ca = r.optional(TAG.BOOLEAN);
      const pl = r.optional(TAG.INTEGER);
      out.basicConstraints = { ca: ca ? decodeBoolean(ca) : false, pathLen: pl ? decodeSmallInt(pl) : undefined };
      break;
    }
    case EXT.keyUsage: {
      const bits = decodeNamedBits(parseDer(value));
      out.keyUsage = KEY_USAGE_BITS.filter(([, b]) => bits.includes(b)).map(([n]) => n);
      break;
    }
    case EXT.extKeyUsage:
      out.extKeyUsage = parseDer(value).children().rest().map(decodeOid);
      break;
    case EXT.subjectKeyIdentifier: {
      const el = parseDer(value);
      if (el.tag !== TAG.OCTET_STRING) throw new DomainError('invalid', 'malformed subject key identifier');
      out.subjectKeyId = el.content();
      break;
    }
    case EXT.authorityKeyIdentifier: {
      const r = parseDer(value).children();
      const kid = r.optional(0x80);
      out.authorityKeyId = kid?.content();
      break;
    }
    case EXT.authorityInfoAccess:
      for (const ad of parseDer(value).children().rest()) {
        const r = ad.children();
        const method = decodeOid(r.expect(TAG.OID, 'accessMethod'));
        const loc = r.next();
        if (!loc.isContext(6)) continue;
        const url = loc.content().toString('latin1');
        if (method === AD_OCSP) out.ocspServers.push(url);
        else if (method === AD_CA_ISSUERS) out.issuingCertificates.push(url);
      }
      break;
    case EXT.crlDistributionPoints:
      for (const dp of parseDer(value).children().rest()) {
        const name = dp.children().optional(0xa0);
        const full = name?.children().optional(0xa0);
        if (!full) continue;
        for (const gn of decodeGeneralNames(full)) if (gn.type === 'uri') out.crlDistributionPoints.push(gn.value);
      }
      break;
    default:
      break;
  }
}
