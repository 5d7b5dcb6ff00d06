/**
 * Builds the certificates and requests of CA generation with the lean codec: a
 * self-signed root, and the CSR of an intermediate (signed elsewhere, then imported).
 */
import type { KeyObject } from 'node:crypto';
import { buildCertificate, selfSignedIssuerContext } from '../crypto/cert-builder.js';
import type { AuthorityUrls, BuiltCertificate } from '../crypto/cert-builder.js';
import { buildCsr } from '../crypto/csr.js';
import { basicConstraintsExt, keyUsageExt, subjectAltNameExt } from '../crypto/extensions.js';
import type { RawExtension } from '../crypto/extensions.js';
import type { GeneralName } from '../crypto/general-names.js';
import { spkiDer } from '../crypto/keys.js';

export interface RootSpec {
  privateKey: KeyObject;
  subjectDer: Buffer;
  subjectAltNames: GeneralName[];
  notBefore: Date;
  notAfter: Date;
  /** -1 = no path length constraint. */
  maxPathLength: number;
  keyUsage: string[];
  permittedDnsDomains: string[];
  urls: AuthorityUrls | undefined;
  signatureBits: number;
  usePss: boolean;
}

export function buildRootCertificate(spec: RootSpec): BuiltCertificate {
  const issuer = selfSignedIssuerContext({ subjectDer: spec.subjectDer, privateKey: spec.privateKey, urls: spec.urls });
  return buildCertificate(issuer, {
    subject: spec.subjectDer,
    spki: spkiDer(spec.privateKey),
    notBefore: spec.notBefore,
    notAfter: spec.notAfter,
    basicConstraints: { ca: true, pathLen: spec.maxPathLength >= 0 ? spec.maxPathLength : undefined },
    keyUsage: spec.keyUsage,
    subjectAltNames: spec.subjectAltNames,
    nameConstraints:
      spec.permittedDnsDomains.length > 0 ? { permittedDnsDomains: spec.permittedDnsDomains } : undefined,
    signatureBits: spec.signatureBits,
    usePss: spec.usePss,
  });
}

export interface CsrSpec {
  privateKey: KeyObject;
  subjectDer: Buffer;
  subjectAltNames: GeneralName[];
  addBasicConstraints: boolean;
  /** Requested key usages; none means no KeyUsage extension in the request. */
  keyUsage: string[];
  signatureBits: number;
}

export function buildIntermediateCsr(spec: CsrSpec): { der: Buffer; pem: string } {
  const exts: RawExtension[] = [];
  const san = subjectAltNameExt(spec.subjectAltNames, spec.subjectDer.equals(Buffer.from([0x30, 0x00])));
  if (san) exts.push(san);
  if (spec.addBasicConstraints) exts.push(basicConstraintsExt(true));
  const ku = spec.keyUsage.length > 0 ? keyUsageExt(spec.keyUsage) : undefined;
  if (ku) exts.push(ku);
  return buildCsr({
    subjectDer: spec.subjectDer,
    privateKey: spec.privateKey,
    extensions: exts,
    signatureBits: spec.signatureBits,
  });
}
