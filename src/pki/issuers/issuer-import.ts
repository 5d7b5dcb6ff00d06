/**
 * Reading a PEM bundle for import (config/ca, issuers/import/*, intermediate/set-signed):
 * CA certificates and unencrypted private keys in any order; CRLs are ignored.
 * https://developer.hashicorp.com/vault/api-docs/secret/pki#import-ca-certificates-and-keys
 */
import type { KeyObject } from 'node:crypto';
import { createPrivateKey } from 'node:crypto';
import { invalid } from '../../shared/errors.js';
import { isCa, parseCertificate } from '../crypto/cert-parser.js';
import type { ParsedCertificate } from '../crypto/cert-parser.js';
import { describeKey } from '../crypto/keys.js';
import { pemDecodeAll } from '../crypto/pem.js';

export interface ImportBundle {
  certificates: ParsedCertificate[];
  keys: KeyObject[];
}

const KEY_TYPES: Readonly<Record<string, 'pkcs1' | 'sec1' | 'pkcs8'>> = {
  'RSA PRIVATE KEY': 'pkcs1',
  'EC PRIVATE KEY': 'sec1',
  'PRIVATE KEY': 'pkcs8',
};

/** Parses and checks a bundle; throws `invalid` with the reason and never half-parses. */
export function parseImportBundle(text: string, opts: { allowKeys: boolean }): ImportBundle {
  if (text.trim().length < 75) {
    throw invalid(
      'provided data for import was too short; perhaps a path was passed to the API rather than the contents of a file',
    );
  }
  const blocks = pemDecodeAll(text);
  if (blocks.length === 0)
    throw invalid('no PEM blocks found in the provided data; expected PEM-encoded certificates and keys');
  const certificates: ParsedCertificate[] = [];
  const keys: KeyObject[] = [];
  for (const b of blocks) {
    if (b.label === 'CERTIFICATE') {
      const cert = parseCertificate(b.der);
      if (!isCa(cert))
        throw invalid('refusing to import non-CA certificate: the certificate lacks CA:TRUE basic constraints');
      certificates.push(cert);
    } else if (KEY_TYPES[b.label]) {
      if (!opts.allowKeys) throw invalid('private keys found in the PEM bundle but not allowed by this endpoint');
      let key: KeyObject;
      try {
        key = createPrivateKey({ key: b.der, format: 'der', type: KEY_TYPES[b.label]! });
      } catch (err) {
        throw invalid(`error parsing private key: ${(err as Error).message}`);
      }
      describeKey(key);
      keys.push(key);
    } else if (b.label === 'ENCRYPTED PRIVATE KEY') {
      throw invalid('encrypted private keys are not supported; decrypt the key before importing it');
    } else if (b.label === 'X509 CRL') {
      continue;
    } else {
      throw invalid(`unsupported PEM block type in bundle: ${b.label}`);
    }
  }
  if (certificates.length === 0 && keys.length === 0)
    throw invalid('no certificates or keys found in the provided PEM bundle');
  return { certificates, keys };
}
