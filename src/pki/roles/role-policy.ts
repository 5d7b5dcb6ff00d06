/**
 * The role policy a certificate request must satisfy, as pure functions: host name and
 * e-mail matching, CN validation, IP/URI/other SANs, user ids, the subject serial number,
 * validity (TTL, not_after, issuer expiry) and key usages. Any violation denies the whole
 * request with an `invalid` error naming the offending value.
 * Rules follow reference section 16 (Vault's issue_common.go behaviour).
 */
import { domainToASCII } from 'node:url';
import { isIP } from 'node:net';
import { invalid } from '../../shared/errors.js';
import type { PkiRole } from './role.js';

const LABEL = '([A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9])';
const HOSTNAME_RE = new RegExp(`^(\\*\\.)?(${LABEL}\\.)*${LABEL}\\.?$`);
const WILDCARD_LABEL_RE = new RegExp(`^(\\*|\\*${LABEL}|${LABEL}\\*|${LABEL}\\*${LABEL})$`);

/** `*` matches any run of characters (dots and slashes included); everything else literally. */
export function globMatch(pattern: string, value: string): boolean {
  if (!pattern.includes('*')) return pattern === value;
  const parts = pattern.split('*');
  const first = parts[0]!;
  const last = parts[parts.length - 1]!;
  if (!value.startsWith(first) || value.length < first.length + last.length || !value.endsWith(last)) return false;
  let pos = first.length;
  const end = value.length - last.length;
  for (let i = 1; i < parts.length - 1; i++) {
    const idx = value.indexOf(parts[i]!, pos);
    if (idx < 0 || idx + parts[i]!.length > end) return false;
    pos = idx + parts[i]!.length;
  }
  return true;
}

/** IDNA ToASCII; undefined when the name cannot be converted. */
function toAscii(name: string): string | undefined {
  if (/^[\x21-\x7e]*$/.test(name)) return name;
  const a = domainToASCII(name);
  return a === '' ? undefined : a;
}

/** Whether a name (after IDNA conversion) is a syntactically valid host name (optionally `*.`-prefixed). */
export function isHostname(name: string): boolean {
  const a = toAscii(name);
  return a !== undefined && HOSTNAME_RE.test(a);
}

/** Name matching of reference 16.2 for a DNS name or e-mail address. */
export function nameAllowed(
  name: string,
  role: Pick<
    PkiRole,
    | 'allow_wildcard_certificates'
    | 'enforce_hostnames'
    | 'allow_any_name'
    | 'allow_localhost'
    | 'allow_subdomains'
    | 'allowed_domains'
    | 'allow_bare_domains'
    | 'allow_glob_domains'
  > &
    Partial<Pick<PkiRole, 'allowed_domains_template'>>,
): boolean {
  if (name === '') return false;
  let reduced = name;
  let email = false;
  if (name.includes('@')) {
    const parts = name.split('@');
    if (parts.length !== 2) return false;
    reduced = parts[1]!;
    email = true;
  }
  let wildcardLabel: string | undefined;
  let isWildcard = false;
  if (reduced.includes('*')) {
    if (!role.allow_wildcard_certificates) return false;
    if (email) return false;
    if (reduced.split('*').length > 2) return false;
    isWildcard = true;
    const dot = reduced.indexOf('.');
    wildcardLabel = dot < 0 ? reduced : reduced.slice(0, dot);
    reduced = dot < 0 ? '' : reduced.slice(dot + 1);
    if (reduced.includes('*')) return false;
  }
  if (role.enforce_hostnames) {
    if (reduced !== '') {
      const a = toAscii(reduced);
      if (a === undefined || !HOSTNAME_RE.test(a)) return false;
    }
    if (isWildcard && !WILDCARD_LABEL_RE.test(wildcardLabel!)) return false;
  }
  if (role.allow_any_name) return true;
  if (role.allow_localhost) {
    if (reduced === 'localhost' || reduced === 'localdomain') return true;
    if (role.allow_subdomains && (reduced.endsWith('.localhost') || reduced.endsWith('.localdomain'))) return true;
    if (role.allow_subdomains && isWildcard && (reduced === 'localhost' || reduced === 'localdomain')) return true;
  }
  for (const d of role.allowed_domains) {
    if (d === '' || (role.allowed_domains_template === true && isIdentityTemplate(d))) continue;
    if (
      role.allow_bare_domains &&
      (name.toLowerCase() === d.toLowerCase() || (email && reduced.toLowerCase() === d.toLowerCase()))
    )
      return true;
    if (role.allow_subdomains) {
      if (reduced.endsWith(`.${d}`)) return true;
      if (isWildcard && reduced.toLowerCase() === d.toLowerCase()) return true;
    }
    if (role.allow_glob_domains && d.includes('*') && globMatch(d.toLowerCase(), name.toLowerCase())) return true;
  }
  return false;
}

