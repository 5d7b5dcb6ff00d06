/**
 * The ACME server of a PKI mount (RFC 8555, RFC 8737, RFC 8738, RFC 9773): configuration
 * as Vault names it (config/acme), directories, accounts, orders, authorizations and
 * challenges, and the pure rules between them. No I/O here.
 * https://developer.hashicorp.com/vault/api-docs/secret/pki/issuance#acme-certificate-issuance
 * https://www.rfc-editor.org/rfc/rfc8555
 */
import { isIP } from 'node:net';
import { DomainError } from '../../shared/errors.js';

/** The RFC 8555 section 6.7 error types (and RFC 9773's), without the `urn:ietf:params:acme:error:` prefix. */
export type AcmeErrorType =
  | 'accountDoesNotExist'
  | 'alreadyRevoked'
  | 'badCSR'
  | 'badNonce'
  | 'badPublicKey'
  | 'badRevocationReason'
  | 'badSignatureAlgorithm'
  | 'caa'
  | 'connection'
  | 'dns'
  | 'externalAccountRequired'
  | 'incorrectResponse'
  | 'invalidContact'
  | 'malformed'
  | 'orderNotReady'
  | 'rateLimited'
  | 'rejectedIdentifier'
  | 'serverInternal'
  | 'tls'
  | 'unauthorized'
  | 'unsupportedContact'
  | 'unsupportedIdentifier'
  | 'userActionRequired';

const KIND_OF: Partial<Record<AcmeErrorType, DomainError['kind']>> = {
  unauthorized: 'forbidden',
  orderNotReady: 'forbidden',
  userActionRequired: 'forbidden',
  externalAccountRequired: 'forbidden',
  accountDoesNotExist: 'not_found',
  serverInternal: 'unavailable',
};

/** A refusal with its ACME error type; the protocol edge renders it as a problem document. */
export class AcmeError extends DomainError {
  readonly acmeType: AcmeErrorType;
  constructor(type: AcmeErrorType, message: string, opts: { cause?: unknown } = {}) {
    super(KIND_OF[type] ?? 'invalid', message, opts);
    this.acmeType = type;
  }
}

export const acmeError = (type: AcmeErrorType, message: string): AcmeError => new AcmeError(type, message);

/** A problem recorded on a challenge, an authorization or an order. */
export interface AcmeProblem {
  type: AcmeErrorType;
  detail: string;
}

// ---------------------------------------------------------------------------------------
// Configuration (config/acme)

export type EabPolicy = 'not-required' | 'new-account-required' | 'always-required';

export interface AcmeConfig {
  enabled: boolean;
  allowedIssuers: string[];
  allowedRoles: string[];
  allowRoleExtKeyUsage: boolean;
  defaultDirectoryPolicy: string;
  dnsResolver: string;
  eabPolicy: EabPolicy;
  /** Seconds; 0 is the default, 90 days. */
  maxTtl: number;
}

export const DEFAULT_ACME_MAX_TTL = 90 * 24 * 3600;

export const DEFAULT_ACME_CONFIG: Readonly<AcmeConfig> = Object.freeze({
  enabled: false,
  allowedIssuers: ['*'],
  allowedRoles: ['*'],
  allowRoleExtKeyUsage: false,
  defaultDirectoryPolicy: 'sign-verbatim',
  dnsResolver: '',
  eabPolicy: 'not-required',
  maxTtl: 0,
});

/** What a directory's default policy says. */
export type DirectoryPolicy =
  | { kind: 'forbid' }
  | { kind: 'sign-verbatim' }
  | { kind: 'role'; role: string }
  | { kind: 'external-policy'; policy: string };

export function parseDirectoryPolicy(text: string): DirectoryPolicy | undefined {
  const t = text.trim();
  if (t === 'forbid') return { kind: 'forbid' };
  if (t === 'sign-verbatim') return { kind: 'sign-verbatim' };
  if (t.startsWith('role:') && t.length > 5) return { kind: 'role', role: t.slice(5) };
  if (t === 'external-policy') return { kind: 'external-policy', policy: '' };
  if (t.startsWith('external-policy:') && t.length > 16) return { kind: 'external-policy', policy: t.slice(16) };
  return undefined;
}

const cfgInvalid = (message: string, field: string) => new DomainError('invalid', message, { field });

