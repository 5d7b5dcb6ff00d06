/**
 * X.509 certificate parsing with the lean decoder: the fields the engine needs (serial,
 * names with their raw DER, validity, key, the extensions it acts on) and signature
 * verification against an issuer key.
 */
import type { KeyObject } from 'node:crypto';
import { DomainError } from '../../shared/errors.js';
import { TAG, decodeBitString, decodeSmallInt, decodeTime, decodeUnsignedBytes, parseDer } from './der.js';
import { parseExtensions } from './extensions.js';
import type { ParsedExtensions } from './extensions.js';
import { parsePublicKey } from './keys.js';
import type { KeyDescription } from './key-generation.js';
import { decodeNameElement } from './names.js';
import type { ParsedName } from './names.js';
import { decodeBase64Strict, isPem, pemDecodeAll } from './pem.js';
import { serialToHex } from './serial.js';
import { parseSignatureAlgorithm, verifySignature } from './signature.js';
import type { VerifyParams } from './signature.js';

export interface ParsedCertificate {
  der: Buffer;
  /** The signed TBSCertificate bytes. */
  tbsDer: Buffer;
  version: number;
  serial: Buffer;
  /** Storage-form lowercase hex. */
  serialHex: string;
  issuer: ParsedName;
  subject: ParsedName;
  notBefore: Date;
  notAfter: Date;
  spkiDer: Buffer;
  publicKey: KeyObject;
  key: KeyDescription;
  extensions: ParsedExtensions;
  signatureAlgorithm: VerifyParams;
  signature: Buffer;
}

/** One certificate from PEM, base64 DER or DER; throws `invalid` on malformed input. */
export function parseCertificate(input: string | Buffer): ParsedCertificate {
  let der: Buffer;
  if (Buffer.isBuffer(input)) der = input;
  else if (isPem(input)) {
    const block = pemDecodeAll(input).find((b) => b.label === 'CERTIFICATE');
    if (!block) throw new DomainError('invalid', 'no certificate found in PEM data');
    der = block.der;
  } else der = decodeBase64Strict(input, 'certificate');
  try {
    return decode(der);
  } catch (err) {
    throw new DomainError('invalid', `unable to parse certificate: ${(err as Error).message}`, { cause: err });
  }
}

/** Every certificate of a PEM bundle, in order; other blocks are skipped. */
export function parseCertificateBundle(text: string): ParsedCertificate[] {
  return pemDecodeAll(text)
    .filter((b) => b.label === 'CERTIFICATE')
    .map((b) => parseCertificate(b.der));
}

function decode(der: Buffer): ParsedCertificate {
  const top = parseDer(der);
  if (top.tag !== TAG.SEQUENCE) throw new Error('not a SEQUENCE');
  const r = top.children();
  const tbs = r.expect(TAG.SEQUENCE, 'TBSCertificate');
  const outerAlg = r.expect(TAG.SEQUENCE, 'signatureAlgorithm');
  const sig = decodeBitString(r.expect(TAG.BIT_STRING, 'signatureValue'));
  r.done('Certificate');

  const t = tbs.children();
  const v = t.optional(0xa0);
  const version = v ? decodeSmallInt(v.children().next()) + 1 : 1;
  const serial = decodeSerial(t.expect(TAG.INTEGER, 'serialNumber'));
  const innerAlg = t.expect(TAG.SEQUENCE, 'signature');
  if (!innerAlg.raw().equals(outerAlg.raw()))
    throw new Error('signature algorithm differs between TBS and certificate');
  const issuer = decodeNameElement(t.expect(TAG.SEQUENCE, 'issuer'));
  const validity = t.expect(TAG.SEQUENCE, 'validity').children();
  const notBefore = decodeTime(validity.next());
  const notAfter = decodeTime(validity.next());
  const subject = decodeNameElement(t.expect(TAG.SEQUENCE, 'subject'));
  const spkiEl = t.expect(TAG.SEQUENCE, 'subjectPublicKeyInfo');
  t.optional(0x81); // issuerUniqueID
  t.optional(0x82); // subjectUniqueID
  const extsEl = t.optional(0xa3);
  t.done('TBSCertificate');
  const { key: publicKey, description } = parsePublicKey(spkiEl.raw());
  return {
    der,
    tbsDer: tbs.raw(),
    version,
    serial,
    serialHex: serialToHex(serial),
    issuer,
    subject,
    notBefore,
    notAfter,
    spkiDer: spkiEl.raw(),
    publicKey,
    key: description,
    extensions: parseExtensions(extsEl?.children().next()),
    signatureAlgorithm: parseSignatureAlgorithm(outerAlg),
    signature: sig.bytes,
  };
}

/** Serials are positive, but some CAs wrote negative ones; keep their raw bytes rather than fail. */
function decodeSerial(el: ReturnType<typeof parseDer>): Buffer {
  try {
    return decodeUnsignedBytes(el);
  } catch {
    return el.content();
  }
}

/** Whether `cert` carries a valid signature by `issuerKey` (public or private KeyObject). */
export function verifyCertificateSignature(cert: ParsedCertificate, issuerKey: KeyObject): boolean {
  return verifySignature(cert.signatureAlgorithm, cert.tbsDer, cert.signature, issuerKey);
}

/** Issuer DN equals subject DN (self-issued, RFC 5280 6.1). */
export function isSelfIssued(cert: ParsedCertificate): boolean {
  return cert.issuer.der.equals(cert.subject.der);
}

/** Self-issued and verifiable with its own key. */
export function isSelfSigned(cert: ParsedCertificate): boolean {
  return isSelfIssued(cert) && verifyCertificateSignature(cert, cert.publicKey);
}

/** Whether the certificate is a CA (Basic Constraints CA:TRUE). */
export function isCa(cert: ParsedCertificate): boolean {
  return cert.extensions.basicConstraints?.ca === true;
}

/** What certificate search matches on: the subject's common name and every textual name. */
export interface CertificateSearchNames {
  /** The subject's first CN, or '' when it has none. */
  commonName: string;
  /** Lowercased CN and subject alternative names (DNS, email, IP, URI, UTF-8 otherName), one a line. */
  names: string;
}

/**
 * The names of a certificate for the search index, read without decoding its key (cheap
 * enough for every stored certificate). Unreadable parts give empty names, never an error:
 * a certificate the engine stores has already been parsed or built by it.
 */
export function certificateSearchNames(der: Buffer): CertificateSearchNames {
  try {
    const t = parseDer(der).children().expect(TAG.SEQUENCE, 'TBSCertificate').children();
    t.optional(0xa0);
    t.next(); // serialNumber
    t.next(); // signature
    t.next(); // issuer
    t.next(); // validity
    const subject = decodeNameElement(t.expect(TAG.SEQUENCE, 'subject'));
    t.next(); // subjectPublicKeyInfo
    t.optional(0x81);
    t.optional(0x82);
    const exts = parseExtensions(t.optional(0xa3)?.children().next());
    const cn = subject.rdns.flat().find((a) => a.type === 'CN')?.value ?? '';
    const all = cn === '' ? [] : [cn];
    for (const n of exts.subjectAltNames ?? []) {
      const v =
        n.type === 'dns' || n.type === 'email' || n.type === 'uri' || n.type === 'ip' || n.type === 'otherName'
          ? n.value
          : undefined;
      if (v !== undefined && v !== '' && !all.includes(v)) all.push(v);
    }
    return { commonName: cn, names: all.join('\n').toLowerCase() };
  } catch {
    return { commonName: '', names: '' };
  }
}
