/**
 * What the ACME tests run beside the server: a DNS server (A records mapping test host
 * names to loopback addresses, TXT records for dns-01 written as files so that lego's
 * `exec` provider can set them), an http-01 responder, a tls-alpn-01 responder, and a
 * mount with ACME configured.
 */
import assert from 'node:assert/strict';
import { createHash, generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { createServer as createTlsServer } from 'node:tls';
import type { Server as TlsServer } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { startDnsServer as startDns } from '../../bench/lib/dns-server.js';
import type { vaultClient } from '../e2e/vault-http.js';

type Vault = ReturnType<typeof vaultClient>;

/**
 * A loopback address of its own for each test that binds ports 80/443, so test files (and
 * their SQLite and PostgreSQL runs) never fight over them: 127.<file>.<db>.<n>.
 */
export function loopbackFor(fileTag: number, kind: string, n: number): string {
  return `127.${fileTag}.${kind === 'postgres' ? 2 : 1}.${n}`;
}

export interface TestDns {
  /** host:port, for config/acme dns_resolver and lego's --dns.resolvers. */
  address: string;
  /** Where TXT records live: one file per name (no trailing dot), one value per line. */
  txtDir: string;
  mapHost(name: string, ip: string): void;
  setTxt(name: string, values: string[]): void;
  close(): Promise<void>;
}

export async function startDnsServer(): Promise<TestDns> {
  const hosts = new Map<string, string>();
  const txtDir = mkdtempSync(join(tmpdir(), 'acme-dns-'));
  const server = await startDns((name, type) => {
    const file = join(txtDir, name);
    const txt = existsSync(file);
    // Names we know nothing of do not exist, so clients stop looking; _acme-challenge names always do.
    if (!hosts.has(name) && !txt && !name.startsWith('_acme-challenge.')) return undefined;
    if (type === 'A' && hosts.has(name)) return [{ type: 'A', data: hosts.get(name)! }];
    if (type === 'TXT' && txt)
      return readFileSync(file, 'utf8')
        .split('\n')
        .filter((l) => l !== '')
        .map((data) => ({ type: 'TXT' as const, data }));
    return [];
  });
  return {
    address: server.address,
    txtDir,
    mapHost: (name, ip) => hosts.set(name.toLowerCase(), ip),
    setTxt: (name, values) => writeFileSync(join(txtDir, name.toLowerCase()), values.join('\n') + '\n'),
    close: async () => {
      await server.close();
      rmSync(txtDir, { recursive: true, force: true });
    },
  };
}

/**
 * The script lego's `exec` DNS provider runs: `present|cleanup <fqdn> <value>`; it writes
 * (or removes) the TXT value in the test DNS server's directory.
 */
export function legoExecScript(dns: TestDns, dir: string): string {
  const path = join(dir, 'dns-exec.sh');
  writeFileSync(
    path,
    [
      '#!/bin/sh',
      'name=$(printf "%s" "$2" | sed "s/\\.$//" | tr "A-Z" "a-z")',
      `file="${dns.txtDir}/$name"`,
      'case "$1" in',
      '  present) printf "%s\\n" "$3" >> "$file" ;;',
      '  cleanup) rm -f "$file" ;;',
      'esac',
      '',
    ].join('\n'),
    { mode: 0o755 },
  );
  return path;
}

/** An http-01 responder on `ip`:80: serves the key authorizations put in `tokens`. */
export async function startHttp01(ip: string): Promise<{ tokens: Map<string, string>; close(): Promise<void> }> {
  const tokens = new Map<string, string>();
  const server: Server = createServer((req, res) => {
    const m = /^\/\.well-known\/acme-challenge\/([^/?]+)$/.exec(req.url ?? '');
    const v = m ? tokens.get(m[1]!) : undefined;
    res.writeHead(v ? 200 : 404, { 'content-type': 'text/plain' }).end(v ?? 'no such token');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(80, ip, resolve);
  });
  return { tokens, close: () => new Promise<void>((r) => server.close(() => r())) };
}

/**
 * A tls-alpn-01 responder on `ip`:443 (RFC 8737): answers acme-tls/1 with a self-signed
 * certificate naming `name` and carrying the key authorization's digest, made by openssl.
 */
export async function startTlsAlpn01(ip: string, name: string, keyAuthorization: string): Promise<TlsServer> {
  const dir = mkdtempSync(join(tmpdir(), 'acme-alpn-'));
  try {
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const keyPem = privateKey.export({ format: 'pem', type: 'pkcs8' }) as string;
    writeFileSync(join(dir, 'key.pem'), keyPem);
    const digest = createHash('sha256').update(keyAuthorization).digest('hex');
    const r = spawnSync(
      'openssl',
      [
        'req',
        '-x509',
        '-new',
        '-key',
        join(dir, 'key.pem'),
        '-subj',
        `/CN=${name}`,
        '-days',
        '1',
        '-addext',
        `subjectAltName=DNS:${name}`,
        '-addext',
        `1.3.6.1.5.5.7.1.31=critical,DER:0420${digest}`,
        '-out',
        join(dir, 'cert.pem'),
      ],
      { encoding: 'utf8' },
    );
    assert.equal(r.status, 0, r.stderr);
    const server = createTlsServer({
      key: keyPem,
      cert: readFileSync(join(dir, 'cert.pem')),
      ALPNProtocols: ['acme-tls/1'],
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(443, ip, resolve);
    });
    return server;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

let acmeMountSeq = 0;

/**
 * A fresh mount with a root CA, a role `web` for *.acme.test and ACME enabled; config/cluster
 * path points at `baseUrl`.
 */
export async function acmeMount(
  v: Vault,
  baseUrl: string,
  opts: { acme?: Record<string, unknown>; role?: Record<string, unknown> } = {},
): Promise<{ mount: string; rootPem: string; issuerId: string; cluster: string }> {
  const mount = `acme-${++acmeMountSeq}-${process.pid}`;
  let r = await v('POST', `sys/mounts/${mount}`, { body: { type: 'pki', config: { max_lease_ttl: '87600h' } } });
  assert.equal(r.status, 204, r.text);
  r = await v('POST', `${mount}/root/generate/internal`, {
    body: { common_name: `ACME Root ${mount}`, key_type: 'ec', ttl: '8760h', issuer_name: 'root' },
  });
  assert.equal(r.status, 200, r.text);
  const root = r.json.data;
  const cluster = `${baseUrl}/v1/${mount}`;
  r = await v('POST', `${mount}/config/cluster`, { body: { path: cluster } });
  assert.equal(r.status, 200, r.text);
  r = await v('POST', `${mount}/config/urls`, {
    body: { ocsp_servers: `${cluster}/ocsp`, crl_distribution_points: `${cluster}/crl` },
  });
  assert.equal(r.status, 200, r.text);
  r = await v('POST', `${mount}/roles/web`, {
    body: {
      allowed_domains: 'acme.test',
      allow_subdomains: true,
      allow_glob_domains: false,
      allow_ip_sans: true,
      key_type: 'any',
      ttl: '720h',
      ...opts.role,
    },
  });
  assert.equal(r.status, 200, r.text);
  r = await v('POST', `${mount}/config/acme`, { body: { enabled: true, ...opts.acme } });
  assert.equal(r.status, 200, r.text);
  return { mount, rootPem: root.certificate, issuerId: root.issuer_id, cluster };
}

export function tmpDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  mkdirSync(d, { recursive: true });
  return d;
}