/** Checks a configuration as it is written (reference 13.2). */
export function validateAcmeConfig(c: AcmeConfig): void {
  const policy = parseDirectoryPolicy(c.defaultDirectoryPolicy);
  if (!policy)
    throw cfgInvalid(
      `invalid default_directory_policy "${c.defaultDirectoryPolicy}": expected forbid, sign-verbatim, role:<name>, ` +
        'external-policy or external-policy:<name>',
      'default_directory_policy',
    );
  if (policy.kind === 'role' && !listAllows(c.allowedRoles, policy.role))
    throw cfgInvalid(
      `default_directory_policy names role "${policy.role}", which allowed_roles does not allow`,
      'default_directory_policy',
    );
  if (!['not-required', 'new-account-required', 'always-required'].includes(c.eabPolicy))
    throw cfgInvalid(
      `invalid eab_policy "${c.eabPolicy}": expected not-required, new-account-required or always-required`,
      'eab_policy',
    );
  if (c.dnsResolver !== '' && !isHostPort(c.dnsResolver))
    throw cfgInvalid(
      `dns_resolver must be host:port (an IP address and a port), got "${c.dnsResolver}"`,
      'dns_resolver',
    );
  if (c.maxTtl < 0) throw cfgInvalid('max_ttl must not be negative', 'max_ttl');
}

function isHostPort(text: string): boolean {
  const m = /^\[?([^\]]+?)\]?:(\d{1,5})$/.exec(text);
  if (!m) return false;
  const port = Number(m[2]);
  return isIP(m[1]!) !== 0 && port > 0 && port < 65536;
}

/** `*` allows everything; otherwise one of the names must match (issuers: by id or by name). */
export function listAllows(list: readonly string[], ...names: string[]): boolean {
  if (list.includes('*')) return true;
  return names.some((n) => n !== '' && list.includes(n));
}

export const effectiveMaxTtl = (c: AcmeConfig): number => (c.maxTtl > 0 ? c.maxTtl : DEFAULT_ACME_MAX_TTL);

// ---------------------------------------------------------------------------------------
// Directories

/** Where a request came in: the path captures of the directory's prefix. */
export interface DirectoryPath {
  issuerRef: string | undefined;
  role: string | undefined;
}

/** The directory prefix relative to the mount, e.g. `issuer/root/roles/web/acme/`. */
export function directoryPrefix(p: DirectoryPath): string {
  const issuer = p.issuerRef !== undefined ? `issuer/${p.issuerRef}/` : '';
  return `${issuer}${p.role !== undefined ? `roles/${p.role}/` : ''}acme/`;
}

/** How a directory issues: its issuer reference and its policy. */
export type IssuancePolicy =
  | { kind: 'sign-verbatim'; issuerRef: string }
  | { kind: 'role'; role: string; issuerRef: string | undefined }
  | { kind: 'external-policy'; policy: string; issuerRef: string | undefined };

/**
 * Vault's table (reference 13.1): `acme` follows default_directory_policy with the default
 * issuer (or the role's), `issuer/:ref/acme` the same policy with the path's issuer,
 * `roles/:role/acme` the role with its issuer_ref, and `issuer/:ref/roles/:role/acme` the
 * role with the path's issuer. `roleIssuer` gives a role's issuer_ref (undefined: unknown role).
 */
export function directoryIssuance(c: AcmeConfig, p: DirectoryPath): IssuancePolicy {
  if (p.issuerRef !== undefined && !listAllows(c.allowedIssuers, p.issuerRef))
    throw acmeError('unauthorized', `issuer "${p.issuerRef}" is not allowed by config/acme allowed_issuers`);
  if (p.role !== undefined) {
    if (!listAllows(c.allowedRoles, p.role))
      throw acmeError('unauthorized', `role "${p.role}" is not allowed by config/acme allowed_roles`);
    return { kind: 'role', role: p.role, issuerRef: p.issuerRef };
  }
  const policy = parseDirectoryPolicy(c.defaultDirectoryPolicy) ?? { kind: 'forbid' };
  switch (policy.kind) {
    case 'forbid':
      throw acmeError(
        'unauthorized',
        'this directory is forbidden by config/acme default_directory_policy; use a role directory (roles/:role/acme)',
      );
    case 'sign-verbatim':
      return { kind: 'sign-verbatim', issuerRef: p.issuerRef ?? 'default' };
    case 'role':
      return { kind: 'role', role: policy.role, issuerRef: p.issuerRef };
    case 'external-policy':
      return { kind: 'external-policy', policy: policy.policy, issuerRef: p.issuerRef };
  }
}

