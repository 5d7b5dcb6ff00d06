/**
 * PKCS#10 certification requests (RFC 2986): a parser that keeps the raw subject and
 * SubjectPublicKeyInfo for verbatim copying, self-signature verification, and a builder
 * for the CSRs the engine produces itself (intermediate generation).
 */
import type { KeyObject } from 'node:crypto';
import { DomainError } from '../../shared/errors.js';
import {
  TAG,
  bitString,
  decodeBitString,
  decodeOid,
  decodeSmallInt,
  implicitConstructed,
  integer,
  oid,
  parseDer,
  sequence,
  setOf,
} from './der.js';
import type { DerElement } from './der.js';
import { encodeExtension, parseExtensions } from './extensions.js';
import type { ParsedExtensions, RawExtension } from './extensions.js';
import { describeKey, ecPublicPoint, parsePublicKey, spkiDer } from './keys.js';
import type { KeyDescription } from './key-generation.js';
import { decodeNameElement } from './names.js';
import type { ParsedName } from './names.js';
import { nativeEcdsa } from './native-ecdsa.js';
import type { NativeCheck, NativeEcdsa, NativeVerdict } from './native-ecdsa.js';
import { decodeBase64Strict, isPem, pemDecodeAll, pemEncode } from './pem.js';
import {
  chooseSignatureAlgorithm,
  parseSignatureAlgorithm,
  verifySignature,
  verifySignatureAsync,
} from './signature.js';
import type { VerifyParams } from './signature.js';

const EXTENSION_REQUEST = '1.2.840.113549.1.9.14';

export interface ParsedCsr {
  der: Buffer;
  /** CertificationRequestInfo DER (the signed bytes). */
  infoDer: Buffer;
  subject: ParsedName;
  /** SubjectPublicKeyInfo exactly as in the request. */
  spkiDer: Buffer;
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
    const block = pemDecodeAll(input).find(
      (b) => b.label === 'CERTIFICATE REQUEST' || b.label === 'NEW CERTIFICATE REQUEST',
    );
    if (!block) throw new DomainError('invalid', 'csr contains no data');
    return block.der;
  }
  return decodeBase64Strict(input, 'csr');
}

/**
 * How a CSR is read. `native`: the addon that checks ECDSA self-signatures (default: the
 * addon when it was built; null checks with node:crypto only, as native_crypto = false).
 */
export interface CsrOptions {
  native?: NativeEcdsa | null;
}

const addonOf = (opts: CsrOptions): NativeEcdsa | null => (opts.native === undefined ? nativeEcdsa() : opts.native);

/**
 * Parses a CSR and checks its self-signature. With `requireValidSignature` (the default)
 * a bad signature throws `invalid` with Vault's message `request signature invalid`.
 */
export function parseCsr(
  input: string | Buffer,
  opts: CsrOptions & { requireValidSignature?: boolean } = {},
): ParsedCsr {
  const der = csrDer(input);
  let csr: ParsedCsr;
  try {
    csr = decode(der, addonOf(opts));
  } catch (err) {
    if (err instanceof DomainError && err.message.startsWith('certificate request')) throw err;
    throw invalidCsr((err as Error).message, err);
  }
  if ((opts.requireValidSignature ?? true) && !csr.signatureValid)
    throw new DomainError('invalid', 'request signature invalid');
  return csr;
}

/**
 * parseCsr with the self-signature checked on the libuv threadpool, leaving the event loop
 * free (the hot sign path). Same results and errors as parseCsr.
 */
export async function parseCsrAsync(
  input: string | Buffer,
  opts: CsrOptions & { requireValidSignature?: boolean } = {},
): Promise<ParsedCsr> {
  const der = csrDer(input);
  let d: Decoded;
  try {
    d = decodeUnverified(der, addonOf(opts));
  } catch (err) {
    if (err instanceof DomainError && err.message.startsWith('certificate request')) throw err;
    throw invalidCsr((err as Error).message, err);
  }
  const { check, ...csr } = d;
  csr.signatureValid = await check.verifyAsync();
  if ((opts.requireValidSignature ?? true) && !csr.signatureValid)
    throw new DomainError('invalid', 'request signature invalid');
  return csr;
}

/** The self-signature check of a decoded request, run by the caller either way. */
export interface SignatureCheck {
  verify(): boolean;
  verifyAsync(): Promise<boolean>;
  /**
   * The same check for the native addon, when it can run it: a signer then checks and
   * signs in one threadpool job (buildCertificateAsync); csrCheckRejection is what a failed
   * verdict answers with.
   */
  readonly native?: NativeCheck;
}

