/**
 * PKI roles: the policy a certificate request is checked against. Fields, defaults and
 * the read shape follow Vault's role endpoints (reference 8.2/8.3).
 * https://developer.hashicorp.com/vault/api-docs/secret/pki#create-update-role
 *
 * A role is kept as one record with Vault's field names, so what is stored, what the
 * read endpoint returns and what issuance checks are the same object.
 */
import { invalid } from '../../shared/errors.js';
import { resolveKeyParams } from '../crypto/keys.js';
import { SUBJECT_NAME_FIELDS, defineFields } from '../vault-fields.js';
import { parseOtherSanSpec } from './role-policy.js';

export interface PkiRole {
  ttl: number;
  max_ttl: number;
  allow_localhost: boolean;
  allowed_domains: string[];
  allowed_domains_template: boolean;
  allow_bare_domains: boolean;
  allow_subdomains: boolean;
  allow_glob_domains: boolean;
  allow_wildcard_certificates: boolean;
  allow_any_name: boolean;
  enforce_hostnames: boolean;
  allow_ip_sans: boolean;
  allowed_uri_sans: string[];
  allowed_uri_sans_template: boolean;
  allowed_other_sans: string[];
  allowed_serial_numbers: string[];
  allowed_user_ids: string[];
  server_flag: boolean;
  client_flag: boolean;
  code_signing_flag: boolean;
  email_protection_flag: boolean;
  key_type: string;
  key_bits: number;
  signature_bits: number;
  use_pss: boolean;
  key_usage: string[];
  ext_key_usage: string[];
  ext_key_usage_oids: string[];
  use_csr_common_name: boolean;
  use_csr_sans: boolean;
  serial_number_source: string;
  ou: string[];
  organization: string[];
  country: string[];
  locality: string[];
  province: string[];
  street_address: string[];
  postal_code: string[];
  generate_lease: boolean;
  no_store: boolean;
  no_store_metadata: boolean;
  require_cn: boolean;
  cn_validations: string[];
  policy_identifiers: string[];
  basic_constraints_valid_for_non_ca: boolean;
  not_before_duration: number;
  not_after: string;
  issuer_ref: string;
  /** Legacy field, never settable; shown as false. */
  allow_token_displayname: boolean;
}

/** The request fields of `roles/:name`, with Vault's defaults. */
export const ROLE_FIELDS = defineFields({
  name: { type: 'string' },
  ttl: { type: 'duration', default: 0 },
  max_ttl: { type: 'duration', default: 0 },
  allow_localhost: { type: 'bool', default: true },
  allowed_domains: { type: 'commaList', default: [] },
  allowed_domains_template: { type: 'bool', default: false },
  allow_bare_domains: { type: 'bool', default: false },
  allow_subdomains: { type: 'bool', default: false },
  allow_glob_domains: { type: 'bool', default: false },
  allow_wildcard_certificates: { type: 'bool', default: true },
  allow_any_name: { type: 'bool', default: false },
  enforce_hostnames: { type: 'bool', default: true },
  allow_ip_sans: { type: 'bool', default: true },
  allowed_uri_sans: { type: 'commaList', default: [] },
  allowed_uri_sans_template: { type: 'bool', default: false },
  allowed_other_sans: { type: 'commaList', default: [] },
  allowed_serial_numbers: { type: 'commaList', default: [] },
  allowed_user_ids: { type: 'commaList', default: [] },
  server_flag: { type: 'bool', default: true },
  client_flag: { type: 'bool', default: true },
  code_signing_flag: { type: 'bool', default: false },
  email_protection_flag: { type: 'bool', default: false },
  key_type: { type: 'string', default: 'rsa' },
  key_bits: { type: 'int', default: 0 },
  signature_bits: { type: 'int', default: 0 },
  use_pss: { type: 'bool', default: false },
  key_usage: { type: 'commaList', default: ['DigitalSignature', 'KeyAgreement', 'KeyEncipherment'] },
  ext_key_usage: { type: 'commaList', default: [] },
  ext_key_usage_oids: { type: 'commaList', default: [] },
  use_csr_common_name: { type: 'bool', default: true },
  use_csr_sans: { type: 'bool', default: true },
  serial_number_source: { type: 'string', default: 'json-csr' },
  ...SUBJECT_NAME_FIELDS,
  generate_lease: { type: 'bool', default: false },
  no_store: { type: 'bool', default: false },
  no_store_metadata: { type: 'bool', default: false },
  require_cn: { type: 'bool', default: true },
  cn_validations: { type: 'commaList', default: ['email', 'hostname'] },
  policy_identifiers: { type: 'any', default: [] },
  basic_constraints_valid_for_non_ca: { type: 'bool', default: false },
  not_before_duration: { type: 'duration', default: 30 },
  not_after: { type: 'string', default: '' },
  issuer_ref: { type: 'string', default: 'default' },
});

