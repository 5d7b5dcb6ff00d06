/**
 * TLS material made by openssl for the external-policy tests, a Vault client that trusts it,
 * and a policy service whose answers each test scripts.
 */
import assert from 'node:assert/strict';
import { createServer, request as httpsRequest } from 'node:https';
import type { Server } from 'node:https';
import { mkdtempSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openssl } from './pki-issuers-openssl.js';
import type { Vault } from './pki-issue-helpers.js';
import type { VaultCallOptions, VaultReply } from './vault-http.js';

type Body = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export interface Issued {
  certPem: string;
  keyPem: string;
  certFile: string;
  keyFile: string;
}

export interface TestCa {
  dir: string;
  certPem: string;
  certFile: string;
  /** A certificate for 127.0.0.1 / localhost (server or client use). */
  issue(name: string, opts?: { client?: boolean }): Issued;
  /**
   * A certificate for the CSR's key, as a policy service would template it: a CA when
   * `ca`, else a leaf for `name` (subject CN and DNS SAN).
   */
  signCsr(csrPem: string, opts?: { ca?: boolean; name?: string }): string;
}

/** A throwaway EC CA made by openssl, issuing server and client certificates for 127.0.0.1. */
export function opensslTestCa(cn: string): TestCa {
  const dir = mkdtempSync(join(tmpdir(), 'ext-policy-ca-'));
  let templates = 0;
  const caKey = join(dir, 'ca.key');
  const caCert = join(dir, 'ca.pem');
  openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', caKey]);
  openssl([
    'req',
    '-new',
    '-x509',
    '-key',
    caKey,
    '-subj',
    `/CN=${cn}`,
    '-days',
    '2',
    '-out',
    caCert,
    '-addext',
    'basicConstraints=critical,CA:true',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  const certPem = openssl(['x509', '-in', caCert]).trim();
  return {
    dir,
    certPem,
    certFile: caCert,
    issue(name, opts = {}) {
      const keyFile = join(dir, `${name}.key`);
      const csrFile = join(dir, `${name}.csr`);
      const certFile = join(dir, `${name}.pem`);
      const ext = join(dir, `${name}.ext`);
      openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', keyFile]);
      openssl(['req', '-new', '-key', keyFile, '-subj', `/CN=${name}`, '-out', csrFile]);
      writeFileSync(
        ext,
        `subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=${opts.client ? 'clientAuth' : 'serverAuth'}\n` +
          'keyUsage=critical,digitalSignature\n',
      );
      openssl([
        'x509',
        '-req',
        '-in',
        csrFile,
        '-CA',
        caCert,
        '-CAkey',
        caKey,
        '-CAcreateserial',
        '-days',
        '1',
        '-extfile',
        ext,
        '-out',
        certFile,
        '-sha256',
      ]);
      return {
        certPem: openssl(['x509', '-in', certFile]).trim(),
        keyPem: openssl(['pkey', '-in', keyFile]).trim(),
        certFile,
        keyFile,
      };
    },
    signCsr(csrPem, opts = {}) {
      const name = opts.name ?? 'template.example.com';
      const ext = join(dir, `template-${++templates}.ext`);
      writeFileSync(
        ext,
        opts.ca
          ? 'basicConstraints=critical,CA:true\nkeyUsage=critical,keyCertSign,cRLSign\nsubjectKeyIdentifier=hash\n'
          : 'basicConstraints=critical,CA:false\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n' +
              `subjectAltName=DNS:${name}\nsubjectKeyIdentifier=hash\n`,
      );
      return openssl(
        [
          'x509',
          '-req',
          '-CA',
          caCert,
          '-CAkey',
          caKey,
          '-set_serial',
          String(templates),
          '-days',
          '1',
          '-subj',
          `/CN=${name}`,
          '-extfile',
          ext,
          '-sha256',
        ],
        csrPem,
      ).trim();
    },
  };
}

/** Vault-style calls over HTTPS, trusting `caPem` (fetch cannot be given a CA in Node 20). */
export function httpsVaultClient(baseUrl: string, caPem: string, defaultToken: string) {
  return (method: string, path: string, opts: VaultCallOptions = {}): Promise<VaultReply> => {
    const token = 'token' in opts ? opts.token : defaultToken;
    const headers: Record<string, string> = { ...opts.headers };
    if (token !== undefined) headers['x-vault-token'] = token;
    const body = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    if (body !== undefined) headers['content-type'] ??= 'application/json';
    const u = new URL(`${baseUrl}/v1/${path.replace(/^\/+/, '')}`);
    const m = method === 'LIST' ? 'GET' : method;
    if (method === 'LIST') u.searchParams.set('list', 'true');
    return new Promise((resolve, reject) => {
      const req = httpsRequest(u, { method: m, headers, ca: caPem }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = text === '' ? undefined : JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, contentType: String(res.headers['content-type'] ?? ''), text, json });
        });
      });
      req.on('error', reject);
      req.end(body);
    });
  };
}

/** One answer of a scripted policy service: JSON (or raw `text`) with a status, optionally late. */
export interface PolicyReply {
  status?: number;
  json?: unknown;
  text?: string;
  headers?: Record<string, string>;
  delayMs?: number;
}

/** Decides the reply to one request body (`{}` when the body was not JSON). */
export type PolicyResponder = (request: Body) => PolicyReply;

export interface ScriptedPolicyService {
  server: Server;
  url: string;
  respond(fn: PolicyResponder): void;
  hits(): number;
  /** The body of the last request received. */
  last(): Body;
  close(): Promise<void>;
}

/** An HTTPS policy service on 127.0.0.1 answering whatever the current responder says. */
export async function startScriptedPolicyService(
  tls: Issued,
  initial: PolicyResponder,
): Promise<ScriptedPolicyService> {
  let responder = initial;
  let hits = 0;
  let last: Body = {};
  const server = createServer({ cert: tls.certPem, key: tls.keyPem }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      hits++;
      let request: Body;
      try {
        request = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Body;
      } catch {
        request = {};
      }
      last = request;
      const r = responder(request);
      const send = () => {
        res.writeHead(r.status ?? 200, { 'content-type': 'application/json', ...r.headers });
        res.end(r.text ?? JSON.stringify(r.json));
      };
      if (r.delayMs) setTimeout(send, r.delayMs).unref();
      else send();
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', () => done()));
  return {
    server,
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}/cieps`,
    respond(fn) {
      responder = fn;
    },
    hits: () => hits,
    last: () => last,
    async close() {
      server.closeAllConnections();
      await new Promise((done) => server.close(done));
    },
  };
}

/** Adds another internal EC root to a mount; returns its PEM and id. */
export async function addRoot(v: Vault, mount: string, name: string): Promise<{ pem: string; id: string }> {
  const r = await v('POST', `${mount}/issuers/generate/root/internal`, {
    body: { common_name: `${name} ${mount}`, key_type: 'ec', issuer_name: name, ttl: '8760h' },
  });
  assert.equal(r.status, 200, r.text);
  return { pem: r.json.data.certificate, id: r.json.data.issuer_id };
}
