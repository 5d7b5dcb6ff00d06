/**
 * Fast X.509 v3 certificate construction. Everything that depends only on the issuer
 * (its Name DER, authority key identifier, signing key, signature algorithm, AIA and CRL
 * distribution point extensions) is encoded once in an IssuerContext; each certificate
 * then costs a few small Buffer concatenations plus one node:crypto signature.
 */
import type { KeyObject } from 'node:crypto';
import { bitString, explicit, integer, sequence, x509Time } from './der.js';
import {
  EXT,
  authorityInfoAccessExt,
  authorityKeyIdentifierExt,
  basicConstraintsExt,
  certificatePoliciesExt,
  crlDistributionPointsExt,
  encodeExtension,
  extKeyUsageExt,
  extKeyUsageOid,
  keyUsageExt,
  nameConstraintsExt,
  subjectAltNameExt,
  subjectKeyIdentifierExt,
} from './extensions.js';
import type { NameConstraints, PolicyInformation, RawExtension } from './extensions.js';
import type { ParsedCertificate } from './cert-parser.js';
import type { GeneralName } from './general-names.js';
import { describeKey, spkiDer, subjectKeyIdFromSpki } from './keys.js';
import type { KeyDescription } from './key-generation.js';
import { encodeName } from './names.js';
import type { NameInput } from './names.js';
import { pemEncode } from './pem.js';
import { randomSerial, serialToHex } from './serial.js';
import { chooseSignatureAlgorithm } from './signature.js';
import { csrCheckRejection } from './csr.js';
import type { SignatureCheck } from './csr.js';
import { nativeEcdsa } from './native-ecdsa.js';
import type { NativeEcdsa, NativeSigner } from './native-ecdsa.js';
import type { SignatureAlgorithm } from './signature.js';

export interface AuthorityUrls {
  issuingCertificates?: readonly string[];
  ocspServers?: readonly string[];
  crlDistributionPoints?: readonly string[];
  deltaCrlDistributionPoints?: readonly string[];
}

export interface IssuerContext {
  /** The issuer's subject Name, byte for byte as in its certificate. */
  readonly nameDer: Buffer;
  /** The issuer's subject key identifier, used as the AKI of everything it signs. */
  readonly keyId: Buffer;
  readonly privateKey: KeyObject;
  readonly key: KeyDescription;
  /** Pre-encoded AKI, AIA, CRL DP and Freshest CRL extensions. */
  readonly fixedExtensions: {
    aki: Buffer;
    aia: Buffer | undefined;
    crlDp: Buffer | undefined;
    freshest: Buffer | undefined;
  };
  /** Signature algorithm for the given options (memoised). */
  signatureAlgorithm(signatureBits?: number, usePss?: boolean): SignatureAlgorithm;
  /**
   * The private key loaded into the native addon (EC on P-256/384/521), made on first use;
   * null when there is none.
   */
  nativeSigner(): NativeSigner | null;
  /** The native addon this issuer signs with, or null (not built, or switched off by native_crypto). */
  readonly native: NativeEcdsa | null;
}

/**
 * Prepares an issuer once. `nameDer` and `keyId` come from the issuer certificate (its
 * subject and SKI); for a self-signed root pass its own subject and SKI. `native` is the
 * addon to sign with (default: the addon when it was built; null for node:crypto only).
 */
export function createIssuerContext(opts: {
  nameDer: Buffer;
  keyId: Buffer;
  privateKey: KeyObject;
  urls?: AuthorityUrls;
  native?: NativeEcdsa | null;
}): IssuerContext {
  const addon = opts.native === undefined ? nativeEcdsa() : opts.native;
  const key = describeKey(opts.privateKey);
  const urls = opts.urls ?? {};
  const enc = (e: RawExtension | undefined): Buffer | undefined => (e ? encodeExtension(e) : undefined);
  const algs = new Map<string, SignatureAlgorithm>();
  let native: NativeSigner | null | undefined;
  return {
    nameDer: Buffer.from(opts.nameDer),
    keyId: Buffer.from(opts.keyId),
    privateKey: opts.privateKey,
    key,
    fixedExtensions: {
      aki: encodeExtension(authorityKeyIdentifierExt(opts.keyId)),
      aia: enc(authorityInfoAccessExt(urls.ocspServers ?? [], urls.issuingCertificates ?? [])),
      crlDp: enc(crlDistributionPointsExt(urls.crlDistributionPoints ?? [])),
      freshest: enc(crlDistributionPointsExt(urls.deltaCrlDistributionPoints ?? [], EXT.freshestCrl)),
    },
    signatureAlgorithm(signatureBits = 0, usePss = false) {
      const k = `${signatureBits}:${usePss}`;
      let alg = algs.get(k);
      if (!alg) {
        alg = chooseSignatureAlgorithm(key, { signatureBits, usePss });
        algs.set(k, alg);
      }
      return alg;
    },
    nativeSigner() {
      if (native === undefined) native = addon ? loadNativeSigner(addon, opts.privateKey, key) : null;
      return native;
    },
    native: addon,
  };
}

