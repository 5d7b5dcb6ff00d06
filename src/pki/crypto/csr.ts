/**
 * PKCS#10 certification requests (RFC 2986): a parser that keeps the raw subject and
 * SubjectPublicKeyInfo for verbatim copying, self-signature verification, and a builder
 * for the CSRs the engine produces itself (intermediate generation).
 */
import type { KeyObject } from 'node:crypto';
import { DomainError } from '../../shared/errors.js';
import { TAG, bitString, decodeBitString, decodeOid, decodeSmallInt, implicitConstructed, integer, oid, parseDer, sequence, setOf } from './der.js';
import type { DerElement } from './der.js';
import { encodeExtension, parseExtensions } from './extensions.js';
import type { ParsedExtensions, RawExtension } from './extensions.js';
import { describeKey, parsePublicKey, spkiDer } from './keys.js';
import type { KeyDescription } from './key-generation.js';
import { decodeNameElement } from './names.js';
import type { ParsedName } from './names.js';
import { decodeBase64Strict, isPem, pemDecodeAll, pemEncode } from './pem.js';
import { chooseSignatureAlgorithm, parseSignatureAlgorithm, verifySignature, verifySignatureAsync } from './signature.js';
import type { VerifyParams } from './signature.js';

const EXTENSION_REQUEST = '1.2.840.113549.1.9.14';

export interface ParsedCsr {
  der: Buffer;
  /** CertificationRequestInfo DER (the signed bytes). */
  infoDer: Buffer;
  subject: ParsedName;
  /** SubjectPublicKeyInfo exactly as in the request. */
  spkiDer: Buffer;
  publicKey: KeyObject;
  key: KeyDescription;
  /** Requested extensions (from the extensionRequest attribute). */
  extensions: ParsedExtensions;
  /** Attributes other than extensionRequest, raw. */
  otherAttributes: { oid: string; values: Buffer[] }[];
  /** Go-style name of the signature algorithm, e.g. `ECDSAWithSHA256`. */
  signatureAlgorithm: string;
  signatureValid: boolean;
}

const invalidCsr = (msg: string, cause?: unknown): DomainError =>
  new DomainError('invalid', `certificate request could not be parsed: ${msg}`, cause === undefined ? {} : { cause });

/** Accepts a PEM `CERTIFICATE REQUEST` (or `NEW CERTIFICATE REQUEST`), base64 DER or raw DER. */
export function csrDer(input: string | Buffer): Buffer {
  if (Buffer.isBuffer(input)) return input;
  if (input.trim() === '') throw new DomainError('invalid', 'csr contains no data');
  if (isPem(input)) {
    const block = pemDecodeAll(input).find((b) => b.label === 'CERTIFICATE REQUEST' || b.label === 'NEW CERTIFICATE REQUEST');
    if (!block) throw new DomainError('invalid', 'csr contains no data');
    return block.der;
  }
  return decodeBase64Strict(input, 'csr');
}

/**
 * Parses a CSR and checks its self-signature. With `requireValidSignature` (the default)
 * a bad signature throws `invalid` with Vault's message `request signature invalid`.
 */
export function parseCsr(input: string | Buffer, opts: { requireValidSignature?: boolean } = {}): ParsedCsr {
  const der = csrDer(input);
  let csr: ParsedCsr;
  try {
    csr = decode(der);
  } catch (err) {
    if (err instanceof DomainError && err.message.startsWith('certificate request')) throw err;
    throw invalidCsr((err as Error).message, err);
  }
  if ((opts.requireValidSignature ?? true) && !csr.signatureValid) throw new DomainError('invalid', 'request signature invalid');
  return csr;
}

/**
 * parseCsr with the self-signature checked on the libuv threadpool, leaving the event loop
 * free (the hot sign path). Same results and errors as parseCsr.
 */
export async function parseCsrAsync(input: string | Buffer, opts: { requireValidSignature?: boolean } = {}): Promise<ParsedCsr> {
  const der = csrDer(input);
  let d: Decoded;
  try {
    d = decodeUnverified(der);
  } catch (err) {
    if (err instanceof DomainError && err.message.startsWith('certificate request')) throw err;
    throw invalidCsr((err as Error).message, err);
  }
  const { sigBytes, sigUnusedBits, params, ...csr } = d;
  csr.signatureValid = sigUnusedBits === 0 && (await verifySignatureAsync(params, csr.infoDer, sigBytes, csr.publicKey));
  if ((opts.requireValidSignature ?? true) && !csr.signatureValid) throw new DomainError('invalid', 'request signature invalid');
  return csr;
}

