/** openssl as an independent judge of what the PKI endpoints produce. */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function withTmp<T>(fn: (dir: string) => T): T {
  const dir = mkdtempSync(join(tmpdir(), 'pki-openssl-'));
  try {
    return fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export function openssl(args: string[], input?: string | Buffer): string {
  return execFileSync('openssl', args, { input, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });
}

/** `openssl x509 -noout -text` of a PEM or DER certificate. */
export function x509Text(cert: string | Buffer): string {
  const inform = typeof cert === 'string' ? 'PEM' : 'DER';
  return openssl(['x509', '-inform', inform, '-noout', '-text', '-nameopt', 'RFC2253'], cert);
}

/** Runs `openssl verify`; returns its output, or throws with openssl's reason. */
export function verifyChain(leafPem: string, rootPems: string[], untrustedPems: string[] = []): string {
  return withTmp((dir) => {
    const ca = join(dir, 'ca.pem');
    const leaf = join(dir, 'leaf.pem');
    writeFileSync(ca, rootPems.join('\n') + '\n');
    writeFileSync(leaf, leafPem + '\n');
    const args = ['verify', '-x509_strict', '-CAfile', ca];
    if (untrustedPems.length > 0) {
      const u = join(dir, 'untrusted.pem');
      writeFileSync(u, untrustedPems.join('\n') + '\n');
      args.push('-untrusted', u);
    }
    return openssl([...args, leaf]);
  });
}

/** Signs a CA CSR the way an external root would (the sign-intermediate endpoint is not used here). */
export function signIntermediateCsr(
  csrPem: string,
  caCertPem: string,
  caKeyPem: string,
  opts: { days?: number; pathlen?: number } = {},
): string {
  return withTmp((dir) => {
    writeFileSync(join(dir, 'csr.pem'), csrPem + '\n');
    writeFileSync(join(dir, 'ca.pem'), caCertPem + '\n');
    writeFileSync(join(dir, 'ca.key'), caKeyPem + '\n');
    const bc = opts.pathlen === undefined ? 'critical,CA:true' : `critical,CA:true,pathlen:${opts.pathlen}`;
    writeFileSync(
      join(dir, 'ext.cnf'),
      `[v3]\nbasicConstraints=${bc}\nkeyUsage=critical,keyCertSign,cRLSign\n` +
        'subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid:always\n',
    );
    return openssl([
      'x509',
      '-req',
      '-in',
      join(dir, 'csr.pem'),
      '-CA',
      join(dir, 'ca.pem'),
      '-CAkey',
      join(dir, 'ca.key'),
      '-CAcreateserial',
      '-days',
      String(opts.days ?? 365),
      '-extfile',
      join(dir, 'ext.cnf'),
      '-extensions',
      'v3',
      '-sha256',
    ]).trim();
  });
}

/** A self-signed CA (key and certificate) made by openssl alone, for import tests. */
export function opensslRootCa(cn: string, opts: { ca?: boolean } = {}): { certPem: string; keyPem: string } {
  return withTmp((dir) => {
    const key = join(dir, 'key.pem');
    openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', key]);
    const ext = opts.ca === false ? 'basicConstraints=critical,CA:false' : 'basicConstraints=critical,CA:true';
    const cert = openssl([
      'req',
      '-new',
      '-x509',
      '-key',
      key,
      '-subj',
      `/CN=${cn}`,
      '-days',
      '30',
      '-addext',
      ext,
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ]);
    return { certPem: cert.trim(), keyPem: openssl(['pkey', '-in', key]).trim() };
  });
}

/** Whether a private key (PEM or base64 DER) matches the certificate's public key. */
export function keyMatchesCert(keyPemOrDer: string, certPem: string, der = false): boolean {
  return withTmp((dir) => {
    const k = join(dir, 'k');
    writeFileSync(k, der ? Buffer.from(keyPemOrDer, 'base64') : keyPemOrDer + '\n');
    const fromKey = openssl(['pkey', '-in', k, '-inform', der ? 'DER' : 'PEM', '-pubout']);
    const fromCert = openssl(['x509', '-noout', '-pubkey'], certPem);
    return fromKey === fromCert;
  });
}
