/** Shared setup of the sign-intermediate, sign-self-issued and sign-verbatim end-to-end tests. */
import assert from 'node:assert/strict';
import { X509Certificate, createHash, createPublicKey } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openssl, withTmp } from './pki-issuers-openssl.js';
import type { Vault } from './pki-issue-helpers.js';

/**
 * A CSR made by openssl with any `-addext` extensions: key spec like `EC:P-256`,
 * `RSA:2048`, `ED25519`. Returns the CSR and its key (PEM).
 */
export function csrWith(keySpec: string, subject: string, addext: string[] = []): { csr: string; key: string } {
  return withTmp((dir) => {
    const key = join(dir, 'key.pem');
    const [alg, param] = keySpec.split(':');
    const args = ['genpkey', '-algorithm', alg!, '-out', key];
    if (alg === 'EC') args.push('-pkeyopt', `ec_paramgen_curve:${param}`);
    if (alg === 'RSA') args.push('-pkeyopt', `rsa_keygen_bits:${param}`);
    openssl(args);
    const reqArgs = ['req', '-new', '-key', key, '-subj', subject];
    for (const e of addext) reqArgs.push('-addext', e);
    return { csr: openssl(reqArgs).trim(), key: openssl(['pkey', '-in', key]).trim() };
  });
}

/** The same CSR with one bit of its signature flipped: still well-formed, no longer valid. */
export function tamperedCsr(pem: string): string {
  const der = Buffer.from(pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), 'base64');
  der[der.length - 3]! ^= 0x01;
  const b64 = der.toString('base64').replace(/(.{64})/g, '$1\n');
  return `-----BEGIN CERTIFICATE REQUEST-----\n${b64.trimEnd()}\n-----END CERTIFICATE REQUEST-----`;
}

/**
 * RFC 5280 method-1 key id (SHA-1 of the subjectPublicKey bits) of a PEM CSR or
 * certificate, computed with node:crypto and openssl only, in openssl's `AA:BB:..` form.
 */
export function keyIdOf(pem: string): string {
  const isCsr = pem.includes('CERTIFICATE REQUEST');
  const key = createPublicKey(openssl(isCsr ? ['req', '-noout', '-pubkey'] : ['x509', '-noout', '-pubkey'], pem));
  let bits: Buffer;
  if (key.asymmetricKeyType === 'rsa') bits = key.export({ type: 'pkcs1', format: 'der' });
  else if (key.asymmetricKeyType === 'ec') {
    const jwk = key.export({ format: 'jwk' });
    bits = Buffer.concat([Buffer.from([4]), Buffer.from(jwk.x!, 'base64url'), Buffer.from(jwk.y!, 'base64url')]);
  } else bits = Buffer.from(key.export({ format: 'jwk' }).x!, 'base64url');
  return createHash('sha1')
    .update(bits)
    .digest('hex')
    .toUpperCase()
    .replace(/(..)(?!$)/g, '$1:');
}

/** notBefore / notAfter in Unix seconds, read by Node's own X.509 parser. */
export function validity(pem: string): { notBefore: number; notAfter: number } {
  const c = new X509Certificate(pem);
  return { notBefore: Date.parse(c.validFrom) / 1000, notAfter: Date.parse(c.validTo) / 1000 };
}

let seq = 0;

/** A new mount holding an intermediate whose CSR it made itself, signed through `parentMount`'s sign-intermediate. */
export async function intermediateMount(
  v: Vault,
  parentMount: string,
  signBody: Record<string, unknown> = {},
  opts: { signPath?: string } = {},
): Promise<{ mount: string; certificate: string; issuerId: string; signed: Record<string, unknown> }> {
  const mount = `pki-int${++seq}-${process.pid}`;
  let r = await v('POST', `sys/mounts/${mount}`, { body: { type: 'pki', config: { max_lease_ttl: '87600h' } } });
  assert.equal(r.status, 204, r.text);
  r = await v('POST', `${mount}/intermediate/generate/internal`, {
    body: { common_name: `Intermediate ${mount}`, key_type: 'ec' },
  });
  assert.equal(r.status, 200, r.text);
  const csr = r.json.data.csr as string;
  r = await v('POST', `${parentMount}/${opts.signPath ?? 'root/sign-intermediate'}`, {
    body: { csr, common_name: `Intermediate ${mount}`, ttl: '4000h', ...signBody },
  });
  assert.equal(r.status, 200, r.text);
  const signed = r.json.data as Record<string, unknown>;
  const certificate = signed.certificate as string;
  r = await v('POST', `${mount}/intermediate/set-signed`, { body: { certificate } });
  assert.equal(r.status, 200, r.text);
  const issuerId = (r.json.data.imported_issuers as string[])[0]!;
  r = await v('POST', `${mount}/config/urls`, { body: { issuing_certificates: `http://ca.test/v1/${mount}/ca` } });
  assert.equal(r.status, 200, r.text);
  return { mount, certificate, issuerId, signed };
}

const toPem = (s: string): string =>
  s.includes('BEGIN')
    ? s.split(/(?=-----BEGIN )/)[0]!.trim()
    : `-----BEGIN CERTIFICATE-----\n${s.replace(/(.{64})/g, '$1\n').trimEnd()}\n-----END CERTIFICATE-----`;

/**
 * openssl's verdict on a signed certificate answer (`certificate` and `ca_chain`, new
 * certificate first): the chain must verify up to its last certificate, taken as trusted
 * (`-partial_chain` when that one is not a self-signed root). Any format is accepted.
 */
export function verifySignedAnswer(data: { certificate: string; ca_chain?: string[]; issuing_ca: string }): string {
  const cert = toPem(data.certificate);
  const chain = (data.ca_chain ?? [data.certificate, data.issuing_ca]).map(toPem).filter((p) => p !== cert);
  const anchor = chain[chain.length - 1]!;
  const selfSigned =
    openssl(['x509', '-noout', '-subject', '-nameopt', 'RFC2253'], anchor).replace('subject=', '') ===
    openssl(['x509', '-noout', '-issuer', '-nameopt', 'RFC2253'], anchor).replace('issuer=', '');
  return withTmp((dir) => {
    const file = (n: string, t: string): string => {
      const p = join(dir, n);
      writeFileSync(p, t + '\n');
      return p;
    };
    const args = ['verify', '-x509_strict', '-CAfile', file('ca.pem', anchor)];
    if (!selfSigned) args.push('-partial_chain');
    if (chain.length > 1) args.push('-untrusted', file('untrusted.pem', chain.slice(0, -1).join('\n')));
    return openssl([...args, file('cert.pem', cert)]);
  });
}