/** CN checks of reference 16.3; returns the error message or undefined. */
export function commonNameError(
  cn: string,
  role: Parameters<typeof nameAllowed>[1] & Pick<PkiRole, 'cn_validations'>,
): string | undefined {
  if (role.cn_validations.length === 1 && role.cn_validations[0] === 'disabled') return undefined;
  const err = `common name ${cn} not allowed by this role`;
  if (!nameAllowed(cn, role)) return err;
  if (cn.includes('@') ? !role.cn_validations.includes('email') : !role.cn_validations.includes('hostname')) return err;
  return undefined;
}

/** One `<oid>;UTF8:<value>` entry, as in other_sans and allowed_other_sans (reference 16.6). */
export function parseOtherSanSpec(spec: string, field = 'other_sans'): { oid: string; value: string } {
  const semi = spec.indexOf(';');
  if (semi < 0) throw invalid(`other_sans value "${spec}" must be of the form <oid>;UTF8:<value>`, field);
  const oid = spec.slice(0, semi).trim();
  const rest = spec.slice(semi + 1);
  const colon = rest.indexOf(':');
  if (colon < 0) throw invalid(`other_sans value "${spec}" must be of the form <oid>;UTF8:<value>`, field);
  const type = rest.slice(0, colon).trim().toLowerCase();
  if (type !== 'utf8' && type !== 'utf-8')
    throw invalid(`only utf8 other SANs are supported; found non-supported type in other SAN "${spec}"`, field);
  if (!/^[0-2](\.\d+)+$/.test(oid)) throw invalid(`other SAN "${spec}" has an invalid OID "${oid}"`, field);
  return { oid, value: rest.slice(colon + 1) };
}

export function checkOtherSans(requested: readonly { oid: string; value: string }[], allowed: readonly string[]): void {
  if (requested.length === 0) return;
  if (allowed.length === 1 && allowed[0] === '*') return;
  const byOid = new Map<string, string[]>();
  for (const a of allowed) {
    const p = parseOtherSanSpec(a, 'allowed_other_sans');
    byOid.set(p.oid, [...(byOid.get(p.oid) ?? []), p.value]);
  }
  for (const r of requested) {
    const globs = byOid.get(r.oid);
    if (!globs) throw invalid(`other SAN OID ${r.oid} not allowed by this role`, 'other_sans');
    if (!globs.some((g) => g === '*' || globMatch(g, r.value)))
      throw invalid(`other SAN ${r.value} not allowed for OID ${r.oid} by this role`, 'other_sans');
  }
}

export function checkIpSans(ips: readonly string[], role: Pick<PkiRole, 'allow_ip_sans'>, source: 'API' | 'CSR'): void {
  for (const ip of ips) if (isIP(ip) === 0) throw invalid(`the value "${ip}" is not a valid IP address`, 'ip_sans');
  if (ips.length > 0 && !role.allow_ip_sans) {
    throw invalid(
      `IP Subject Alternative Names are not allowed in this role, but was provided some via the ` +
        `${source}: ${ips.join(', ')}`,
      'ip_sans',
    );
  }
}

