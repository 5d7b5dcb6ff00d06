/** TLS material made by openssl for the external-policy tests, and a Vault client that trusts it. */
import { request as httpsRequest } from 'node:https';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openssl } from './pki-issuers-openssl.js';
import type { VaultCallOptions, VaultReply } from './vault-http.js';

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
}

/** A throwaway EC CA made by openssl, issuing server and client certificates for 127.0.0.1. */
export function opensslTestCa(cn: string): TestCa {
  const dir = mkdtempSync(join(tmpdir(), 'ext-policy-ca-'));
  const caKey = join(dir, 'ca.key');
  const caCert = join(dir, 'ca.pem');
  openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', caKey]);
  openssl(['req', '-new', '-x509', '-key', caKey, '-subj', `/CN=${cn}`, '-days', '2', '-out', caCert,
    '-addext', 'basicConstraints=critical,CA:true', '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
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
      writeFileSync(ext, `subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=${opts.client ? 'clientAuth' : 'serverAuth'}\nkeyUsage=critical,digitalSignature\n`);
      openssl(['x509', '-req', '-in', csrFile, '-CA', caCert, '-CAkey', caKey, '-CAcreateserial', '-days', '1', '-extfile', ext, '-out', certFile, '-sha256']);
      return { certPem: openssl(['x509', '-in', certFile]).trim(), keyPem: openssl(['pkey', '-in', keyFile]).trim(), certFile, keyFile };
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
