/**
 * GeneralName (RFC 5280 4.2.1.6) encoding and decoding, and the IP address text forms
 * used in SANs and name constraints.
 */
import { isIPv4, isIPv6 } from 'node:net';
import { DomainError } from '../../shared/errors.js';
import {
  TAG,
  decodeOid,
  decodeOidContent,
  decodeString,
  explicit,
  isAscii,
  implicitConstructed,
  implicitPrimitive,
  oid,
  retagImplicit,
  sequence,
  utf8String,
} from './der.js';
import type { DerElement } from './der.js';

export type GeneralName =
  | { type: 'dns'; value: string }
  | { type: 'email'; value: string }
  | { type: 'uri'; value: string }
  | { type: 'ip'; value: string }
  /** otherName; `value` is set when the inner value is a UTF8String (the only kind Vault issues). */
  | { type: 'otherName'; oid: string; value: string | undefined; raw: Buffer }
  | { type: 'dirName'; raw: Buffer }
  | { type: 'registeredId'; value: string }
  | { type: 'other'; tag: number; raw: Buffer };

/** IPv4 or IPv6 text to its 4 or 16 bytes. */
export function ipToBytes(text: string): Buffer {
  if (isIPv4(text)) return Buffer.from(text.split('.').map(Number));
  if (!isIPv6(text)) throw new DomainError('invalid', `invalid IP address "${text}"`);
  let s = text.split('%')[0]!;
  let tail: number[] = [];
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(s);
  if (v4) {
    const b = v4[1]!.split('.').map(Number);
    tail = [(b[0]! << 8) | b[1]!, (b[2]! << 8) | b[3]!];
    s = s.slice(0, -v4[1]!.length) + '0:0';
  }
  const [head, rest] = s.split('::') as [string, string | undefined];
  const parse = (p: string): number[] => (p === '' ? [] : p.split(':').map((h) => parseInt(h, 16)));
  const left = parse(head);
  const right = rest === undefined ? [] : parse(rest);
  const groups =
    rest === undefined ? left : [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
  if (tail.length) groups.splice(6, 2, ...tail);
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => out.writeUInt16BE(g, i * 2));
  return out;
}

/** 4 or 16 bytes to text; IPv6 in the RFC 5952 canonical form. */
export function bytesToIp(b: Buffer): string {
  if (b.length === 4) return Array.from(b).join('.');
  if (b.length !== 16) return b.toString('hex');
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(b.readUInt16BE(i));
  let bestStart = -1;
  let bestLen = 0;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen && j - i >= 2) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart < 0) return hex.join(':');
  return hex.slice(0, bestStart).join(':') + '::' + hex.slice(bestStart + bestLen).join(':');
}

/** Encodes one GeneralName. */
export function encodeGeneralName(n: GeneralName): Buffer {
  switch (n.type) {
    case 'email':
      return implicitPrimitive(1, asciiBytes(n.value, 'e-mail address'));
    case 'dns':
      return implicitPrimitive(2, asciiBytes(n.value, 'DNS name'));
    case 'uri':
      return implicitPrimitive(6, asciiBytes(n.value, 'URI'));
    case 'ip':
      return implicitPrimitive(7, ipToBytes(n.value));
    case 'otherName':
      if (n.value === undefined) return n.raw;
      return implicitConstructed(0, oid(n.oid), explicit(0, utf8String(n.value)));
    case 'dirName':
      return explicit(4, n.raw);
    case 'registeredId':
      return retagImplicit(8, oid(n.value));
    case 'other':
      return n.raw;
  }
}

function asciiBytes(s: string, what: string): Buffer {
  if (!isAscii(s)) throw new DomainError('invalid', `${what} must be ASCII: ${JSON.stringify(s)}`);
  return Buffer.from(s, 'latin1');
}

/** GeneralNames: SEQUENCE OF GeneralName. */
export function encodeGeneralNames(names: readonly GeneralName[]): Buffer {
  return sequence(...names.map(encodeGeneralName));
}

/** Decodes one GeneralName element. */
export function decodeGeneralName(el: DerElement): GeneralName {
  const cls = el.tag & 0xc0;
  const n = el.tag & 0x1f;
  if (cls !== 0x80) return { type: 'other', tag: el.tag, raw: el.raw() };
  const text = (): string => el.content().toString('latin1');
  switch (n) {
    case 0: {
      const r = el.children();
      const typeId = decodeOid(r.expect(TAG.OID, 'otherName type-id'));
      const wrapped = r.next();
      let value: string | undefined;
      if (wrapped.isContext(0) && wrapped.constructed) {
        const inner = wrapped.children().next();
        if (inner.tag === TAG.UTF8_STRING) value = decodeString(inner);
      }
      return { type: 'otherName', oid: typeId, value, raw: el.raw() };
    }
    case 1:
      return { type: 'email', value: text() };
    case 2:
      return { type: 'dns', value: text() };
    case 4:
      return { type: 'dirName', raw: el.children().next().raw() };
    case 6:
      return { type: 'uri', value: text() };
    case 7:
      return { type: 'ip', value: bytesToIp(el.content()) };
    case 8:
      return { type: 'registeredId', value: decodeOidContent(el.content()) };
    default:
      return { type: 'other', tag: el.tag, raw: el.raw() };
  }
}

export function decodeGeneralNames(el: DerElement): GeneralName[] {
  const out: GeneralName[] = [];
  const r = el.children();
  while (r.hasMore()) out.push(decodeGeneralName(r.next()));
  return out;
}
