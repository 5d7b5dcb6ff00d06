/**
 * Challenge validation: the server's only outbound connections for ACME. http-01 and
 * dns-01 (RFC 8555 section 8.3 and 8.4), tls-alpn-01 (RFC 8737), for DNS names and IP
 * addresses (RFC 8738). Every lookup goes through config/acme `dns_resolver` when set.
 */
import { createHash, X509Certificate } from 'node:crypto';
import { Resolver } from 'node:dns/promises';
import { request } from 'node:http';
import { isIP } from 'node:net';
import { connect } from 'node:tls';
import { AcmeError, acmeError } from './acme.js';
import type { ChallengeType, Identifier } from './acme.js';

/** What a validation needs to know. */
export interface ValidationTarget {
  type: ChallengeType;
  identifier: Identifier;
  token: string;
  keyAuthorization: string;
  /** host:port of the resolver; '' uses the system's. */
  dnsResolver: string;
  timeoutMs: number;
}

export type Validate = (t: ValidationTarget) => Promise<void>;

/** The id-pe-acmeIdentifier extension of RFC 8737 section 6.1. */
const ACME_IDENTIFIER_OID = '1.3.6.1.5.5.7.1.31';
const MAX_BODY = 16 * 1024;

/** Validates one challenge; throws AcmeError (connection, dns, incorrectResponse, tls, unauthorized) when it fails. */
export async function validateChallenge(t: ValidationTarget): Promise<void> {
  switch (t.type) {
    case 'http-01':
      return validateHttp01(t);
    case 'dns-01':
      return validateDns01(t);
    case 'tls-alpn-01':
      return validateTlsAlpn01(t);
  }
}

/** Resolvers by server and timeout: making one sets up a c-ares channel, which is not free per validation. */
const resolvers = new Map<string, Resolver>();

function resolver(t: ValidationTarget): Resolver {
  const timeout = Math.min(t.timeoutMs, 5000);
  const key = `${t.dnsResolver}\n${timeout}`;
  let r = resolvers.get(key);
  if (!r) {
    r = new Resolver({ timeout, tries: 2 });
    if (t.dnsResolver !== '') r.setServers([t.dnsResolver]);
    if (resolvers.size >= 64) resolvers.delete(resolvers.keys().next().value!);
    resolvers.set(key, r);
  }
  return r;
}

/** The address to connect to: the IP itself, or the first A (then AAAA) record of the name. */
async function addressOf(t: ValidationTarget): Promise<string> {
  if (t.identifier.type === 'ip') return t.identifier.value;
  const r = resolver(t);
  const name = t.identifier.value;
  const v4 = await r.resolve4(name).catch((err: NodeJS.ErrnoException) => dnsFailure(name, err));
  if (v4.length > 0) return v4[0]!;
  const v6 = await r.resolve6(name).catch((err: NodeJS.ErrnoException) => dnsFailure(name, err));
  if (v6.length > 0) return v6[0]!;
  throw acmeError('dns', `no A or AAAA record for ${name}`);
}

function dnsFailure(name: string, err: NodeJS.ErrnoException): string[] {
  if (err.code === 'ENODATA' || err.code === 'ENOTFOUND') return [];
  throw acmeError('dns', `DNS lookup of ${name} failed: ${err.code ?? err.message}`);
}

async function validateHttp01(t: ValidationTarget): Promise<void> {
  const address = await addressOf(t);
  const host =
    t.identifier.type === 'ip' && isIP(t.identifier.value) === 6 ? `[${t.identifier.value}]` : t.identifier.value;
  const body = await new Promise<string>((resolve, reject) => {
    const req = request(
      {
        host: address,
        port: 80,
        path: `/.well-known/acme-challenge/${t.token}`,
        headers: { host, 'user-agent': 'strongroom-acme-validator', accept: '*/*' },
        timeout: t.timeoutMs,
        agent: false,
      },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          reject(
            acmeError('unauthorized', `http://${host}/.well-known/acme-challenge/… answered HTTP ${res.statusCode}`),
          );
          return;
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > MAX_BODY) {
            req.destroy();
            reject(acmeError('unauthorized', 'the challenge response is too large'));
          } else chunks.push(c);
        });
        res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(acmeError('connection', `timed out connecting to ${address}:80`)));
    req.on('error', (err) =>
      reject(
        err instanceof AcmeError ? err : acmeError('connection', `cannot fetch from ${address}:80: ${err.message}`),
      ),
    );
    req.end();
  });
  // RFC 8555 section 8.3: trailing white space is ignored.
  if (body.replace(/[\s]+$/, '') !== t.keyAuthorization)
    throw acmeError('incorrectResponse', 'the key authorization served does not match');
}

