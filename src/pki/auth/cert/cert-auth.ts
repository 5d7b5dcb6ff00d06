import { X509Certificate } from 'node:crypto';
import { invalid } from '../../../shared/errors.js';
import { pemDecodeAll } from '../../crypto/pem.js';
import { globMatch } from '../glob.js';
import { DEFAULT_TOKEN_PARAMS, tokenParamsView, updateTokenParams } from '../login-token.js';
import type { TokenParams } from '../login-token.js';

/**
 * The TLS certificate method: trusted certificates (certs/:name) and the checks a client
 * certificate presented on the connection must pass.
 * https://developer.hashicorp.com/vault/api-docs/auth/cert
 */

export interface CertRole extends TokenParams {
  /** PEM: one or more CA certificates (or pinned leaf certificates). */
  certificate: string;
  display_name: string;
  allowed_common_names: string[];
  allowed_dns_sans: string[];
  allowed_email_sans: string[];
  allowed_uri_sans: string[];
  allowed_organizational_units: string[];
}

export interface CertRoleFields {
  certificate?: string;
  display_name?: string;
  allowed_common_names?: string[];
  allowed_dns_sans?: string[];
  allowed_email_sans?: string[];
  allowed_uri_sans?: string[];
  allowed_organizational_units?: string[];
}

/** Every failed match says this, as Vault does. */
export const NO_MATCH = 'invalid certificate or no client certificate supplied';

const CLIENT_AUTH = '1.3.6.1.5.5.7.3.2';
const ANY_EKU = '2.5.29.37.0';
const MAX_CHAIN = 6;

export function updateCertRole(
  current: CertRole | undefined,
  body: Record<string, unknown>,
  f: CertRoleFields,
): CertRole {
  const base: CertRole = current ?? {
    ...DEFAULT_TOKEN_PARAMS,
    token_policies: [],
    token_bound_cidrs: [],
    certificate: '',
    display_name: '',
    allowed_common_names: [],
    allowed_dns_sans: [],
    allowed_email_sans: [],
    allowed_uri_sans: [],
    allowed_organizational_units: [],
  };
  const next: CertRole = { ...base, ...updateTokenParams(base, body) };
  for (const k of [
    'certificate',
    'display_name',
    'allowed_common_names',
    'allowed_dns_sans',
    'allowed_email_sans',
    'allowed_uri_sans',
    'allowed_organizational_units',
  ] as const) {
    const v = f[k];
    if (v !== undefined)
      (next as unknown as Record<string, unknown>)[k] = Array.isArray(v) ? v.filter((x) => x !== '') : v;
  }
  if (next.certificate.trim() === '') throw invalid('must specify certificate', 'certificate');
  parseTrusted(next.certificate);
  return next;
}

/** The certificates of a PEM bundle; refuses anything else. */
export function parseTrusted(pem: string): X509Certificate[] {
  const blocks = pemDecodeAll(pem).filter((b) => b.label === 'CERTIFICATE');
  if (blocks.length === 0) throw invalid('failed to parse certificate', 'certificate');
  try {
    return blocks.map((b) => new X509Certificate(b.der));
  } catch {
    throw invalid('failed to parse certificate', 'certificate');
  }
}

export function certRoleView(r: CertRole): Record<string, unknown> {
  return {
    certificate: r.certificate,
    display_name: r.display_name,
    allowed_common_names: r.allowed_common_names,
    allowed_dns_sans: r.allowed_dns_sans,
    allowed_email_sans: r.allowed_email_sans,
    allowed_uri_sans: r.allowed_uri_sans,
    allowed_organizational_units: r.allowed_organizational_units,
    required_extensions: [],
    ocsp_enabled: false,
    ...tokenParamsView(r),
  };
}

/**
 * Whether the client's certificate chains to one of `trusted` (or is one of them), every
 * link valid now, intermediates only from what the client presented and only CA ones, and
 * the leaf usable for client authentication.
 */
export function chainsTo(
  leaf: X509Certificate,
  presented: X509Certificate[],
  trusted: X509Certificate[],
  now: Date,
): boolean {
  if (!validAt(leaf, now) || !clientUsable(leaf)) return false;
  if (trusted.some((t) => t.raw.equals(leaf.raw))) return true;
  let current = leaf;
  for (let depth = 0; depth < MAX_CHAIN; depth++) {
    if (trusted.some((t) => t.ca && validAt(t, now) && signedBy(current, t))) return true;
    const next = presented.find((p) => p !== current && p.ca && validAt(p, now) && signedBy(current, p));
    if (!next) return false;
    current = next;
  }
  return false;
}

function signedBy(child: X509Certificate, parent: X509Certificate): boolean {
  try {
    return child.checkIssued(parent) && child.verify(parent.publicKey);
  } catch {
    return false;
  }
}

function validAt(c: X509Certificate, now: Date): boolean {
  return new Date(c.validFrom).getTime() <= now.getTime() && now.getTime() <= new Date(c.validTo).getTime();
}

function clientUsable(c: X509Certificate): boolean {
  const eku = c.keyUsage as string[] | undefined;
  return !eku || eku.length === 0 || eku.includes(CLIENT_AUTH) || eku.includes(ANY_EKU);
}

/** The names of a certificate the role constraints look at. */
export interface CertNames {
  commonName: string;
  organizationalUnits: string[];
  dns: string[];
  email: string[];
  uri: string[];
}

export function certNames(c: X509Certificate): CertNames {
  const subject = c.subject.split('\n');
  const attr = (name: string) => subject.filter((l) => l.startsWith(`${name}=`)).map((l) => l.slice(name.length + 1));
  const sans = (c.subjectAltName ?? '').split(/,\s*/).filter((s) => s !== '');
  const san = (prefix: string) => sans.filter((s) => s.startsWith(`${prefix}:`)).map((s) => s.slice(prefix.length + 1));
  return {
    commonName: attr('CN')[0] ?? '',
    organizationalUnits: attr('OU'),
    dns: san('DNS'),
    email: san('email'),
    uri: san('URI'),
  };
}

/** Each non-empty allowed list must match at least one of the certificate's names (globs allowed). */
export function namesAllowed(role: CertRole, names: CertNames): boolean {
  const any = (patterns: string[], values: string[]) =>
    patterns.length === 0 || values.some((v) => patterns.some((p) => globMatch(p, v)));
  return (
    any(role.allowed_common_names, [names.commonName]) &&
    any(role.allowed_dns_sans, names.dns) &&
    any(role.allowed_email_sans, names.email) &&
    any(role.allowed_uri_sans, names.uri) &&
    any(role.allowed_organizational_units, names.organizationalUnits)
  );
}
