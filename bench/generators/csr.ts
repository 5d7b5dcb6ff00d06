import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { findCommand } from '../lib/peers.js';
import { Skip } from '../lib/types.js';

const exec = promisify(execFile);
const OPENSSL = 'openssl';

export type CsrKeyType = 'ec-p256' | 'rsa-2048';

export interface GeneratedCsr {
  commonName: string;
  pem: string;
}

const KEY_ARGS: Record<CsrKeyType, string[]> = {
  'ec-p256': ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256'],
  'rsa-2048': ['-newkey', 'rsa:2048'],
};

/**
 * PEM certificate signing requests with a fresh key each, CN `<prefix>-<i>.<domain>` and the
 * same name as a DNS SAN, as a TLS client would send them. Made by openssl, independently of
 * the code under test; the private keys are thrown away.
 */
export async function generateCsrs(opts: {
  count: number;
  keyType?: CsrKeyType;
  domain?: string;
  prefix?: string;
}): Promise<GeneratedCsr[]> {
  if (!findCommand(OPENSSL))
    throw new Skip('peer not installed: openssl, which makes the CSRs (Debian package openssl)');
  const keyArgs = KEY_ARGS[opts.keyType ?? 'ec-p256'];
  const one = async (i: number): Promise<GeneratedCsr> => {
    const commonName = `${opts.prefix ?? 'host'}-${i}.${opts.domain ?? 'bench.test'}`;
    const { stdout } = await exec(OPENSSL, [
      'req',
      '-new',
      ...keyArgs,
      '-nodes',
      '-keyout',
      '/dev/null',
      '-subj',
      `/CN=${commonName}`,
      '-addext',
      `subjectAltName=DNS:${commonName}`,
      '-sha256',
    ]);
    if (!stdout.includes('BEGIN CERTIFICATE REQUEST')) throw new Error('openssl produced no CSR');
    return { commonName, pem: stdout.trim() };
  };
  const out: GeneratedCsr[] = [];
  for (let i = 0; i < opts.count; i += 8) {
    out.push(...(await Promise.all(Array.from({ length: Math.min(8, opts.count - i) }, (_, k) => one(i + k)))));
  }
  return out;
}