type Decoded = ParsedCsr & { sigBytes: Buffer; sigUnusedBits: number; params: VerifyParams };

function decode(der: Buffer): ParsedCsr {
  const { sigBytes, sigUnusedBits, params, ...csr } = decodeUnverified(der);
  csr.signatureValid = sigUnusedBits === 0 && verifySignature(params, csr.infoDer, sigBytes, csr.publicKey);
  return csr;
}

function decodeUnverified(der: Buffer): Decoded {
  const top = parseDer(der);
  if (top.tag !== TAG.SEQUENCE) throw invalidCsr('not a SEQUENCE');
  const r = top.children();
  const info = r.expect(TAG.SEQUENCE, 'CertificationRequestInfo');
  const algEl = r.expect(TAG.SEQUENCE, 'signatureAlgorithm');
  const sig = decodeBitString(r.expect(TAG.BIT_STRING, 'signature'));
  r.done('CertificationRequest');

  const ir = info.children();
  const version = decodeSmallInt(ir.expect(TAG.INTEGER, 'version'));
  if (version !== 0) throw invalidCsr(`unsupported version ${version}`);
  const subject = decodeNameElement(ir.expect(TAG.SEQUENCE, 'subject'));
  const spkiEl = ir.expect(TAG.SEQUENCE, 'subjectPKInfo');
  // Some encoders omit the (mandatory) empty attributes set; accept that like most parsers.
  const attrsEl = ir.optional(0xa0);
  ir.done('CertificationRequestInfo');

  const { key: publicKey, description } = parsePublicKey(spkiEl.raw());
  const { extensionsEl, otherAttributes } = readAttributes(attrsEl);
  const extensions = parseExtensions(extensionsEl);
  const params = parseSignatureAlgorithm(algEl);
  return {
    der, infoDer: info.raw(), subject, spkiDer: spkiEl.raw(), publicKey, key: description, extensions, otherAttributes,
    signatureAlgorithm: params.name, signatureValid: false, sigBytes: sig.bytes, sigUnusedBits: sig.unusedBits, params,
  };
}

function readAttributes(attrsEl: DerElement | undefined): { extensionsEl: DerElement | undefined; otherAttributes: { oid: string; values: Buffer[] }[] } {
  let extensionsEl: DerElement | undefined;
  const otherAttributes: { oid: string; values: Buffer[] }[] = [];
  if (!attrsEl) return { extensionsEl, otherAttributes };
  const ar = attrsEl.children();
  while (ar.hasMore()) {
    const a = ar.expect(TAG.SEQUENCE, 'Attribute').children();
    const attrOid = decodeOid(a.expect(TAG.OID, 'attribute type'));
    const values = a.expect(TAG.SET, 'attribute values').children().rest();
    if (attrOid === EXTENSION_REQUEST) {
      if (values.length !== 1 || extensionsEl) throw invalidCsr('malformed extension request');
      extensionsEl = values[0];
    } else otherAttributes.push({ oid: attrOid, values: values.map((v) => v.raw()) });
  }
  return { extensionsEl, otherAttributes };
}

/** Builds and signs a CSR (PKCS#10 v1) for `privateKey`. */
export function buildCsr(opts: {
  subjectDer: Buffer;
  privateKey: KeyObject;
  extensions?: readonly RawExtension[];
  signatureBits?: number;
}): { der: Buffer; pem: string } {
  const exts = opts.extensions ?? [];
  const attrs = exts.length ? [sequence(oid(EXTENSION_REQUEST), setOf(sequence(...exts.map(encodeExtension))))] : [];
  const info = sequence(integer(0), opts.subjectDer, spkiDer(opts.privateKey), implicitConstructed(0, ...attrs));
  const alg = chooseSignatureAlgorithm(describeKey(opts.privateKey), { signatureBits: opts.signatureBits ?? 0 });
  const der = sequence(info, alg.identifier, bitString(alg.sign(info, opts.privateKey)));
  return { der, pem: pemEncode('CERTIFICATE REQUEST', der) };
}
