/** Parsing of X.509 v2 CRLs: the fields the engine reads back from its own CRLs, and signature verification. */
import type { KeyObject } from 'node:crypto';
import { DomainError } from '../../shared/errors.js';
import { TAG, decodeBigInt, decodeBitString, decodeOid, decodeSmallInt, decodeTime, parseDer } from './der.js';
import type { DerElement } from './der.js';
import { CRL_EXT } from './crl.js';
import { EXT } from './extensions.js';
import { decodeBase64Strict, isPem, pemDecodeAll } from './pem.js';
import { parseSignatureAlgorithm, verifySignature } from './signature.js';
import type { VerifyParams } from './signature.js';

export interface ParsedCrlEntry {
  serialHex: string;
  revocationDate: Date;
  reason: number | undefined;
}

export interface ParsedCrl {
  der: Buffer;
  tbsDer: Buffer;
  version: number;
  signatureAlgorithm: VerifyParams;
  issuerDer: Buffer;
  thisUpdate: Date;
  nextUpdate: Date | undefined;
  crlNumber: bigint | undefined;
  deltaBaseCrlNumber: bigint | undefined;
  authorityKeyId: Buffer | undefined;
  entries: ParsedCrlEntry[];
  signature: Buffer;
}

function serialHexOf(el: DerElement): string {
  if (el.tag !== TAG.INTEGER || el.length === 0) throw new Error('expected serial INTEGER');
  let s = el.contentStart;
  while (s < el.end - 1 && el.buf[s] === 0) s++;
  return el.buf.toString('hex', s, el.end);
}

function entryReason(extsEl: DerElement | undefined): number | undefined {
  if (!extsEl) return undefined;
  const r = extsEl.children();
  while (r.hasMore()) {
    const e = r.next().children();
    if (decodeOid(e.expect(TAG.OID)) !== CRL_EXT.reasonCode) continue;
    e.optional(TAG.BOOLEAN);
    return decodeSmallInt(parseDer(e.expect(TAG.OCTET_STRING).content()));
  }
  return undefined;
}

function decodeCrl(der: Buffer, withEntries: boolean): ParsedCrl {
  const r = parseDer(der).children();
  const tbs = r.expect(TAG.SEQUENCE, 'TBSCertList');
  const outerAlg = r.expect(TAG.SEQUENCE, 'signatureAlgorithm');
  const sig = decodeBitString(r.expect(TAG.BIT_STRING, 'signatureValue'));
  r.done('CertificateList');
  const t = tbs.children();
  const v = t.optional(TAG.INTEGER);
  const version = v ? decodeSmallInt(v) + 1 : 1;
  const innerAlg = t.expect(TAG.SEQUENCE, 'signature');
  if (!innerAlg.raw().equals(outerAlg.raw())) throw new Error('signature algorithm differs between TBS and CRL');
  const issuerDer = t.expect(TAG.SEQUENCE, 'issuer').raw();
  const thisUpdate = decodeTime(t.next());
  const tag = t.peekTag();
  const nextUpdate = tag === TAG.UTC_TIME || tag === TAG.GENERALIZED_TIME ? decodeTime(t.next()) : undefined;
  const entries: ParsedCrlEntry[] = [];
  const list = t.optional(TAG.SEQUENCE);
  if (list && withEntries) {
    const lr = list.children();
    while (lr.hasMore()) {
      const er = lr.next().children();
      const serialHex = serialHexOf(er.next());
      const revocationDate = decodeTime(er.next());
      const reason = entryReason(er.optional(TAG.SEQUENCE));
      er.done('revoked certificate entry');
      entries.push({ serialHex, revocationDate, reason });
    }
  }
  let crlNumber: bigint | undefined;
  let deltaBaseCrlNumber: bigint | undefined;
  let authorityKeyId: Buffer | undefined;
  const extsEl = t.optional(0xa0);
  t.done('TBSCertList');
  if (extsEl) {
    const xr = extsEl.children().expect(TAG.SEQUENCE, 'crlExtensions').children();
    while (xr.hasMore()) {
      const e = xr.next().children();
      const extOid = decodeOid(e.expect(TAG.OID));
      e.optional(TAG.BOOLEAN);
      const value = parseDer(e.expect(TAG.OCTET_STRING).content());
      if (extOid === CRL_EXT.crlNumber) crlNumber = decodeBigInt(value);
      else if (extOid === CRL_EXT.deltaCrlIndicator) deltaBaseCrlNumber = decodeBigInt(value);
      else if (extOid === EXT.authorityKeyIdentifier) authorityKeyId = value.children().optional(0x80)?.content();
    }
  }
  return {
    der,
    tbsDer: tbs.raw(),
    version,
    signatureAlgorithm: parseSignatureAlgorithm(outerAlg),
    issuerDer,
    thisUpdate,
    nextUpdate,
    crlNumber,
    deltaBaseCrlNumber,
    authorityKeyId,
    entries,
    signature: sig.bytes,
  };
}

/**
 * A CRL from DER, PEM (`X509 CRL`) or base64 DER; throws `invalid` on malformed input.
 * `entries: false` skips decoding the revoked list (its `entries` is then empty), for
 * callers that only need the number, dates or signature of a large CRL.
 */
export function parseCrl(input: Buffer | string, opts: { entries?: boolean } = {}): ParsedCrl {
  let der: Buffer;
  if (Buffer.isBuffer(input)) der = input;
  else if (isPem(input)) {
    const block = pemDecodeAll(input).find((b) => b.label === 'X509 CRL');
    if (!block) throw new DomainError('invalid', 'no CRL found in PEM data');
    der = block.der;
  } else der = decodeBase64Strict(input, 'CRL');
  try {
    return decodeCrl(der, opts.entries ?? true);
  } catch (err) {
    throw new DomainError('invalid', `unable to parse CRL: ${(err as Error).message}`, { cause: err });
  }
}

/** Whether the CRL carries a valid signature by `issuerKey`. */
export function verifyCrlSignature(crl: ParsedCrl, issuerKey: KeyObject): boolean {
  return verifySignature(crl.signatureAlgorithm, crl.tbsDer, crl.signature, issuerKey);
}