export function checkUriSans(
  uris: readonly string[],
  role: Pick<PkiRole, 'allowed_uri_sans'> & Partial<Pick<PkiRole, 'allowed_uri_sans_template'>>,
  source: 'API' | 'CSR',
): void {
  if (uris.length === 0) return;
  if (role.allowed_uri_sans.length === 0)
    throw invalid(
      `URI Subject Alternative Names are not allowed in this role, but were provided via the ${source}: ` +
        `${uris.join(', ')}`,
      'uri_sans',
    );
  const usable =
    role.allowed_uri_sans_template === true
      ? role.allowed_uri_sans.filter((g) => !isIdentityTemplate(g))
      : role.allowed_uri_sans;
  for (const u of uris) {
    if (!URL.canParse(u)) throw invalid(`the value "${u}" is not a valid URI`, 'uri_sans');
    if (!usable.some((g) => globMatch(g, u)))
      throw invalid(`URI Subject Alternative Name ${u} not allowed by this role`, 'uri_sans');
  }
}

/**
 * With `allowed_domains_template` / `allowed_uri_sans_template`, Vault fills `{{identity.…}}`
 * from the requester's identity entity and skips an entry it cannot fill. Tokens here carry
 * no identity entity, so such entries never fill and are skipped, never matched literally.
 */
function isIdentityTemplate(entry: string): boolean {
  return /\{\{[^}]*\}\}/.test(entry);
}

/** Exact (case-insensitive) match, or case-sensitive glob for entries with `*` (reference 16.7). */
function listAllows(allowed: readonly string[], v: string): boolean {
  return allowed.some((a) => (a.includes('*') ? globMatch(a, v) : a.toLowerCase() === v.toLowerCase()));
}

export function checkUserIds(ids: readonly string[], role: Pick<PkiRole, 'allowed_user_ids'>): void {
  for (const id of ids)
    if (!listAllows(role.allowed_user_ids, id)) throw invalid(`user_id ${id} is not allowed by this role`, 'user_ids');
}

export function checkSubjectSerial(serial: string, role: Pick<PkiRole, 'allowed_serial_numbers'>): void {
  if (serial !== '' && !listAllows(role.allowed_serial_numbers, serial))
    throw invalid(`serial_number ${serial} not allowed by this role`, 'serial_number');
}

/** SANs and subject values a CSR asks for. */
export interface CsrNames {
  commonName: string;
  dns: string[];
  emails: string[];
  ips: string[];
  uris: string[];
  otherSans: { oid: string; value: string }[];
  userIds: string[];
  serialNumber: string;
}

export interface NameRequest {
  commonName: string;
  altNames: readonly string[];
  ipSans: readonly string[];
  uriSans: readonly string[];
  otherSans: readonly string[];
  userIds: readonly string[];
  serialNumber: string;
  excludeCnFromSans: boolean;
}

export interface CertNames {
  commonName: string;
  dns: string[];
  emails: string[];
  ips: string[];
  uris: string[];
  otherSans: { oid: string; value: string }[];
  userIds: string[];
  serialNumber: string;
  warnings: string[];
}

const uniq = (xs: readonly string[]): string[] => [...new Set(xs)];

/**
 * Builds and checks every name of a certificate request against a role (reference
 * 16.1-16.7). With a CSR, `use_csr_common_name` and `use_csr_sans` decide where the CN and
 * SANs come from.
 */