async function validateDns01(t: ValidationTarget): Promise<void> {
  const base = t.identifier.value.replace(/^\*\./, '');
  const name = `_acme-challenge.${base}`;
  const records = await resolver(t)
    .resolveTxt(name)
    .catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENODATA' || err.code === 'ENOTFOUND') return [] as string[][];
      throw acmeError('dns', `DNS lookup of ${name} failed: ${err.code ?? err.message}`);
    });
  const want = createHash('sha256').update(t.keyAuthorization).digest('base64url');
  if (!records.some((chunks) => chunks.join('') === want))
    throw acmeError('unauthorized', `no TXT record of ${name} carries the key authorization digest`);
}

/** RFC 8738 section 6: an IP address is named in SNI by its reverse-DNS name. */
function reverseName(ip: string): string {
  if (isIP(ip) === 4) return `${ip.split('.').reverse().join('.')}.in-addr.arpa`;
  const full = new URL(`http://[${ip}]/`).hostname.slice(1, -1);
  const groups = full.split(':');
  const gap = groups.indexOf('');
  const expanded =
    gap < 0 ? groups : [...groups.slice(0, gap), ...Array(9 - groups.length).fill('0'), ...groups.slice(gap + 1)];
  const nibbles = expanded
    .filter((g) => g !== '')
    .map((g) => g.padStart(4, '0'))
    .join('');
  return `${[...nibbles].reverse().join('.')}.ip6.arpa`;
}

async function validateTlsAlpn01(t: ValidationTarget): Promise<void> {
  const address = await addressOf(t);
  const servername = t.identifier.type === 'ip' ? reverseName(t.identifier.value) : t.identifier.value;
  const der = await new Promise<Buffer>((resolve, reject) => {
    const socket = connect({
      host: address,
      port: 443,
      servername,
      ALPNProtocols: ['acme-tls/1'],
      rejectUnauthorized: false,
      timeout: t.timeoutMs,
    });
    socket.once('secureConnect', () => {
      const proto = socket.alpnProtocol;
      const cert = socket.getPeerCertificate();
      socket.destroy();
      if (proto !== 'acme-tls/1') reject(acmeError('tls', 'the server did not negotiate the acme-tls/1 protocol'));
      else if (!cert?.raw) reject(acmeError('tls', 'the server sent no certificate'));
      else resolve(cert.raw);
    });
    socket.once('timeout', () => socket.destroy(acmeError('connection', `timed out connecting to ${address}:443`)));
    socket.once('error', (err) =>
      reject(
        err instanceof AcmeError ? err : acmeError('tls', `TLS connection to ${address}:443 failed: ${err.message}`),
      ),
    );
  });
  checkAlpnCertificate(der, t);
}

/** The certificate must name only the identifier and carry a critical acmeIdentifier with the digest. */
function checkAlpnCertificate(der: Buffer, t: ValidationTarget): void {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(der);
  } catch {
    throw acmeError('tls', 'the challenge certificate does not parse');
  }
  const sans = (cert.subjectAltName ?? '').split(', ').filter((s) => s !== '');
  const expected = t.identifier.type === 'ip' ? `IP Address:${t.identifier.value}` : `DNS:${t.identifier.value}`;
  if (sans.length !== 1 || sans[0]!.toLowerCase() !== expected.toLowerCase())
    throw acmeError('unauthorized', `the challenge certificate must name exactly ${t.identifier.value}`);
  const ext = findExtension(der, ACME_IDENTIFIER_OID);
  if (!ext) throw acmeError('unauthorized', 'the challenge certificate lacks the acmeIdentifier extension');
  if (!ext.critical) throw acmeError('unauthorized', 'the acmeIdentifier extension must be critical');
  const want = createHash('sha256').update(t.keyAuthorization).digest();
  const expectedValue = Buffer.concat([Buffer.from([0x04, 0x20]), want]);
  if (!ext.value.equals(expectedValue))
    throw acmeError('unauthorized', 'the acmeIdentifier extension does not carry the key authorization digest');
}

/**
 * Finds an extension by OID in a certificate's DER (a byte search for the encoded OID, then
 * the Extension SEQUENCE around it): X509Certificate does not expose unknown extensions.
 */
function findExtension(der: Buffer, oid: string): { critical: boolean; value: Buffer } | undefined {
  const parts = oid.split('.').map(Number);
  const body: number[] = [40 * parts[0]! + parts[1]!];
  for (const p of parts.slice(2)) {
    const bytes = [p & 0x7f];
    for (let v = p >> 7; v > 0; v >>= 7) bytes.unshift((v & 0x7f) | 0x80);
    body.push(...bytes);
  }
  const needle = Buffer.from([0x06, body.length, ...body]);
  const at = der.indexOf(needle);
  if (at < 0) return undefined;
  let o = at + needle.length;
  let critical = false;
  if (der[o] === 0x01 && der[o + 1] === 0x01) {
    critical = der[o + 2] !== 0;
    o += 3;
  }
  if (der[o] !== 0x04) return undefined;
  const len = der[o + 1]!;
  if (len & 0x80) return undefined;
  return { critical, value: der.subarray(o + 2, o + 2 + len) };
}
