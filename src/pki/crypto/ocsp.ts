/**
 * OCSP (RFC 6960): request parsing, signed BasicOCSPResponses and bare error responses.
 *
 * Everything that depends only on the issuer (name and key hashes for each CertID hash
 * algorithm, the responder ID, the signature algorithm) is computed once per responder.
 * Caching and answering whole requests are in ocsp-answer.ts.
 */
import { createHash } from 'node:crypto';
import { DomainError } from '../../shared/errors.js';
import {
  NULL_DER,
  TAG,
  bitString,
  decodeBitString,
  decodeOid,
  enumerated,
  explicit,
  generalizedTime,
  integer,
  octetString,
  oid,
  parseDer,
  sequence,
  tlv,
} from './der.js';
import type { DerElement } from './der.js';
import type { IssuerContext } from './cert-builder.js';
import { normalizeSerial, serialFromHex } from './serial.js';
import type { HashName } from './signature.js';

/** OCSPResponseStatus values (RFC 6960 4.2.1). */
export const OCSP_STATUS = {
  successful: 0,
  malformedRequest: 1,
  internalError: 2,
  tryLater: 3,
  sigRequired: 5,
  unauthorized: 6,
} as const;
export type OcspErrorStatus = 1 | 2 | 3 | 5 | 6;

export const OCSP_NONCE_OID = '1.3.6.1.5.5.7.48.1.2';
const OCSP_BASIC_OID = '1.3.6.1.5.5.7.48.1.1';

/** A request that is not a well-formed OCSPRequest: answer it with `malformedRequest`. */
export class OcspRequestError extends DomainError {
  readonly ocspStatus = OCSP_STATUS.malformedRequest;
  constructor(message: string, options: { cause?: unknown } = {}) {
    super('invalid', `malformed OCSP request: ${message}`, options);
    this.name = 'OcspRequestError';
  }
}

export interface OcspCertId {
  /** The CertID exactly as received; echoed in the SingleResponse so clients match it byte for byte. */
  der: Buffer;
  /** Hash algorithm of the CertID, or undefined for one we do not support (answered `unknown`). */
  hash: HashName | undefined;
  hashOid: string;
  issuerNameHash: Buffer;
  issuerKeyHash: Buffer;
  /** Storage-form lowercase hex of the serial. */
  serialHex: string;
}

export interface OcspRequest {
  certIds: OcspCertId[];
  /** Contents of the nonce extension's extnValue, when present. */
  nonce: Buffer | undefined;
  /** The complete nonce Extension DER, echoed verbatim in the response. */
  nonceExtension: Buffer | undefined;
  /** Whether the request carried an optionalSignature (not verified). */
  signed: boolean;
}

const HASHES: ReadonlyArray<readonly [HashName, string, number]> = [
  ['sha1', '1.3.14.3.2.26', 20],
  ['sha256', '2.16.840.1.101.3.4.2.1', 32],
  ['sha384', '2.16.840.1.101.3.4.2.2', 48],
  ['sha512', '2.16.840.1.101.3.4.2.3', 64],
];
/** Hashes by the hex of their OID encoding, so a request's algorithm is identified without decoding the OID. */
const HASH_BY_OID_DER = new Map(HASHES.map(([h, o, len]) => [oid(o).toString('hex'), { hash: h, oid: o, len }]));

function expectTag(el: DerElement, tag: number, what: string): DerElement {
  if (el.tag !== tag) throw new OcspRequestError(`expected ${what}`);
  return el;
}

function parseCertId(el: DerElement): OcspCertId {
  const r = expectTag(el, TAG.SEQUENCE, 'CertID').children();
  const alg = r.expect(TAG.SEQUENCE, 'hashAlgorithm').children();
  const oidEl = alg.expect(TAG.OID, 'hash algorithm OID');
  if (alg.hasMore() && alg.next().tag !== TAG.NULL) throw new OcspRequestError('unexpected hash algorithm parameters');
  alg.done('hashAlgorithm');
  const known = HASH_BY_OID_DER.get(oidEl.raw().toString('hex'));
  const issuerNameHash = r.expect(TAG.OCTET_STRING, 'issuerNameHash').content();
  const issuerKeyHash = r.expect(TAG.OCTET_STRING, 'issuerKeyHash').content();
  const serial = r.expect(TAG.INTEGER, 'serialNumber');
  r.done('CertID');
  if (known && (issuerNameHash.length !== known.len || issuerKeyHash.length !== known.len))
    throw new OcspRequestError('hash length does not match the hash algorithm');
  if (serial.length === 0 || serial.length > 64) throw new OcspRequestError('bad serial number');
  let s = serial.contentStart;
  while (s < serial.end - 1 && serial.buf[s] === 0) s++;
  return {
    der: el.raw(),
    hash: known?.hash,
    hashOid: known?.oid ?? decodeOid(oidEl),
    issuerNameHash,
    issuerKeyHash,
    serialHex: serial.buf.toString('hex', s, serial.end),
  };
}