export function resolveNames(req: NameRequest, role: PkiRole, csr?: CsrNames): CertNames {
  const warnings: string[] = [];
  let cn = '';
  if (csr && role.use_csr_common_name) {
    cn = csr.commonName;
    if (req.commonName !== '' && cn !== '')
      warnings.push('the common_name field was provided but the role is set with "use_csr_common_name" set to true');
  }
  if (cn === '') cn = req.commonName;
  if (cn === '' && role.require_cn) {
    throw invalid(
      'the common_name field is required, or must be provided in a CSR with "use_csr_common_name" set to true, ' +
        'unless "require_cn" is set to false',
      'common_name',
    );
  }

  const fromCsr = csr !== undefined && role.use_csr_sans;
  let dns: string[] = fromCsr ? [...csr.dns] : [];
  let emails: string[] = fromCsr ? [...csr.emails] : [];
  if (cn !== '' && !req.excludeCnFromSans) {
    if (cn.includes('@')) emails.push(cn);
    else {
      const a = toAscii(cn);
      if (a !== undefined && HOSTNAME_RE.test(a)) dns.push(a);
    }
  }
  if (fromCsr) {
    if (req.altNames.length > 0)
      warnings.push('the alt_names field was provided but the role is set with "use_csr_sans" set to true');
  } else {
    for (const n of uniq(req.altNames).sort()) {
      if (n.includes('@')) emails.push(n);
      else {
        // Vault converts with IDNA and drops what is not a host name afterwards, whatever
        // enforce_hostnames says (reference 16.1 step 4); the drop is named in a warning.
        const a = toAscii(n);
        if (a === undefined)
          throw invalid(`subject alternate name ${n} could not be converted to ASCII (IDNA)`, 'alt_names');
        if (HOSTNAME_RE.test(a)) dns.push(a);
        else
          warnings.push(
            `alt_names entry "${n}" is not a valid host name or e-mail address and was left out of the certificate`,
          );
      }
    }
  }
  dns = uniq(dns);
  emails = uniq(emails);

  if (cn !== '') {
    const err = commonNameError(cn, role);
    if (err) throw invalid(err, 'common_name');
  }
  for (const d of dns)
    if (!nameAllowed(d, role)) throw invalid(`subject alternate name ${d} not allowed by this role`, 'alt_names');
  for (const e of emails)
    if (!nameAllowed(e, role)) throw invalid(`email address ${e} not allowed by this role`, 'alt_names');

  const otherSans = req.otherSans.map((s) => parseOtherSanSpec(s));
  if (fromCsr) otherSans.push(...csr.otherSans);
  checkOtherSans(otherSans, role.allowed_other_sans);

  const ips = fromCsr ? [...csr.ips] : [...req.ipSans];
  checkIpSans(ips, role, fromCsr ? 'CSR' : 'API');
  const uris = fromCsr ? [...csr.uris] : [...req.uriSans];
  checkUriSans(uris, role, fromCsr ? 'CSR' : 'API');

  const userIds = uniq(req.userIds.length > 0 ? req.userIds : (csr?.userIds ?? []));
  checkUserIds(userIds, role);
  let serialNumber = req.serialNumber;
  if (serialNumber === '' && csr && role.serial_number_source === 'json-csr') serialNumber = csr.serialNumber;
  checkSubjectSerial(serialNumber, role);

  return { commonName: cn, dns, emails, ips: uniq(ips), uris: uniq(uris), otherSans, userIds, serialNumber, warnings };
}

export interface ValidityInput {
  now: Date;
  /** Request ttl in seconds (0 = not given). */
  ttl: number;
  /** Request not_after ('' = not given). */
  notAfter: string;
  role: Pick<PkiRole, 'ttl' | 'max_ttl' | 'not_after' | 'not_before_duration'>;
  /** The role's name, for the refusal of a ttl beyond its max_ttl. */
  roleName?: string;
  mountDefaultTtl: number;
  mountMaxTtl: number;
  issuerNotAfter: Date;
  leafNotAfterBehavior: 'err' | 'truncate' | 'permit';
}

