import { api, dig, digString } from './api.js';
import type { Strongroom } from './strongroom.js';

export const PKI_MOUNT = 'pki';
export const ROLE_EC = 'bench-ec';
export const ROLE_RSA = 'bench-rsa';
/** Same lifetime and usages as the cfssl profile the peers use. */
export const LEAF_TTL = '72h';

/** Set from `--pki-no-store`: the bench roles keep no certificate (`no_store=true`), as cfssl serve keeps none. */
export const pkiRoleSettings = { noStore: false };

export interface PkiFixture {
  caPem: string;
}

/**
 * Mounts the PKI engine at `pki`, generates an EC P-256 root and the two roles the scenarios use.
 * Built once per server; a route that does not exist yet skips the scenario.
 */
export async function benchPki(sr: Strongroom): Promise<PkiFixture> {
  let p = sr.fixtures.get('pki') as Promise<PkiFixture> | undefined;
  if (!p) {
    p = setUpPki(sr);
    sr.fixtures.set('pki', p);
    p.catch(() => sr.fixtures.delete('pki'));
  }
  return p;
}

async function setUpPki(sr: Strongroom): Promise<PkiFixture> {
  const m = PKI_MOUNT;
  const mount = await api(sr, 'vault', 'POST', `/v1/sys/mounts/${m}`, {
    body: { type: 'pki', config: { max_lease_ttl: '87600h' } },
    expect: [200, 204, 400],
  });
  // A retry after a half-done setup finds the mount already there, which is fine.
  if (mount.status === 400 && !vaultErrors(mount.json).includes('already in use')) {
    throw new Error(`POST /v1/sys/mounts/${m} answered 400: ${mount.text.slice(0, 300)}`);
  }
  const root = await api(sr, 'vault', 'POST', `/v1/${m}/root/generate/internal`, {
    body: { common_name: 'Strongroom Bench Root', key_type: 'ec', key_bits: 256, ttl: '87600h' },
  });
  const caPem = digString(root.json, 'data', 'certificate');
  const common = {
    allow_any_name: true,
    enforce_hostnames: false,
    ttl: LEAF_TTL,
    max_ttl: LEAF_TTL,
    server_flag: true,
    client_flag: true,
    no_store: pkiRoleSettings.noStore,
  };
  await api(sr, 'vault', 'POST', `/v1/${m}/roles/${ROLE_EC}`, { body: { ...common, key_type: 'ec', key_bits: 256 } });
  await api(sr, 'vault', 'POST', `/v1/${m}/roles/${ROLE_RSA}`, {
    body: { ...common, key_type: 'rsa', key_bits: 2048 },
  });
  return { caPem };
}

export interface IssuedCert {
  serial: string;
  certificate: string;
}

export async function signCsr(sr: Strongroom, csr: string, commonName: string): Promise<IssuedCert> {
  const res = await api(sr, 'vault', 'POST', `/v1/${PKI_MOUNT}/sign/${ROLE_EC}`, {
    body: { csr, common_name: commonName, ttl: LEAF_TTL },
  });
  return {
    serial: digString(res.json, 'data', 'serial_number'),
    certificate: digString(res.json, 'data', 'certificate'),
  };
}

/** Turns revocation on for a batch of certificates without rebuilding the CRL per call, where supported. */
export async function deferCrlRebuilds(sr: Strongroom): Promise<boolean> {
  try {
    await api(sr, 'vault', 'POST', `/v1/${PKI_MOUNT}/config/crl`, { body: { auto_rebuild: true } });
    return true;
  } catch {
    return false;
  }
}

export function vaultErrors(json: unknown): string {
  const e = dig(json, 'errors');
  return Array.isArray(e) ? e.join('; ') : '';
}