const NONCE_OID_DER = oid(OCSP_NONCE_OID);

/** Finds the nonce in an `Extensions` element; other extensions are ignored. */
function findNonce(exts: DerElement): { ext: Buffer; value: Buffer } | undefined {
  const r = expectTag(exts, TAG.SEQUENCE, 'Extensions').children();
  let found: { ext: Buffer; value: Buffer } | undefined;
  while (r.hasMore()) {
    const ext = r.next();
    const e = expectTag(ext, TAG.SEQUENCE, 'Extension').children();
    const extOid = e.expect(TAG.OID, 'extnID').raw();
    e.optional(TAG.BOOLEAN);
    const value = e.expect(TAG.OCTET_STRING, 'extnValue').content();
    e.done('Extension');
    if (extOid.equals(NONCE_OID_DER)) {
      if (found) throw new OcspRequestError('duplicate nonce extension');
      found = { ext: ext.raw(), value };
    }
  }
  return found;
}

/**
 * Parses a DER OCSPRequest. Requests larger than `maxBytes` (2048 by default, as Vault
 * limits them), structurally invalid ones and ones without a CertID throw OcspRequestError.
 */
export function parseOcspRequest(der: Buffer, opts: { maxBytes?: number } = {}): OcspRequest {
  if (der.length === 0) throw new OcspRequestError('empty request');
  if (der.length > (opts.maxBytes ?? 2048)) throw new OcspRequestError('request too large');
  try {
    const top = parseDer(der);
    const r = expectTag(top, TAG.SEQUENCE, 'OCSPRequest').children();
    const t = r.expect(TAG.SEQUENCE, 'TBSRequest').children();
    const signed = r.optional(0xa0) !== undefined;
    r.done('OCSPRequest');
    const version = t.optional(0xa0);
    if (version && !version.content().equals(Buffer.from([0x02, 0x01, 0x00])))
      throw new OcspRequestError('unsupported version');
    t.optional(0xa1); // requestorName
    const list = t.expect(TAG.SEQUENCE, 'requestList').children();
    const exts = t.optional(0xa2);
    t.done('TBSRequest');
    const certIds: OcspCertId[] = [];
    while (list.hasMore()) {
      const req = expectTag(list.next(), TAG.SEQUENCE, 'Request').children();
      certIds.push(parseCertId(req.next()));
      req.optional(0xa0); // singleRequestExtensions
      req.done('Request');
    }
    if (certIds.length === 0) throw new OcspRequestError('no certificate in request');
    const nonce = exts ? findNonce(exts.children().next()) : undefined;
    return { certIds, nonce: nonce?.value, nonceExtension: nonce?.ext, signed };
  } catch (err) {
    if (err instanceof OcspRequestError) throw err;
    throw new OcspRequestError((err as Error).message, { cause: err });
  }
}

/**
 * The DER of a GET request (RFC 6960 appendix A) from the raw path remainder after
 * `/ocsp/`: URL-unescaped, standard or URL-safe base64, padding optional.
 */
export function decodeOcspGetRequest(pathRemainder: string): Buffer {
  let text: string;
  try {
    text = decodeURIComponent(pathRemainder);
  } catch (err) {
    throw new OcspRequestError('bad URL escaping', { cause: err });
  }
  const b64 = text.trim().replace(/-/g, '+').replace(/_/g, '/').replace(/=+$/, '');
  if (b64.length === 0 || b64.length % 4 === 1 || !/^[A-Za-z0-9+/]*$/.test(b64))
    throw new OcspRequestError('request is not base64');
  return Buffer.from(b64, 'base64');
}

/** A bare OCSPResponse carrying only an error status (no responseBytes, unsigned). */
export function ocspErrorResponse(status: OcspErrorStatus): Buffer {
  return Buffer.from([0x30, 0x03, 0x0a, 0x01, status]);
}

export type OcspCertStatus =
  { status: 'good' } | { status: 'revoked'; revocationTime: Date; reason?: number } | { status: 'unknown' };

export interface OcspResponderOptions {
  /** The CA whose certificates are answered for; it signs unless `signer` is given. */
  issuer: IssuerContext;
  /** SubjectPublicKeyInfo DER of the CA certificate (for issuerKeyHash). */
  issuerSpki: Buffer;
  /** The CA certificate, included in responses on request when the CA signs. */
  issuerCertificateDer?: Buffer;
  /** A delegated responder (certificate with the OCSPSigning EKU issued by the CA), signing instead of the CA. */
  signer?: { context: IssuerContext; spki: Buffer; certificateDer: Buffer };
  /** ResponderID form; `byKey` (SHA-1 of the signer's public key bits) by default. */
  responderId?: 'byKey' | 'byName';
  signatureBits?: number;
  usePss?: boolean;
}