// ---------------------------------------------------------------------------------------
// Resources

export type AccountStatus = 'valid' | 'deactivated' | 'revoked';

export interface AcmeAccount {
  id: string;
  mountId: string;
  directory: string;
  thumbprint: string;
  jwk: Record<string, unknown>;
  status: AccountStatus;
  contact: string[];
  termsAgreed: boolean;
  eab: { id: string; createdAt: Date } | undefined;
  createdAt: Date;
  revokedAt: Date | undefined;
}

export type IdentifierType = 'dns' | 'ip';

export interface Identifier {
  type: IdentifierType;
  value: string;
}

export type OrderStatus = 'pending' | 'ready' | 'processing' | 'valid' | 'invalid';

export interface AcmeOrder {
  id: string;
  mountId: string;
  accountId: string;
  directory: string;
  status: OrderStatus;
  identifiers: Identifier[];
  authzIds: string[];
  notBefore: Date | undefined;
  notAfter: Date | undefined;
  expiresAt: Date;
  error: AcmeProblem | undefined;
  replaces: string | undefined;
  certSerial: string | undefined;
  certNotAfter: Date | undefined;
  certChain: string | undefined;
  createdAt: Date;
}

export type ChallengeType = 'http-01' | 'dns-01' | 'tls-alpn-01';
export type ChallengeStatus = 'pending' | 'processing' | 'valid' | 'invalid';

export interface AcmeChallenge {
  type: ChallengeType;
  status: ChallengeStatus;
  validated: Date | undefined;
  error: AcmeProblem | undefined;
  attempts: number;
}

export type AuthzStatus = 'pending' | 'valid' | 'invalid' | 'deactivated' | 'expired' | 'revoked';

export interface AcmeAuthorization {
  id: string;
  mountId: string;
  accountId: string;
  orderId: string;
  identifier: Identifier;
  wildcard: boolean;
  status: AuthzStatus;
  expiresAt: Date;
  token: string;
  challenges: AcmeChallenge[];
  validationLeaseUntil: Date | undefined;
}

/** Orders stay open a day; authorizations last as long (no reuse across orders). */
export const ORDER_LIFETIME_SECONDS = 24 * 3600;
/** How long a used nonce is remembered; older nonces are refused by their own expiry. */
export const NONCE_LIFETIME_SECONDS = 15 * 60;

// ---------------------------------------------------------------------------------------
// Identifiers

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/**
 * Checks and normalises the identifiers of a new order: `dns` names (lower case, a
 * leading `*.` only), `ip` addresses (RFC 8738, canonical form). Duplicates are merged.
 */
export function normalizeIdentifiers(raw: unknown): Identifier[] {
  if (!Array.isArray(raw) || raw.length === 0) throw acmeError('malformed', 'identifiers must be a non-empty array');
  if (raw.length > 100) throw acmeError('rejectedIdentifier', 'an order takes at most 100 identifiers');
  const out: Identifier[] = [];
  const seen = new Set<string>();
  for (const item of raw) {
    if (typeof item !== 'object' || item === null) throw acmeError('malformed', 'each identifier must be an object');
    const { type, value } = item as Record<string, unknown>;
    if (typeof value !== 'string' || value === '') throw acmeError('malformed', 'an identifier needs a string value');
    let id: Identifier;
    if (type === 'dns') id = { type: 'dns', value: normalizeDnsName(value) };
    else if (type === 'ip') id = { type: 'ip', value: normalizeIp(value) };
    else throw acmeError('unsupportedIdentifier', `identifier type ${JSON.stringify(type)} is not supported`);
    const key = `${id.type}:${id.value}`;
    if (!seen.has(key)) {
      seen.add(key);
      out.push(id);
    }
  }
  return out;
}

function normalizeDnsName(value: string): string {
  const v = value.toLowerCase().replace(/\.$/, '');
  const body = v.startsWith('*.') ? v.slice(2) : v;
  const labels = body.split('.');
  if (v.length > 253 || labels.length < 1 || !labels.every((l) => LABEL.test(l)) || isIP(body) !== 0)
    throw acmeError('rejectedIdentifier', `"${value}" is not a valid DNS name`);
  return v;
}

