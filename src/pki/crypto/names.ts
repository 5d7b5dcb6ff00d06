/**
 * X.500 Names (RFC 5280 4.1.2.4): encoding from attributes, decoding with the raw DER
 * kept so an issuer's subject can be copied byte for byte into the certificates it signs.
 */
import {
  TAG,
  decodeOid,
  derError,
  decodeString,
  ia5String,
  isPrintable,
  oid,
  parseDer,
  printableString,
  sequence,
  set,
  setOf,
  utf8String,
} from './der.js';
import type { DerElement } from './der.js';

/** Short names for the attribute types the engine reads or writes. */
export const NAME_OIDS: Readonly<Record<string, string>> = {
  CN: '2.5.4.3',
  SN: '2.5.4.4',
  serialNumber: '2.5.4.5',
  C: '2.5.4.6',
  L: '2.5.4.7',
  ST: '2.5.4.8',
  street: '2.5.4.9',
  O: '2.5.4.10',
  OU: '2.5.4.11',
  title: '2.5.4.12',
  postalCode: '2.5.4.17',
  GN: '2.5.4.42',
  emailAddress: '1.2.840.113549.1.9.1',
  UID: '0.9.2342.19200300.100.1.1',
  DC: '0.9.2342.19200300.100.1.25',
};

const SHORT_BY_OID = new Map(Object.entries(NAME_OIDS).map(([k, v]) => [v, k]));

export interface NameAttribute {
  /** Dotted OID of the attribute type. */
  oid: string;
  /** Short name (CN, O, ...) when known. */
  type: string | undefined;
  value: string;
  /** ASN.1 tag the value was (or will be) encoded with. */
  tag: number;
}

export interface ParsedName {
  /** The Name exactly as encoded, to be copied verbatim. */
  der: Buffer;
  /** Relative distinguished names in order; most hold one attribute. */
  rdns: NameAttribute[][];
}

/** An attribute to encode; `type` is a short name from NAME_OIDS or a dotted OID. */
export interface NameInput {
  type: string;
  value: string;
}

function attributeOid(type: string): string {
  const known = NAME_OIDS[type];
  if (known) return known;
  if (/^\d+(\.\d+)+$/.test(type)) return type;
  throw new RangeError(`unknown name attribute type "${type}"`);
}

/**
 * String type per attribute: emailAddress and DC must be IA5String (RFC 5280 appendix A),
 * C and serialNumber PrintableString; others PrintableString when the text allows it,
 * else UTF8String, the same choice Go-based CAs make, so subjects compare equal to theirs.
 */
function encodeValue(attrOid: string, value: string): Buffer {
  if (attrOid === NAME_OIDS.emailAddress || attrOid === NAME_OIDS.DC) return ia5String(value);
  if (attrOid === NAME_OIDS.C) return printableString(value);
  return isPrintable(value) ? printableString(value) : utf8String(value);
}

function encodeAttribute(a: NameInput): Buffer {
  const o = attributeOid(a.type);
  return sequence(oid(o), encodeValue(o, a.value));
}

/** Encodes a Name with one attribute per RDN, in the given order. */
export function encodeName(attrs: readonly NameInput[]): Buffer {
  return sequence(...attrs.map((a) => set(encodeAttribute(a))));
}

/** Encodes a Name from explicit RDNs; an RDN with several attributes becomes a multi-valued SET. */
export function encodeNameRdns(rdns: readonly (readonly NameInput[])[]): Buffer {
  return sequence(...rdns.filter((r) => r.length > 0).map((r) => setOf(...r.map(encodeAttribute))));
}

/** Subject fields as the Vault API names them. */
export interface SubjectFields {
  commonName?: string;
  country?: readonly string[];
  province?: readonly string[];
  locality?: readonly string[];
  streetAddress?: readonly string[];
  postalCode?: readonly string[];
  organization?: readonly string[];
  ou?: readonly string[];
  serialNumber?: string;
  userIds?: readonly string[];
}

/**
 * The subject a Go-based CA writes for these fields: C, ST, L, street, postalCode, O, OU,
 * CN, serialNumber, then one RDN per UID; several values of one type share a multi-valued RDN.
 */
export function encodeSubject(f: SubjectFields): Buffer {
  const group = (type: string, values: readonly string[] | undefined): NameInput[] =>
    (values ?? []).map((value) => ({ type, value }));
  const rdns: NameInput[][] = [
    group('C', f.country),
    group('ST', f.province),
    group('L', f.locality),
    group('street', f.streetAddress),
    group('postalCode', f.postalCode),
    group('O', f.organization),
    group('OU', f.ou),
  ];
  if (f.commonName) rdns.push([{ type: 'CN', value: f.commonName }]);
  if (f.serialNumber) rdns.push([{ type: 'serialNumber', value: f.serialNumber }]);
  for (const uid of f.userIds ?? []) rdns.push([{ type: 'UID', value: uid }]);
  return encodeNameRdns(rdns);
}

/** Decodes a Name element, keeping its raw encoding. */
export function decodeNameElement(el: DerElement): ParsedName {
  if (el.tag !== TAG.SEQUENCE) throw derError('Name must be a SEQUENCE');
  const rdns: NameAttribute[][] = [];
  const r = el.children();
  while (r.hasMore()) {
    const rdn = r.expect(TAG.SET, 'RelativeDistinguishedName').children();
    const attrs: NameAttribute[] = [];
    while (rdn.hasMore()) {
      const atv = rdn.expect(TAG.SEQUENCE, 'AttributeTypeAndValue').children();
      const o = decodeOid(atv.expect(TAG.OID, 'attribute type'));
      const v = atv.next();
      let value: string;
      try {
        value = decodeString(v);
      } catch {
        value = '#' + v.raw().toString('hex');
      }
      attrs.push({ oid: o, type: SHORT_BY_OID.get(o), value, tag: v.tag });
    }
    rdns.push(attrs);
  }
  return { der: el.raw(), rdns };
}

export function decodeName(der: Buffer): ParsedName {
  return decodeNameElement(parseDer(der));
}

/** All values of one attribute type (short name or OID), in order. */
export function nameValues(name: ParsedName, type: string): string[] {
  const o = NAME_OIDS[type] ?? type;
  const out: string[] = [];
  for (const rdn of name.rdns) for (const a of rdn) if (a.oid === o) out.push(a.value);
  return out;
}

/** First common name, or '' when there is none. */
export function commonName(name: ParsedName): string {
  return nameValues(name, 'CN')[0] ?? '';
}

function escapeValue(v: string): string {
  return v
    .replace(/([,+"\\<>;])/g, '\\$1')
    .replace(/^([ #])/, '\\$1')
    .replace(/ $/, '\\ ');
}

/** RFC 4514-style text, most significant RDN first as printed by `openssl -nameopt RFC2253` reversed. */
export function nameToString(name: ParsedName): string {
  return name.rdns.map((rdn) => rdn.map((a) => `${a.type ?? a.oid}=${escapeValue(a.value)}`).join('+')).join(',');
}

/** Whether two encoded Names are identical (RFC 5280 allows binary comparison for names we issued). */
export function sameName(a: Buffer, b: Buffer): boolean {
  return a.equals(b);
}
