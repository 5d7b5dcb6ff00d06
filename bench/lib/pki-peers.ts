import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, waitForHttp } from './processes.js';
import { ensureDebianCommand, findCommand, run } from './peers.js';
import type { Peer } from './peers.js';
import { Skip } from './types.js';
import type { RunContext } from './types.js';

/** The cfssl signing profile equivalent to the Strongroom roles: 72 h leaves for TLS servers and clients. */
const CFSSL_CONFIG = {
  signing: {
    default: { expiry: '72h', usages: ['digital signature', 'key encipherment', 'server auth', 'client auth'] },
    profiles: {
      bench: { expiry: '72h', usages: ['digital signature', 'key encipherment', 'server auth', 'client auth'] },
    },
  },
};

/**
 * `cfssl serve` with an EC P-256 root made by `cfssl gencert -initca`, the same kind of CA Strongroom
 * gets, and the profile above.
 */
export async function startCfssl(ctx: RunContext): Promise<Peer> {
  const bin = ensureDebianCommand(ctx, 'cfssl', ['golang-cfssl']);
  const dir = join(ctx.tmpDir, 'cfssl');
  mkdirSync(dir, { recursive: true });
  const csr = { CN: 'cfssl Bench Root', key: { algo: 'ecdsa', size: 256 }, ca: { expiry: '87600h' } };
  writeFileSync(join(dir, 'ca-csr.json'), JSON.stringify(csr));
  const out = JSON.parse(run(bin, ['gencert', '-initca', 'ca-csr.json'], { cwd: dir }).toString('utf8')) as {
    cert: string;
    key: string;
  };
  writeFileSync(join(dir, 'ca.pem'), out.cert);
  writeFileSync(join(dir, 'ca-key.pem'), out.key, { mode: 0o600 });
  writeFileSync(join(dir, 'config.json'), JSON.stringify(CFSSL_CONFIG));
  const port = await freePort();
  const m = ctx.group.start(
    'cfssl',
    bin,
    [
      'serve',
      '-address',
      '127.0.0.1',
      '-port',
      String(port),
      '-ca',
      join(dir, 'ca.pem'),
      '-ca-key',
      join(dir, 'ca-key.pem'),
      '-config',
      join(dir, 'config.json'),
      '-loglevel',
      '4',
    ],
    { cwd: dir },
  );
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(`${url}/api/v1/cfssl/info`, m, {
    init: { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } },
  });
  return { url, pid: m.pid, managed: m };
}

/** Checks one cfssl call answers success, so a broken peer fails loudly instead of measuring errors. */
export async function cfsslCall(url: string, body: unknown): Promise<void> {
  const res = await fetch(url, {
    method: 'POST',
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json' },
  });
  const json = (await res.json().catch(() => null)) as { success?: boolean; errors?: unknown } | null;
  if (res.status !== 200 || json?.success !== true)
    throw new Error(`cfssl ${new URL(url).pathname} failed: ${res.status} ${JSON.stringify(json?.errors ?? json)}`);
}

export function opensslBin(): string {
  const bin = findCommand('openssl');
  if (!bin) throw new Skip('peer not installed: openssl (Debian package openssl)');
  return bin;
}

/**
 * A self-signed EC P-256 certificate made by openssl in `dir`: `<name>.pem` and its key
 * `<name>.key`; `extra` adds `req` arguments (`-addext …`).
 */
export function opensslSelfSigned(dir: string, name: string, subject: string, days: number, extra: string[] = []) {
  run(
    opensslBin(),
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.pem`,
      '-subj',
      subject,
      '-days',
      String(days),
      ...extra,
    ],
    { cwd: dir },
  );
  return { cert: join(dir, `${name}.pem`), key: join(dir, `${name}.key`) };
}

/** A DER OCSP request for `certPem` issued by `caPem`, made by openssl (SHA-1 CertID, no nonce). */
export function ocspRequest(dir: string, name: string, caPem: string, certPem: string): Buffer {
  const ca = join(dir, `${name}-ca.pem`);
  const cert = join(dir, `${name}-cert.pem`);
  const req = join(dir, `${name}-req.der`);
  writeFileSync(ca, `${caPem.trim()}\n`);
  writeFileSync(cert, `${certPem.trim()}\n`);
  run(opensslBin(), ['ocsp', '-issuer', ca, '-cert', cert, '-reqout', req, '-no_nonce']);
  return readFileSync(req);
}

/**
 * `openssl ocsp` as a responder over an index with one valid certificate, signing with its
 * EC P-256 CA like Strongroom does. Returns the request the harness sends to it.
 */
export async function startOpensslOcsp(ctx: RunContext): Promise<Peer & { request: Buffer }> {
  const openssl = opensslBin();
  const dir = join(ctx.tmpDir, 'openssl-ocsp');
  mkdirSync(dir, { recursive: true });
  const o = (args: string[]) => run(openssl, args, { cwd: dir });
  opensslSelfSigned(dir, 'ca', '/CN=OpenSSL Bench Root', 30);
  o([
    'req',
    '-new',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    'leaf.key',
    '-out',
    'leaf.csr',
    '-subj',
    '/CN=leaf.bench.test',
  ]);
  const serial = '3A5F00C0FFEE0123456789ABCDEF';
  o([
    'x509',
    '-req',
    '-in',
    'leaf.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-set_serial',
    `0x${serial}`,
    '-days',
    '3',
    '-out',
    'leaf.pem',
  ]);
  const expiry = new Date(Date.now() + 3 * 86400_000).toISOString().replace(/[-:T]/g, '').slice(2, 14) + 'Z';
  writeFileSync(join(dir, 'index.txt'), `V\t${expiry}\t\t${serial}\tunknown\t/CN=leaf.bench.test\n`);
  o(['ocsp', '-issuer', 'ca.pem', '-cert', 'leaf.pem', '-reqout', 'req.der', '-no_nonce']);
  const request = readFileSync(join(dir, 'req.der'));
  const port = await freePort();
  const m = ctx.group.start(
    'openssl-ocsp',
    openssl,
    [
      'ocsp',
      '-index',
      'index.txt',
      '-port',
      String(port),
      '-rsigner',
      'ca.pem',
      '-rkey',
      'ca.key',
      '-CA',
      'ca.pem',
      '-ignore_err',
      '-nmin',
      '60',
    ],
    { cwd: dir },
  );
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(`${url}/`, m, {
    init: { method: 'POST', body: request, headers: { 'content-type': 'application/ocsp-request' } },
  });
  return { url, pid: m.pid, managed: m, request };
}
