/**
 * Shared set-up of the lego and certbot tests: the server under TLS with a test CA the
 * clients are told to trust, asynchronous runs of the clients (the server runs in this
 * process), and the checks made after each step with openssl: chain, CRL and OCSP.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { describeWithServer } from '../support/test-server.js';
import type { TestServer } from '../support/test-server.js';
import type { DatabaseKind } from '../../src/db/database.js';
import { after, before } from 'node:test';
import { acmeMount, startDnsServer, tmpDir } from '../support/acme-fixtures.js';
import type { TestDns } from '../support/acme-fixtures.js';
import { httpsVaultClient, opensslTestCa } from './pki-external-policy-helpers.js';
import type { TestCa } from './pki-external-policy-helpers.js';
import { openssl, verifyChain } from './pki-issuers-openssl.js';
import { opensslSerial, verifiedCrl } from './pki-revocation-helpers.js';

/** The client must be installed; in CI (CI=true) its absence fails the test instead of skipping it. */
export function requireTool(name: string): boolean {
  const found = spawnSync('which', [name]).status === 0;
  if (!found && process.env.CI === 'true') throw new Error(`${name} is not installed (apt-get install ${name})`);
  return found;
}

/** The server on HTTPS with a certificate from a test CA written to `caFile`. */
export interface TlsAcmeServer {
  server: TestServer;
  caFile: string;
  caPem: string;
  v: ReturnType<typeof httpsVaultClient>;
  dir: string;
}

/** What a client suite's tests read: the TLS server and the DNS server. */
export interface ClientSuite {
  t: TlsAcmeServer;
  dns: TestDns;
}

/**
 * The set-up the client suites share, one suite per database kind: the server on HTTPS (its
 * test CA made when the suite starts) and a DNS server, started before the suite's tests and
 * stopped after them; `body` reads them through `suite`.
 */
export function describeWithClients(
  title: string,
  skip: string | false,
  body: (suite: ClientSuite, kind: DatabaseKind) => void,
): void {
  describeWithServer(title, { skip }, (server, kind) => {
    const suite = {} as ClientSuite;
    let ca: TestCa;
    before(async () => {
      const v = httpsVaultClient(server.url, ca.certPem, server.rootToken);
      suite.t = { server, caFile: ca.certFile, caPem: ca.certPem, v, dir: tmpDir('acme-clients-') };
      suite.dns = await startDnsServer();
    });
    after(async () => suite.dns.close());
    body(suite, kind);
    return () => {
      ca = opensslTestCa('ACME client test CA');
      const tls = ca.issue('strongroom-acme');
      return { config: { tlsCertFile: tls.certFile, tlsKeyFile: tls.keyFile } };
    };
  });
}

export async function clientMount(t: TlsAcmeServer, acme: Record<string, unknown>) {
  return acmeMount(t.v, t.server.url, { acme });
}

/** Runs a command without blocking the event loop (the server under test shares it). */
export function run(
  cmd: string,
  args: string[],
  env: Record<string, string> = {},
  timeoutMs = 180_000,
): Promise<{ code: number; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, out });
    });
  });
}

/** POST (or GET) over HTTPS trusting the test CA; the raw answer. */
function httpsRaw(url: string, caPem: string, body?: Buffer, contentType?: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      url,
      {
        method: body ? 'POST' : 'GET',
        ca: caPem,
        headers: body ? { 'content-type': contentType ?? 'application/octet-stream' } : {},
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve(Buffer.concat(chunks)));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** openssl verifies the leaf up to the mount's root, with the rest of the served chain as untrusted. */
export function checkChain(fullChainPem: string, rootPem: string, name: string): X509Certificate {
  const pems = fullChainPem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  assert.ok(pems.length >= 1, fullChainPem);
  const leaf = new X509Certificate(pems[0]!);
  assert.match(leaf.subjectAltName ?? '', new RegExp(`DNS:${name.replace(/[.*]/g, '\\$&')}`));
  const verdict = verifyChain(pems[0]!, [rootPem], pems.slice(1));
  assert.match(verdict, /OK/);
  return leaf;
}

/** The mount's CRL (verified by openssl) lists the certificate, and its OCSP responder says revoked. */
export async function checkRevoked(t: TlsAcmeServer, mount: string, rootPem: string, leaf: X509Certificate) {
  const base = `${t.server.url}/v1/${mount}`;
  const r = await t.v('GET', `${mount}/crl/rotate`);
  assert.equal(r.status, 200, r.text);
  const crl = verifiedCrl(await httpsRaw(`${base}/crl`, t.caPem), rootPem);
  assert.ok(crl.serials.includes(opensslSerial(leaf.serialNumber)), crl.text);
  const dir = tmpDir('acme-ocsp-');
  const root = join(dir, 'root.pem');
  const cert = join(dir, 'leaf.pem');
  writeFileSync(root, rootPem.trimEnd() + '\n');
  writeFileSync(cert, leaf.toString());
  openssl(['ocsp', '-issuer', root, '-cert', cert, '-no_nonce', '-reqout', join(dir, 'req.der')]);
  const answer = await httpsRaw(
    `${base}/ocsp`,
    t.caPem,
    readFileSync(join(dir, 'req.der')),
    'application/ocsp-request',
  );
  writeFileSync(join(dir, 'resp.der'), answer);
  const text = openssl([
    'ocsp',
    '-respin',
    join(dir, 'resp.der'),
    '-issuer',
    root,
    '-cert',
    cert,
    '-VAfile',
    root,
    '-resp_text',
  ]);
  assert.match(text, /leaf\.pem: revoked/, text);
}

export type { X509Certificate };