/** NotBefore/NotAfter of a leaf (reference 16.8). */
export function computeValidity(v: ValidityInput): { notBefore: Date; notAfter: Date; warnings: string[] } {
  const warnings: string[] = [];
  const na = v.role.not_after !== '' ? v.role.not_after : v.notAfter;
  let ttl = v.ttl;
  if (ttl > 0 && na !== '')
    throw invalid(
      'Either ttl or not_after should be provided. Both should not be provided in the same request.',
      'ttl',
    );
  const max = v.role.max_ttl > 0 ? v.role.max_ttl : v.mountMaxTtl;
  // The spec's limit rule: a requested ttl beyond the maximum is refused. Defaults (role
  // ttl, mount default) are clamped with Vault's warning, so a role with a short max_ttl
  // still issues without an explicit ttl.
  // Vault shortens such a ttl with a warning instead (a documented departure).
  if (ttl > max) {
    const byRole = v.role.max_ttl > 0;
    const source = byRole ? `role's max_ttl${v.roleName ? ` (role "${v.roleName}")` : ''}` : "mount's max lease TTL";
    const fix = byRole ? "raise the role's max_ttl" : "raise the mount's max_lease_ttl (sys/mounts/<mount>/tune)";
    throw invalid(
      `ttl of ${ttl}s (${formatSeconds(ttl)}) is longer than the maximum of ${max}s (${formatSeconds(max)}) ` +
        `allowed by the ${source}; ask for at most ${formatSeconds(max)}, or ${fix}`,
      'ttl',
    );
  }
  if (ttl === 0) ttl = v.role.ttl > 0 ? v.role.ttl : v.mountDefaultTtl;
  if (ttl > max) {
    warnings.push(
      `TTL "${formatSeconds(ttl)}" is longer than permitted maxTTL "${formatSeconds(max)}", so maxTTL is being used`,
    );
    ttl = max;
  }
  let notAfter: Date;
  if (na !== '') {
    const ms = Date.parse(na);
    if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/.test(na) || Number.isNaN(ms)) {
      throw invalid(`failed to parse not_after "${na}": expected the format YYYY-MM-ddTHH:MM:SSZ`, 'not_after');
    }
    notAfter = new Date(ms);
  } else notAfter = new Date(v.now.getTime() + ttl * 1000);
  if (notAfter.getTime() > v.issuerNotAfter.getTime()) {
    if (v.leafNotAfterBehavior === 'truncate') notAfter = v.issuerNotAfter;
    else if (v.leafNotAfterBehavior === 'err') {
      throw invalid(
        `cannot satisfy request, as TTL would result in notAfter of ${notAfter.toISOString()} that is beyond the ` +
          `expiration of the CA certificate at ${v.issuerNotAfter.toISOString()}`,
        'ttl',
      );
    }
  }
  const backdate = v.role.not_before_duration > 0 ? v.role.not_before_duration : 30;
  const notBefore = new Date(v.now.getTime() - backdate * 1000);
  if (notBefore.getTime() >= notAfter.getTime())
    throw invalid(
      `the certificate would expire (${notAfter.toISOString()}) before it becomes valid (${notBefore.toISOString()})`,
      'not_after',
    );
  return { notBefore, notAfter, warnings };
}

/** Go-style duration text, e.g. 720h0m0s. */
export function formatSeconds(s: number): string {
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  return `${h}h${m}m${s % 60}s`;
}

const EKU_FLAG_ORDER = [
  'Any',
  'ServerAuth',
  'ClientAuth',
  'CodeSigning',
  'EmailProtection',
  'IPSECEndSystem',
  'IPSECTunnel',
  'IPSECUser',
  'TimeStamping',
  'OCSPSigning',
  'MicrosoftServerGatedCrypto',
  'NetscapeServerGatedCrypto',
];

/** Extended key usages of a leaf: flags and names in Vault's order, then custom OIDs (reference 16.9). */
export function leafExtKeyUsages(
  role: Pick<
    PkiRole,
    | 'server_flag'
    | 'client_flag'
    | 'code_signing_flag'
    | 'email_protection_flag'
    | 'ext_key_usage'
    | 'ext_key_usage_oids'
  >,
): string[] {
  const wanted = new Set(
    role.ext_key_usage.map((n) =>
      n
        .trim()
        .toLowerCase()
        .replace(/^extkeyusage/, ''),
    ),
  );
  if (role.server_flag) wanted.add('serverauth');
  if (role.client_flag) wanted.add('clientauth');
  if (role.code_signing_flag) wanted.add('codesigning');
  if (role.email_protection_flag) wanted.add('emailprotection');
  const named = EKU_FLAG_ORDER.filter((n) => wanted.has(n.toLowerCase()));
  return [...named, ...role.ext_key_usage_oids.filter((o) => !named.includes(o))];
}
