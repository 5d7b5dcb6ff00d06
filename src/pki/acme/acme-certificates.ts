/**
 * What the ACME server reads from certificates: the serial and key of one sent for
 * revocation, and the RFC 9773 certificate identifier (renewal information, `replaces`).
 */
import { isDomainError } from '../../shared/errors.js';
import { parseCertificate } from '../crypto/cert-parser.js';
import { acmeError } from './acme.js';

export interface CertificateFacts {
  /** Storage-form serial. */
  serial: string;
  /** SubjectPublicKeyInfo DER. */
  publicKey: Buffer;
  notBefore: Date;
  notAfter: Date;
}

/** The first certificate of DER or PEM (a chain's leaf); malformed when it does not parse. */
export function certificateSerialAndKey(input: Buffer | string): CertificateFacts {
  try {
    const c = parseCertificate(input);
    return { serial: c.serialHex, publicKey: c.spkiDer, notBefore: c.notBefore, notAfter: c.notAfter };
  } catch (err) {
    if (isDomainError(err)) throw acmeError('malformed', `the certificate does not parse: ${err.message}`);
    throw err;
  }
}

/**
 * RFC 9773 section 4.1: base64url(keyIdentifier of the Authority Key Identifier) "."
 * base64url(the serial's DER INTEGER contents).
 */
export function certificateIdOf(input: Buffer | string): string {
  const c = parseCertificate(input);
  const aki = c.extensions.authorityKeyId ?? Buffer.alloc(0);
  const serial = (c.serial[0] ?? 0) & 0x80 ? Buffer.concat([Buffer.from([0]), c.serial]) : c.serial;
  return `${aki.toString('base64url')}.${serial.toString('base64url')}`;
}