type RoleFieldName = Exclude<keyof typeof ROLE_FIELDS.schema, 'name'>;
export const ROLE_FIELD_NAMES = Object.keys(ROLE_FIELDS.schema).filter((k) => k !== 'name') as RoleFieldName[];

/** A role with every field at its default (before key_bits/signature_bits resolution). */
export function defaultRoleInput(): Record<RoleFieldName, unknown> {
  const parsed = ROLE_FIELDS.parse({});
  const out = {} as Record<RoleFieldName, unknown>;
  for (const k of ROLE_FIELD_NAMES) out[k] = parsed.values[k];
  return out;
}

const DOTTED_OID = /^[0-2](\.\d+)+$/;

/**
 * Validates and normalises a complete role (all fields present) as the role write does:
 * resolves key_bits/signature_bits, checks TTLs, OIDs, other SAN patterns and
 * cn_validations. Returns the role and Vault's warnings.
 */
export function normalizeRole(input: Record<RoleFieldName, unknown>): { role: PkiRole; warnings: string[] } {
  const r = { ...input, allow_token_displayname: false } as unknown as PkiRole;
  const warnings: string[] = [];
  if (r.max_ttl > 0 && r.ttl > r.max_ttl) throw invalid('"ttl" value must be less than "max_ttl" value', 'ttl');
  if (r.ttl < 0 || r.max_ttl < 0 || r.not_before_duration < 0) throw invalid('durations must not be negative');

  r.key_type = String(r.key_type).trim().toLowerCase();
  const key = resolveKeyParams(r.key_type, r.key_bits, { allowAny: true });
  r.key_bits = key.bits;
  if (![0, 256, 384, 512].includes(r.signature_bits))
    throw invalid(`unsupported hash signature algorithm: ${r.signature_bits}`, 'signature_bits');
  if (r.key_type === 'rsa' && r.signature_bits === 0) r.signature_bits = 256;
  if (r.key_type === 'ed25519' || r.key_type === 'any') r.signature_bits = r.key_type === 'any' ? r.signature_bits : 0;

  for (const o of r.ext_key_usage_oids)
    if (!DOTTED_OID.test(o)) throw invalid(`ext_key_usage_oids value "${o}" is not a valid OID`, 'ext_key_usage_oids');
  if (!(r.allowed_other_sans.length === 1 && r.allowed_other_sans[0] === '*')) {
    for (const s of r.allowed_other_sans) parseOtherSanSpec(s, 'allowed_other_sans');
  }
  r.cn_validations = normalizeCnValidations(r.cn_validations);
  r.serial_number_source = r.serial_number_source === '' ? 'json-csr' : r.serial_number_source;
  if (r.serial_number_source !== 'json-csr' && r.serial_number_source !== 'json') {
    throw invalid(
      `serial_number_source must be "json-csr" or "json", got "${r.serial_number_source}"`,
      'serial_number_source',
    );
  }
  r.policy_identifiers = normalizePolicyIdentifiers(r.policy_identifiers);
  if (r.not_after !== '' && Number.isNaN(parseRfc3339(r.not_after))) {
    throw invalid(`failed to parse not_after "${r.not_after}": expected YYYY-MM-DDTHH:MM:SSZ`, 'not_after');
  }
  if (r.issuer_ref.trim() === '') r.issuer_ref = 'default';
  if (r.no_store && r.generate_lease) {
    r.generate_lease = false;
    warnings.push(
      'no_store is set, so generate_lease was set to false; issue and sign still give every certificate a lease',
    );
  } else if (r.generate_lease) {
    warnings.push(
      'generate_lease has no effect here: issue and sign give every certificate a lease, whatever this flag says',
    );
  }
  return { role: r, warnings };
}