/** An EC issuer key in the addon, or null (no addon, another key type or curve, or a key it refuses). */
function loadNativeSigner(addon: NativeEcdsa, privateKey: KeyObject, key: KeyDescription): NativeSigner | null {
  if (key.type !== 'ec' || !key.curve || !addon.supportsCurve(key.curve)) return null;
  const jwk = privateKey.export({ format: 'jwk' });
  if (typeof jwk.d !== 'string') return null;
  const scalar = Buffer.from(jwk.d, 'base64url');
  try {
    return addon.signer(key.curve, scalar);
  } catch {
    return null;
  } finally {
    scalar.fill(0);
  }
}

/**
 * Context for an issuer certificate: its subject bytes, and its SKI (or, when the
 * certificate has none, the SKI computed from its key) as the AKI of what it signs.
 */
export function issuerContextFromCertificate(
  cert: ParsedCertificate,
  privateKey: KeyObject,
  urls?: AuthorityUrls,
  native?: NativeEcdsa | null,
): IssuerContext {
  const keyId = cert.extensions.subjectKeyId ?? subjectKeyIdFromSpki(cert.spkiDer);
  return createIssuerContext({ nameDer: cert.subject.der, keyId, privateKey, urls, native });
}

/** Context for a self-signed certificate: the subject is its own issuer and the AKI is its own SKI. */
export function selfSignedIssuerContext(opts: {
  subjectDer: Buffer;
  privateKey: KeyObject;
  urls?: AuthorityUrls;
  keyId?: Buffer;
  native?: NativeEcdsa | null;
}): IssuerContext {
  const keyId = opts.keyId ?? subjectKeyIdFromSpki(spkiDer(opts.privateKey));
  const { subjectDer: nameDer, privateKey, urls, native } = opts;
  return createIssuerContext({ nameDer, keyId, privateKey, urls, native });
}

export interface CertificateTemplate {
  /** Serial bytes (unsigned); a new 20-byte serial (`randomSerial`) when omitted. */
  serial?: Buffer;
  /** Subject as raw Name DER (copied verbatim) or attributes. */
  subject: Buffer | readonly NameInput[];
  /** SubjectPublicKeyInfo DER of the certified key. */
  spki: Buffer;
  notBefore: Date;
  notAfter: Date;
  /** Omitted: no Basic Constraints (Vault leaves); `{ca:false}` writes CA:FALSE. */
  basicConstraints?: { ca: boolean; pathLen?: number };
  /**
   * Key usage names (Vault spelling, case-insensitive); empty or omitted: no extension.
   * This list, `extKeyUsage` and `policies` must not change once passed: their encoding is
   * remembered with the array (roles hand in the same arrays for every certificate).
   */
  keyUsage?: readonly string[];
  /** Extended key usages: names (ServerAuth, ...) or dotted OIDs, in order. */
  extKeyUsage?: readonly string[];
  subjectAltNames?: readonly GeneralName[];
  /** Overrides the computed SKI (sign-intermediate `skid`). */
  subjectKeyId?: Buffer;
  policies?: readonly PolicyInformation[];
  nameConstraints?: NameConstraints;
  /**
   * Further extensions, appended in order (e.g. CSR extensions copied on sign-verbatim);
   * one whose OID is already present is skipped, so the fields above take precedence.
   */
  extraExtensions?: readonly RawExtension[];
  /** Replaces the issuer's AIA / CRL DP for this certificate only. */
  urls?: AuthorityUrls;
  signatureBits?: number;
  usePss?: boolean;
}