function normalizeIp(value: string): string {
  const kind = isIP(value);
  if (kind === 0) throw acmeError('rejectedIdentifier', `"${value}" is not an IP address`);
  return kind === 6 ? canonicalIpv6(value) : value;
}

/** RFC 5952 form through the URL parser (lower case, zeros compressed). */
function canonicalIpv6(value: string): string {
  return new URL(`http://[${value}]/`).hostname.slice(1, -1);
}

/** Which challenges an identifier offers: wildcards only dns-01, IPs no dns-01 (RFC 8738 section 7). */
export function challengeTypesFor(id: Identifier): ChallengeType[] {
  if (id.type === 'ip') return ['http-01', 'tls-alpn-01'];
  if (id.value.startsWith('*.')) return ['dns-01'];
  return ['http-01', 'dns-01', 'tls-alpn-01'];
}

/** The names a finalize CSR must carry: exactly the order's identifiers (RFC 8555 section 7.4). */
export function csrMatchesOrder(
  order: Pick<AcmeOrder, 'identifiers'>,
  csr: { commonName: string; dns: string[]; ips: string[]; otherNames: number },
): string | undefined {
  const want = new Set(order.identifiers.map((i) => `${i.type}:${i.value}`));
  const have = new Set<string>();
  for (const d of csr.dns) have.add(`dns:${d.toLowerCase()}`);
  for (const ip of csr.ips) have.add(`ip:${isIP(ip) === 6 ? canonicalIpv6(ip) : ip}`);
  if (csr.otherNames > 0) return 'the CSR asks for names other than DNS names and IP addresses';
  if (csr.commonName !== '') {
    const cn = csr.commonName.toLowerCase();
    const asId = isIP(cn) !== 0 ? `ip:${isIP(cn) === 6 ? canonicalIpv6(cn) : cn}` : `dns:${cn}`;
    if (!want.has(asId)) return `the CSR's common name ${csr.commonName} is not one of the order's identifiers`;
    have.add(asId);
  }
  for (const h of have)
    if (!want.has(h)) return `the CSR names ${h.slice(h.indexOf(':') + 1)}, which the order does not`;
  for (const w of want) if (!have.has(w)) return `the CSR lacks ${w.slice(w.indexOf(':') + 1)}, which the order names`;
  return undefined;
}

// ---------------------------------------------------------------------------------------
// Statuses

/** The status clients see: pending and ready orders past their expiry are invalid (RFC 8555 section 7.1.6). */
export function orderStatusAt(o: Pick<AcmeOrder, 'status' | 'expiresAt'>, now: Date): OrderStatus {
  if ((o.status === 'pending' || o.status === 'ready') && o.expiresAt <= now) return 'invalid';
  return o.status;
}

export function authzStatusAt(a: Pick<AcmeAuthorization, 'status' | 'expiresAt'>, now: Date): AuthzStatus {
  if (a.status === 'pending' && a.expiresAt <= now) return 'expired';
  return a.status;
}

// ---------------------------------------------------------------------------------------
// Revocation reasons (RFC 5280 section 5.3.1) accepted from ACME clients

/** Reasons a subscriber may give; 7 is unused, 8 (removeFromCRL) is for delta CRLs only. */
export function checkRevocationReason(reason: unknown): number {
  if (reason === undefined) return 0;
  if (
    typeof reason !== 'number' ||
    !Number.isInteger(reason) ||
    reason < 0 ||
    reason > 10 ||
    reason === 7 ||
    reason === 8
  )
    throw acmeError('badRevocationReason', `revocation reason ${JSON.stringify(reason)} is not allowed`);
  return reason;
}

// ---------------------------------------------------------------------------------------
// ACME Renewal Information (RFC 9773)

/**
 * The window in which a certificate should be renewed: the middle third of its lifetime's
 * last half, i.e. from 2/3 to 5/6 of the way through (Let's Encrypt's choice); a revoked
 * certificate should be renewed now.
 */
export function renewalWindow(
  notBefore: Date,
  notAfter: Date,
  revoked: boolean,
  now: Date,
): { start: Date; end: Date } {
  if (revoked) return { start: new Date(now.getTime() - 3600_000), end: now };
  const life = notAfter.getTime() - notBefore.getTime();
  return {
    start: new Date(notBefore.getTime() + Math.floor((life * 2) / 3)),
    end: new Date(notBefore.getTime() + Math.floor((life * 5) / 6)),
  };
}
