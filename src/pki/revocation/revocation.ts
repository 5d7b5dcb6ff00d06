/**
 * Revocation rules: the CRL configuration (config/crl) with its defaults and checks, the
 * revocation status of a serial, which issuers share one CRL, and when CRLs are rebuilt.
 * https://developer.hashicorp.com/vault/api-docs/secret/pki#set-revocation-configuration
 * https://developer.hashicorp.com/vault/api-docs/secret/pki#revoke-certificate
 */
import { invalid } from '../../shared/errors.js';
import { parseDurationSeconds } from '../../shared/durations.js';
import type { PkiIssuer } from '../issuers/issuer.js';

/** config/crl. Durations keep the text the operator wrote, as Vault stores and returns them. */
export interface CrlConfig {
  expiry: string;
  disable: boolean;
  ocspDisable: boolean;
  ocspExpiry: string;
  autoRebuild: boolean;
  autoRebuildGracePeriod: string;
  enableDelta: boolean;
  deltaRebuildInterval: string;
  crossClusterRevocation: boolean;
  unifiedCrl: boolean;
  unifiedCrlOnExistingPaths: boolean;
  /** Most entries a CRL may hold; -1 = no limit. */
  maxCrlEntries: number;
}

export const DEFAULT_CRL_CONFIG: Readonly<CrlConfig> = Object.freeze({
  expiry: '72h',
  disable: false,
  ocspDisable: false,
  ocspExpiry: '12h',
  autoRebuild: false,
  autoRebuildGracePeriod: '12h',
  enableDelta: false,
  deltaRebuildInterval: '15m',
  crossClusterRevocation: false,
  unifiedCrl: false,
  unifiedCrlOnExistingPaths: false,
  maxCrlEntries: 100_000,
});

export type CrlConfigPatch = Partial<CrlConfig>;

/** Seconds of the config's durations. */
export interface CrlTimes {
  expirySeconds: number;
  ocspExpirySeconds: number;
  gracePeriodSeconds: number;
  deltaIntervalSeconds: number;
}

export function crlTimes(c: CrlConfig): CrlTimes {
  return {
    expirySeconds: parseDurationSeconds(c.expiry, 'expiry'),
    ocspExpirySeconds: parseDurationSeconds(c.ocspExpiry, 'ocsp_expiry'),
    gracePeriodSeconds: parseDurationSeconds(c.autoRebuildGracePeriod, 'auto_rebuild_grace_period'),
    deltaIntervalSeconds: parseDurationSeconds(c.deltaRebuildInterval, 'delta_rebuild_interval'),
  };
}

/** Duration fields must parse; a leading minus is refused with Vault's wording for ocsp_expiry. */
function checkDuration(field: string, v: string): void {
  if (v.trim().startsWith('-')) throw invalid(`${field} must be greater than or equal to 0`, field);
  parseDurationSeconds(v, field);
}

/**
 * Applies a partial config/crl write (only supplied keys change) and checks the result.
 * `rebuild` tells whether the change forces a full CRL rebuild: `disable` changed,
 * auto-rebuild turned off, or delta CRLs toggled (reference 9.3).
 */
export function applyCrlConfig(current: CrlConfig, patch: CrlConfigPatch): { config: CrlConfig; rebuild: boolean } {
  const next: CrlConfig = { ...current };
  for (const [k, v] of Object.entries(patch) as [keyof CrlConfig, unknown][]) {
    if (v === undefined) continue;
    if (k === 'maxCrlEntries') {
      // -1 disables the limit; 0 and other negatives keep the current value.
      const n = v as number;
      if (n > 0 || n === -1) next.maxCrlEntries = n;
      continue;
    }
    (next as unknown as Record<string, unknown>)[k] = v;
  }
  for (const [field, v] of [
    ['expiry', next.expiry],
    ['ocsp_expiry', next.ocspExpiry],
    ['auto_rebuild_grace_period', next.autoRebuildGracePeriod],
    ['delta_rebuild_interval', next.deltaRebuildInterval],
  ] as const)
    checkDuration(field, v);
  const t = crlTimes(next);
  if (t.expirySeconds <= 0) throw invalid(`CRL expiry must be a positive duration, got ${next.expiry}`, 'expiry');
  if (next.autoRebuild && t.gracePeriodSeconds >= t.expirySeconds) {
    throw invalid(
      `CRL auto-rebuilding grace period (${next.autoRebuildGracePeriod}) must be strictly shorter than CRL ` +
        `expiry (${next.expiry})`,
      'auto_rebuild_grace_period',
    );
  }
  if (next.enableDelta && !next.autoRebuild) {
    throw invalid(
      'Delta CRLs cannot be enabled when auto rebuilding is disabled as the complete CRL is always regenerated!',
      'enable_delta',
    );
  }
  if (next.enableDelta && t.deltaIntervalSeconds >= t.expirySeconds) {
    throw invalid(
      `CRL delta rebuild window (${next.deltaRebuildInterval}) must be strictly shorter than CRL ` +
        `expiry (${next.expiry})`,
      'delta_rebuild_interval',
    );
  }
  if (next.enableDelta && t.deltaIntervalSeconds <= 0)
    throw invalid('delta_rebuild_interval must be a positive duration', 'delta_rebuild_interval');
  if (next.unifiedCrl) throw invalid('unified_crl can only be enabled on Vault Enterprise', 'unified_crl');
  if (next.unifiedCrlOnExistingPaths)
    throw invalid(
      'unified_crl_on_existing_paths cannot be enabled if unified_crl is disabled',
      'unified_crl_on_existing_paths',
    );
  if (next.crossClusterRevocation)
    throw invalid('cross-cluster revocation can only be enabled on Vault Enterprise', 'cross_cluster_revocation');
  const rebuild =
    next.disable !== current.disable ||
    (current.autoRebuild && !next.autoRebuild) ||
    next.enableDelta !== current.enableDelta;
  return { config: next, rebuild };
}