export interface BuiltCertificate {
  der: Buffer;
  /** PEM with a trailing newline. */
  pem: string;
  serial: Buffer;
  /** Storage-form lowercase hex of the serial. */
  serialHex: string;
  notBefore: Date;
  notAfter: Date;
  signatureAlgorithm: string;
  subjectKeyId: Buffer;
}

/** Certificates carry whole seconds (RFC 5280 4.1.2.5); report the instants actually encoded. */
const wholeSeconds = (d: Date): Date => new Date(Math.floor(d.getTime() / 1000) * 1000);

const V3 = explicit(0, Buffer.from([0x02, 0x01, 0x02]));
const EMPTY_NAME = Buffer.from([0x30, 0x00]);

/** Builds the TBSCertificate, signs it with the issuer key and returns DER and PEM. */
export function buildCertificate(issuer: IssuerContext, t: CertificateTemplate): BuiltCertificate {
  const u = buildUnsigned(issuer, t);
  return assemble(u, u.alg.sign(u.tbs, issuer.privateKey));
}

/**
 * buildCertificate with the signature made on the libuv threadpool (the hot issue/sign
 * path). With `requestCheck` (a CSR's self-signature), nothing is signed unless that check
 * holds; with an EC issuer in the native addon both happen in one threadpool job. A failed
 * check throws what the CSR parser answers for it.
 */
export async function buildCertificateAsync(
  issuer: IssuerContext,
  t: CertificateTemplate,
  requestCheck?: SignatureCheck,
): Promise<BuiltCertificate> {
  const u = buildUnsigned(issuer, t);
  const signer = u.alg.ecdsaHash ? issuer.nativeSigner() : null;
  const addon = signer ? issuer.native : null;
  if (signer && addon && u.alg.ecdsaHash) {
    if (requestCheck?.native) {
      const r = await addon.verifyThenSignAsync(requestCheck.native, signer, u.alg.ecdsaHash, u.tbs);
      if (Buffer.isBuffer(r)) return assemble(u, r);
      if (r !== 'error') throw csrCheckRejection(r);
    }
    if (requestCheck && !(await requestCheck.verifyAsync())) throw csrCheckRejection('invalid');
    const signature = await addon.signAsync(signer, u.alg.ecdsaHash, u.tbs);
    return assemble(u, signature ?? (await u.alg.signAsync(u.tbs, issuer.privateKey)));
  }
  if (requestCheck && !(await requestCheck.verifyAsync())) throw csrCheckRejection('invalid');
  return assemble(u, await u.alg.signAsync(u.tbs, issuer.privateKey));
}

interface Unsigned {
  tbs: Buffer;
  alg: SignatureAlgorithm;
  serial: Buffer;
  notBefore: Date;
  notAfter: Date;
  ski: Buffer;
}

function assemble(u: Unsigned, signature: Buffer): BuiltCertificate {
  const der = sequence(u.tbs, u.alg.identifier, bitString(signature));
  return {
    der,
    pem: pemEncode('CERTIFICATE', der),
    serial: u.serial,
    serialHex: serialToHex(u.serial),
    notBefore: u.notBefore,
    notAfter: u.notAfter,
    signatureAlgorithm: u.alg.name,
    subjectKeyId: u.ski,
  };
}

/** Encoded extensions by the (unchanging) list they were made from: key usages, extended key usages, policies. */
const encodedLists = new WeakMap<object, Buffer | null>();