/** `email`, `hostname`, or `disabled` alone; empty means both checks (reference 16.3). */
export function normalizeCnValidations(values: readonly string[]): string[] {
  const v = values.map((s) => s.trim().toLowerCase()).filter((s) => s !== '');
  if (v.length === 0) return ['email', 'hostname'];
  const seen = new Set<string>();
  for (const s of v) {
    if (s !== 'email' && s !== 'hostname' && s !== 'disabled')
      throw invalid(`cn_validations value incorrect: unknown type: ${s}`, 'cn_validations');
    if (seen.has(s)) throw invalid(`cn_validations value incorrect: duplicate value: ${s}`, 'cn_validations');
    seen.add(s);
  }
  if (seen.has('disabled') && seen.size > 1)
    throw invalid('cn_validations value incorrect: cannot specify disabled along with other values', 'cn_validations');
  return v;
}

/** A list of OIDs, or a JSON list of `{oid, notice, cps}` objects; kept as given after validation. */
export function normalizePolicyIdentifiers(v: unknown): string[] {
  let items: string[];
  if (Array.isArray(v)) items = v.map((x) => (typeof x === 'string' ? x : JSON.stringify(x)));
  else if (typeof v === 'string') {
    const t = v.trim();
    if (t.startsWith('[')) {
      try {
        const parsed = JSON.parse(t) as unknown;
        if (!Array.isArray(parsed)) throw new Error('not a list');
        items = parsed.map((x) => (typeof x === 'string' ? x : JSON.stringify(x)));
      } catch (err) {
        throw invalid(`policy_identifiers could not be parsed: ${(err as Error).message}`, 'policy_identifiers');
      }
    } else
      items =
        t === ''
          ? []
          : t
              .split(',')
              .map((s) => s.trim())
              .filter((s) => s !== '');
  } else throw invalid('policy_identifiers must be a list of OIDs', 'policy_identifiers');
  for (const p of items) parsePolicyIdentifier(p);
  return items;
}

export function parsePolicyIdentifier(p: string): { oid: string; cps?: string; notice?: string } {
  if (p.trim().startsWith('{')) {
    let o: { oid?: unknown; cps?: unknown; notice?: unknown };
    try {
      o = JSON.parse(p) as typeof o;
    } catch {
      throw invalid(`policy_identifiers entry ${p} could not be parsed`, 'policy_identifiers');
    }
    if (typeof o.oid !== 'string' || !DOTTED_OID.test(o.oid))
      throw invalid(`policy_identifiers entry ${p} has no valid oid`, 'policy_identifiers');
    return {
      oid: o.oid,
      ...(typeof o.cps === 'string' && o.cps ? { cps: o.cps } : {}),
      ...(typeof o.notice === 'string' && o.notice ? { notice: o.notice } : {}),
    };
  }
  if (!DOTTED_OID.test(p.trim()))
    throw invalid(`policy_identifiers value "${p}" is not a valid OID`, 'policy_identifiers');
  return { oid: p.trim() };
}

/** Milliseconds of an RFC 3339 UTC timestamp, NaN when it does not parse. */
export function parseRfc3339(s: string): number {
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(s.trim())) return NaN;
  return Date.parse(s.trim());
}

/** Role `data` as the read endpoint shows it (reference 8.3). */
export function roleData(r: PkiRole): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(r).sort()) out[k] = (r as unknown as Record<string, unknown>)[k];
  return out;
}

/** Vault's name pattern for roles: word characters, with `-` and `.` inside (reference 8.1 paths). */
const ROLE_NAME = /^[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_])?$/;

/** Role names are one path segment matching Vault's name pattern (elsewhere Vault finds no route: 404). */
export function validateRoleName(name: string): void {
  if (!ROLE_NAME.test(name)) {
    throw invalid(`invalid role name "${name}": use letters, digits and _, with - or . only between them`, 'name');
  }
}
