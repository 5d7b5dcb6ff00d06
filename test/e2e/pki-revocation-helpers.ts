/** CRL checks for the revocation end-to-end tests: openssl verifies and prints what the server serves. */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openssl, withTmp } from './pki-issuers-openssl.js';
import type { Vault } from './pki-issue-helpers.js';

/** GET without a token; the raw bytes and content type. */
export async function fetchRaw(
  baseUrl: string,
  path: string,
): Promise<{ status: number; contentType: string; body: Buffer }> {
  const res = await fetch(`${baseUrl}/v1/${path}`);
  return {
    status: res.status,
    contentType: res.headers.get('content-type') ?? '',
    body: Buffer.from(await res.arrayBuffer()),
  };
}

export interface CrlFacts {
  text: string;
  /** Upper-case hex without separators, as openssl prints them. */
  serials: string[];
  crlNumber: number;
  deltaBase: number | undefined;
  lastUpdate: Date;
  nextUpdate: Date;
}

/** `openssl crl -verify -CAfile` (throws unless the signature verifies) and `-text`, parsed. */
export function verifiedCrl(crl: Buffer | string, caPem: string): CrlFacts {
  const inform = typeof crl === 'string' ? 'PEM' : 'DER';
  return withTmp((dir) => {
    const ca = join(dir, 'ca.pem');
    const file = join(dir, 'crl');
    writeFileSync(ca, caPem.trimEnd() + '\n');
    writeFileSync(file, crl);
    const verify = openssl(['crl', '-inform', inform, '-in', file, '-noout', '-verify', '-CAfile', ca]).trim();
    // openssl prints the verdict on stderr in some versions; a failure always exits non-zero.
    assert.ok(verify === '' || /verify OK/.test(verify), verify);
    const text = openssl(['crl', '-inform', inform, '-in', file, '-noout', '-text']);
    const num = /X509v3 CRL Number:\s*\n\s*(\d+)/.exec(text);
    const delta = /X509v3 Delta CRL Indicator: critical\s*\n\s*(\d+)/.exec(text);
    const last = /Last Update: (.+)/.exec(text);
    const next = /Next Update: (.+)/.exec(text);
    return {
      text,
      serials: [...text.matchAll(/Serial Number: ([0-9A-F]+)/g)].map((m) => m[1]!),
      crlNumber: num ? Number(num[1]) : -1,
      deltaBase: delta ? Number(delta[1]) : undefined,
      lastUpdate: new Date(last![1]!),
      nextUpdate: new Date(next![1]!),
    };
  });
}

/** openssl's spelling of a colon serial: upper case, no separators, leading zero bytes kept as printed. */
export const opensslSerial = (colon: string): string =>
  colon
    .replace(/:/g, '')
    .toUpperCase()
    .replace(/^(00)+(?=.)/, '');

/** The default issuer's complete CRL, fetched raw and verified. */
export async function defaultCrl(baseUrl: string, mount: string, caPem: string, path = 'crl'): Promise<CrlFacts> {
  const r = await fetchRaw(baseUrl, `${mount}/${path}`);
  assert.equal(r.status, 200, `${path}: ${r.body.toString()}`);
  return verifiedCrl(path.endsWith('pem') ? r.body.toString('utf8') : r.body, caPem);
}

/** Issues a certificate under `role` and returns its serial, PEM and key. */
export async function issue(
  v: Vault,
  mount: string,
  role: string,
  cn: string,
): Promise<{ serial: string; certificate: string; privateKey: string }> {
  const r = await v('POST', `${mount}/issue/${role}`, { body: { common_name: cn } });
  assert.equal(r.status, 200, r.text);
  return {
    serial: r.json.data.serial_number,
    certificate: r.json.data.certificate,
    privateKey: r.json.data.private_key,
  };
}
