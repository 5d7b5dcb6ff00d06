/** Shared setup of the issue/sign end-to-end tests: a server, fresh mounts, roots, roles and openssl-made CSRs. */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { TestServer } from '../support/test-server.js';
import { vaultClient } from './vault-http.js';
import { openssl, withTmp } from './pki-issuers-openssl.js';

export type Vault = ReturnType<typeof vaultClient>;

export const SERIAL = /^[0-9a-f]{2}(:[0-9a-f]{2}){0,19}$/;

let mountSeq = 0;

/** A fresh PKI mount with an internal root and config/urls set; returns its path and root PEM. */
export async function mountWithRoot(
  v: Vault,
  opts: {
    keyType?: string;
    keyBits?: number;
    ttl?: string;
    issuerName?: string;
    mountConfig?: Record<string, unknown>;
  } = {},
): Promise<{ mount: string; rootPem: string; issuerId: string }> {
  const mount = `pki-i${++mountSeq}-${process.pid}`;
  let r = await v('POST', `sys/mounts/${mount}`, {
    body: { type: 'pki', config: { max_lease_ttl: '87600h', ...opts.mountConfig } },
  });
  assert.equal(r.status, 204, r.text);
  r = await v('POST', `${mount}/root/generate/internal`, {
    body: {
      common_name: `Root ${mount}`,
      key_type: opts.keyType ?? 'ec',
      key_bits: opts.keyBits ?? 0,
      ttl: opts.ttl ?? '8760h',
      issuer_name: opts.issuerName ?? 'root',
    },
  });
  assert.equal(r.status, 200, r.text);
  const root = r.json.data;
  r = await v('POST', `${mount}/config/urls`, {
    body: {
      issuing_certificates: `http://ca.test/v1/${mount}/ca`,
      ocsp_servers: `http://ca.test/v1/${mount}/ocsp`,
      crl_distribution_points: `http://ca.test/v1/${mount}/crl`,
    },
  });
  assert.equal(r.status, 200, r.text);
  return { mount, rootPem: root.certificate, issuerId: root.issuer_id };
}

export async function role(v: Vault, mount: string, name: string, body: Record<string, unknown>): Promise<void> {
  const r = await v('POST', `${mount}/roles/${name}`, { body });
  assert.equal(r.status, 200, r.text);
}

export async function storedSerials(v: Vault, mount: string): Promise<string[]> {
  const r = await v('LIST', `${mount}/certs`);
  if (r.status === 404) return [];
  assert.equal(r.status, 200, r.text);
  return r.json.data.keys as string[];
}

/** A CSR made by openssl: key spec like `EC:P-256`, `RSA:2048`, `ED25519`; subject `/CN=x`; SANs as openssl text. */
export function opensslCsr(keySpec: string, subject: string, sans?: string): { csr: string; key: string } {
  return withTmp((dir) => {
    const key = join(dir, 'key.pem');
    const [alg, param] = keySpec.split(':');
    const args = ['genpkey', '-algorithm', alg!, '-out', key];
    if (alg === 'EC') args.push('-pkeyopt', `ec_paramgen_curve:${param}`);
    if (alg === 'RSA' || alg === 'RSA-PSS') args.push('-pkeyopt', `rsa_keygen_bits:${param}`);
    openssl(args);
    const reqArgs = ['req', '-new', '-key', key, '-subj', subject];
    if (sans) reqArgs.push('-addext', `subjectAltName=${sans}`);
    const csr = openssl(reqArgs).trim();
    return { csr, key: openssl(['pkey', '-in', key]).trim() };
  });
}

export const pemToDer = (pem: string): Buffer =>
  Buffer.from(pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), 'base64');

export function makeServerClient(server: TestServer): Vault {
  return vaultClient(server.url, server.rootToken);
}