/** Where a serial stands, for cert reads, OCSP and CRL tooling. */
export interface RevocationStatus {
  /** Storage-form lowercase hex. */
  serial: string;
  /** `unknown`: the mount holds no certificate with this serial (and no issuer has it). */
  status: 'good' | 'revoked' | 'unknown';
  /** The issuer the certificate belongs to ('' when unknown). */
  issuerId: string;
  revokedAt: Date | null;
  notAfter: Date | null;
}

/** The answer of revoke / revoke-with-key / a lease revocation. */
export type RevokeOutcome =
  | { kind: 'revoked'; serial: string; revokedAt: Date; issuerId: string; newlyRevoked: boolean }
  /** Expired certificates are not added to CRLs; Vault answers 200 with only a warning. */
  | { kind: 'expired'; serial: string; warning: string };

export type CrlKind = 'complete' | 'delta';

/** One CRL as stored and served. */
export interface StoredCrl {
  mountId: string;
  issuerId: string;
  kind: CrlKind;
  crlNumber: number;
  baseCrlNumber: number | null;
  thisUpdate: Date;
  nextUpdate: Date;
  watermark: Date;
  entryCount: number;
  der: Buffer;
}

/**
 * Issuers that share a subject and a key issue certificates a relying party cannot tell
 * apart, so they share one CRL (Vault's "CRL identifier"): the same list, signed once,
 * served under each of their ids. Only issuers with a key in the mount and the
 * crl-signing usage get a CRL; within a group the newest such issuer signs.
 */
export interface CrlGroup {
  /** Every issuer of the group (ids in creation order). */
  issuerIds: string[];
  /** The issuer whose key and name sign the group's CRLs. */
  signer: PkiIssuer;
}

export function crlGroups(issuers: readonly PkiIssuer[]): CrlGroup[] {
  const byIdentity = new Map<string, PkiIssuer[]>();
  for (const i of [...issuers].sort((a, b) => a.seq - b.seq)) {
    const key = `${i.subjectDer.toString('hex')}|${i.publicKeySha256}`;
    const list = byIdentity.get(key);
    if (list) list.push(i);
    else byIdentity.set(key, [i]);
  }
  const groups: CrlGroup[] = [];
  for (const members of byIdentity.values()) {
    const signers = members.filter((i) => i.keyId !== '' && i.usage.includes('crl-signing'));
    const signer = signers[signers.length - 1];
    if (signer) groups.push({ issuerIds: members.map((i) => i.id), signer });
  }
  return groups;
}

/**
 * Revoked issuers listed on a group's CRL: each revoked issuer whose parent (the next
 * issuer of its computed chain) belongs to the group. A root is its own parent and is
 * never listed (reference 5.2: an issuer cannot be added to its own CRL).
 */
export function revokedIssuerEntries(
  issuers: readonly PkiIssuer[],
  group: CrlGroup,
): { serial: string; revokedAt: Date }[] {
  const members = new Set(group.issuerIds);
  const out: { serial: string; revokedAt: Date }[] = [];
  for (const i of issuers) {
    if (!i.revokedAt || members.has(i.id)) continue;
    const parent = i.caChain[1];
    if (parent !== undefined && members.has(parent)) out.push({ serial: i.serial, revokedAt: i.revokedAt });
  }
  return out;
}

/**
 * Complete CRLs read revocations committed before they started; one stamped a little
 * earlier by another transaction (or node) may commit after that read. A delta CRL
 * therefore lists every revocation stamped from this long before its base was built.
 */
export const DELTA_OVERLAP_SECONDS = 10;

/** When an auto-rebuilt complete CRL is due again: its nextUpdate less the grace period. */
export function autoRebuildDue(nextUpdate: Date, t: CrlTimes): Date {
  return new Date(nextUpdate.getTime() - t.gracePeriodSeconds * 1000);
}

/**
 * The fields `revoke` answers with (reference 5.1). The RFC 3339 form has millisecond
 * precision, as every other time of this API (cert/:serial, issuer reads) has.
 */
export function revocationTimeFields(at: Date): { revocation_time: number; revocation_time_rfc3339: string } {
  return { revocation_time: Math.floor(at.getTime() / 1000), revocation_time_rfc3339: at.toISOString() };
}

/** Hash size and padding of an issuer's revocation_signature_algorithm ('' = the key's default). */
export function crlSignatureOptions(alg: string): { signatureBits?: number; usePss?: boolean } {
  const m = /^SHA(256|384|512)WithRSA(PSS)?$/i.exec(alg) ?? /^ECDSAWithSHA(256|384|512)$/i.exec(alg);
  if (!m) return {};
  return { signatureBits: Number(m[1]), usePss: m[2] !== undefined };
}

/** RFC 3339 with nanoseconds as Go prints it (`2026-01-01T00:00:00.123Z`, trailing zeros dropped). */
export function rfc3339Nano(at: Date): string {
  return at.toISOString().replace(/\.?0+Z$/, 'Z');
}