const keyBits = (spki: Buffer): Buffer => {
  const r = parseDer(spki).children();
  r.expect(TAG.SEQUENCE, 'AlgorithmIdentifier');
  return decodeBitString(r.expect(TAG.BIT_STRING, 'subjectPublicKey')).bytes;
};

const GOOD = Buffer.from([0x80, 0x00]);
const UNKNOWN = Buffer.from([0x82, 0x00]);
const BASIC_OID_DER = oid(OCSP_BASIC_OID);
const SUCCESSFUL = enumerated(0);

/** Answers for one CA: matching CertIDs, encoding SingleResponses and signing responses. */
export class OcspResponder {
  readonly #opts: OcspResponderOptions;
  readonly #hashes = new Map<HashName, { name: Buffer; key: Buffer }>();
  readonly #issuerKeyBits: Buffer;
  readonly #responderId: Buffer;
  readonly #signer: IssuerContext;
  readonly #certs: Buffer | undefined;

  constructor(opts: OcspResponderOptions) {
    this.#opts = opts;
    this.#issuerKeyBits = keyBits(opts.issuerSpki);
    this.#signer = opts.signer?.context ?? opts.issuer;
    const signerKeyBits = opts.signer ? keyBits(opts.signer.spki) : this.#issuerKeyBits;
    this.#responderId =
      opts.responderId === 'byName'
        ? explicit(1, this.#signer.nameDer)
        : explicit(2, octetString(createHash('sha1').update(signerKeyBits).digest()));
    const cert = opts.signer?.certificateDer ?? opts.issuerCertificateDer;
    this.#certs = cert ? explicit(0, sequence(cert)) : undefined;
    this.hashesFor('sha1');
    this.hashesFor('sha256');
  }

  private hashesFor(h: HashName): { name: Buffer; key: Buffer } {
    let v = this.#hashes.get(h);
    if (!v) {
      v = {
        name: createHash(h).update(this.#opts.issuer.nameDer).digest(),
        key: createHash(h).update(this.#issuerKeyBits).digest(),
      };
      this.#hashes.set(h, v);
    }
    return v;
  }

  /** Whether the CertID names this CA (issuerNameHash and issuerKeyHash under its hash algorithm). */
  matches(id: OcspCertId): boolean {
    if (!id.hash) return false;
    const h = this.hashesFor(id.hash);
    return h.key.equals(id.issuerKeyHash) && h.name.equals(id.issuerNameHash);
  }

  /**
   * The CertID a client would send for `serialHex` of this CA (hash AlgorithmIdentifier with
   * NULL parameters, as openssl and Go write it), to pre-compute answers before any request.
   */
  certIdFor(serialHex: string, hash: HashName = 'sha1'): OcspCertId {
    const h = this.hashesFor(hash);
    const hashOid = HASHES.find(([name]) => name === hash)![1];
    const der = sequence(
      sequence(oid(hashOid), NULL_DER),
      octetString(h.name),
      octetString(h.key),
      integer(serialFromHex(serialHex)),
    );
    return { der, hash, hashOid, issuerNameHash: h.name, issuerKeyHash: h.key, serialHex: normalizeSerial(serialHex) };
  }

  /** The DER of one SingleResponse; `nextUpdate` omitted writes none. */
  singleResponse(id: OcspCertId, s: OcspCertStatus, times: { thisUpdate: Date; nextUpdate?: Date }): Buffer {
    let status: Buffer;
    if (s.status === 'good') status = GOOD;
    else if (s.status === 'unknown') status = UNKNOWN;
    else {
      const parts = [generalizedTime(s.revocationTime)];
      if (s.reason !== undefined) parts.push(explicit(0, enumerated(s.reason)));
      status = tlv(0xa1, ...parts);
    }
    const parts = [id.der, status, generalizedTime(times.thisUpdate)];
    if (times.nextUpdate) parts.push(explicit(0, generalizedTime(times.nextUpdate)));
    return sequence(...parts);
  }

  /**
   * A complete, signed OCSPResponse (status successful) holding the given SingleResponses,
   * the nonce extension echoed when given, and the responder certificate on request.
   */
  respond(
    singles: readonly Buffer[],
    o: { producedAt: Date; nonceExtension?: Buffer; includeCertificate?: boolean },
  ): Buffer {
    const alg = this.#signer.signatureAlgorithm(this.#opts.signatureBits, this.#opts.usePss);
    const data = [this.#responderId, generalizedTime(o.producedAt), sequence(...singles)];
    if (o.nonceExtension) data.push(explicit(1, sequence(o.nonceExtension)));
    const tbs = sequence(...data);
    const basic = [tbs, alg.identifier, bitString(alg.sign(tbs, this.#signer.privateKey))];
    if (o.includeCertificate && this.#certs) basic.push(this.#certs);
    return sequence(SUCCESSFUL, explicit(0, sequence(BASIC_OID_DER, octetString(sequence(...basic)))));
  }
}