/** What a failed self-signature check answers: a bad signature, or a point off its curve (a parse error). */
export function csrCheckRejection(verdict: 'invalid' | 'bad-key'): DomainError {
  return verdict === 'bad-key' ? notOnCurve() : new DomainError('invalid', 'request signature invalid');
}

type Decoded = ParsedCsr & { check: SignatureCheck };

function decode(der: Buffer, addon: NativeEcdsa | null): ParsedCsr {
  const { check, ...csr } = decodeUnverified(der, addon);
  csr.signatureValid = check.verify();
  return csr;
}

/**
 * Parses a CSR without checking its self-signature yet: the caller runs `check` (or hands
 * it to buildCertificateAsync, which runs it before signing) and must not issue anything
 * unless it holds. Parse errors are thrown as by parseCsr.
 */
export function parseCsrDeferred(
  input: string | Buffer,
  opts: CsrOptions = {},
): {
  csr: Omit<ParsedCsr, 'signatureValid'>;
  check: SignatureCheck;
} {
  const der = csrDer(input);
  try {
    const { check, signatureValid: _, ...csr } = decodeUnverified(der, addonOf(opts));
    return { csr, check };
  } catch (err) {
    if (err instanceof DomainError && err.message.startsWith('certificate request')) throw err;
    throw invalidCsr((err as Error).message, err);
  }
}

const notOnCurve = (): DomainError => invalidCsr('error parsing public key: the point is not on the curve');

/**
 * How the self-signature is checked: ECDSA on the NIST curves through the native addon when
 * it is there (no key import), everything else with a node:crypto KeyObject. An EC point
 * that is not on its curve is a parse error either way, as node:crypto's import makes it.
 */
function signatureCheck(
  addon: NativeEcdsa | null,
  spki: Buffer,
  params: VerifyParams,
  data: Buffer,
  sig: { bytes: Buffer; unusedBits: number },
): { key: KeyDescription; check: SignatureCheck } {
  const ec = addon && params.kind === 'ecdsa' && params.hash ? ecPublicPoint(spki) : undefined;
  if (addon && ec && addon.supportsCurve(ec.description.curve)) {
    const native = addon;
    const nativeCheck: NativeCheck = {
      curve: ec.description.curve,
      hash: params.hash!,
      point: ec.point,
      data,
      signature: sig.bytes,
    };
    // The point is checked before anything else: a bad key fails the parse, as on the import path.
    if (sig.unusedBits !== 0) {
      if (native.verify({ ...nativeCheck, signature: Buffer.alloc(0) }) === 'bad-key') throw notOnCurve();
      return { key: ec.description, check: { verify: () => false, verifyAsync: async () => false } };
    }
    const outcome = (v: NativeVerdict, fallback: () => boolean): boolean => {
      if (v === 'bad-key') throw notOnCurve();
      return v === 'error' ? fallback() : v === 'valid';
    };
    const viaKeyObject = (): boolean => verifySignature(params, data, sig.bytes, parsePublicKey(spki).key);
    return {
      key: ec.description,
      check: {
        verify: () => outcome(native.verify(nativeCheck), viaKeyObject),
        verifyAsync: async () => outcome(await native.verifyAsync(nativeCheck), viaKeyObject),
        native: nativeCheck,
      },
    };
  }
  const { key: publicKey, description } = parsePublicKey(spki);
  return {
    key: description,
    check: {
      verify: () => sig.unusedBits === 0 && verifySignature(params, data, sig.bytes, publicKey),
      verifyAsync: async () => sig.unusedBits === 0 && (await verifySignatureAsync(params, data, sig.bytes, publicKey)),
    },
  };
}

function decodeUnverified(der: Buffer, addon: NativeEcdsa | null): Decoded {
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

  const infoDer = info.raw();
  const spki = spkiEl.raw();
  let params: VerifyParams;
  try {
    params = parseSignatureAlgorithm(algEl);
  } catch (err) {
    // An unsupported key is the error to report, as when the key was read first.
    parsePublicKey(spki);
    throw err;
  }
  const { key, check } = signatureCheck(addon, spki, params, infoDer, sig);
  const { extensionsEl, otherAttributes } = readAttributes(attrsEl);
  const extensions = parseExtensions(extensionsEl);
  return {
    der,
    infoDer,
    subject,
    spkiDer: spki,
    key,
    extensions,
    otherAttributes,
    signatureAlgorithm: params.name,
    signatureValid: false,
    check,
  };
}

function readAttributes(attrsEl: DerElement | undefined): {
  extensionsEl: DerElement | undefined;
  otherAttributes: { oid: string; values: Buffer[] }[];
} {
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