function buildUnsigned(issuer: IssuerContext, t: CertificateTemplate): Unsigned {
  const serial = t.serial ?? randomSerial();
  const subjectDer = Buffer.isBuffer(t.subject) ? t.subject : encodeName(t.subject as readonly NameInput[]);
  const alg = issuer.signatureAlgorithm(t.signatureBits, t.usePss);
  const ski = t.subjectKeyId ?? subjectKeyIdFromSpki(t.spki);
  const notBefore = wholeSeconds(t.notBefore);
  const notAfter = wholeSeconds(t.notAfter);

  // Extension order follows what Go-based CAs write, so certificates read the same in tools.
  const exts: Buffer[] = [];
  const written = new Set<string>();
  const push = (e: RawExtension | undefined): void => {
    if (!e || written.has(e.oid)) return;
    written.add(e.oid);
    exts.push(encodeExtension(e));
  };
  const pushFixed = (extOid: string, der: Buffer | undefined): void => {
    if (!der) return;
    written.add(extOid);
    exts.push(der);
  };
  // Role-derived lists arrive as the same arrays request after request: their encoding is kept with them.
  const pushMemo = (extOid: string, list: object, make: () => RawExtension | undefined): void => {
    if (written.has(extOid)) return;
    let der = encodedLists.get(list);
    if (der === undefined) {
      const e = make();
      der = e ? encodeExtension(e) : null;
      encodedLists.set(list, der);
    }
    if (der) pushFixed(extOid, der);
  };
  if (t.keyUsage?.length) pushMemo(EXT.keyUsage, t.keyUsage, () => keyUsageExt(t.keyUsage!));
  if (t.extKeyUsage?.length)
    pushMemo(EXT.extKeyUsage, t.extKeyUsage, () => extKeyUsageExt(t.extKeyUsage!.map((n) => extKeyUsageOid(n) ?? n)));
  if (t.basicConstraints) push(basicConstraintsExt(t.basicConstraints.ca, t.basicConstraints.pathLen));
  push(subjectKeyIdentifierExt(ski));
  pushFixed(EXT.authorityKeyIdentifier, issuer.fixedExtensions.aki);
  if (t.urls) push(authorityInfoAccessExt(t.urls.ocspServers ?? [], t.urls.issuingCertificates ?? []));
  else pushFixed(EXT.authorityInfoAccess, issuer.fixedExtensions.aia);
  if (t.subjectAltNames?.length) push(subjectAltNameExt(t.subjectAltNames, subjectDer.equals(EMPTY_NAME)));
  if (t.nameConstraints) push(nameConstraintsExt(t.nameConstraints));
  if (t.urls) {
    push(crlDistributionPointsExt(t.urls.crlDistributionPoints ?? []));
    push(crlDistributionPointsExt(t.urls.deltaCrlDistributionPoints ?? [], EXT.freshestCrl));
  } else {
    pushFixed(EXT.crlDistributionPoints, issuer.fixedExtensions.crlDp);
    pushFixed(EXT.freshestCrl, issuer.fixedExtensions.freshest);
  }
  if (t.policies?.length) pushMemo(EXT.certificatePolicies, t.policies, () => certificatePoliciesExt(t.policies!));
  // Extra extensions never duplicate one already written (RFC 5280 4.2 forbids repeats): first wins.
  for (const e of t.extraExtensions ?? []) push(e);

  const tbs = sequence(
    V3,
    integer(serial),
    alg.identifier,
    issuer.nameDer,
    sequence(x509Time(notBefore), x509Time(notAfter)),
    subjectDer,
    t.spki,
    explicit(3, sequence(...exts)),
  );
  return { tbs, alg, serial, notBefore, notAfter, ski };
}

/** Extensions that re-signing replaces with the new issuer's values. */
const ISSUER_BOUND = new Set<string>([
  EXT.authorityKeyIdentifier,
  EXT.authorityInfoAccess,
  EXT.crlDistributionPoints,
  EXT.freshestCrl,
]);

/**
 * Re-signs an existing certificate under `issuer` (sign-self-issued, reference 4.5): serial,
 * subject, validity, key, SKI and the other extensions are kept; the issuer name, AKI, AIA
 * and CRL distribution points come from the new issuer.
 */
export function resignCertificate(
  issuer: IssuerContext,
  cert: ParsedCertificate,
  opts: { signatureBits?: number; usePss?: boolean } = {},
): BuiltCertificate {
  return buildCertificate(issuer, {
    serial: cert.serial,
    subject: cert.subject.der,
    spki: cert.spkiDer,
    notBefore: cert.notBefore,
    notAfter: cert.notAfter,
    subjectKeyId: cert.extensions.subjectKeyId,
    extraExtensions: cert.extensions.all.filter((e) => !ISSUER_BOUND.has(e.oid)),
    ...opts,
  });
}
