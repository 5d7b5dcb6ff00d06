import { decodeBase64Canonical } from '../../shared/base64.js';
import { DomainError, conflict, invalid, notFound } from '../../shared/errors.js';
import type { RawJson } from '../../shared/raw-json.js';
import type { StateInspection } from './state-file.js';

/**
 * State versions: pure types and rules. Statuses and transitions follow the service
 * specification ("States and transitions"); the serial/lineage/MD5 checks follow the
 * state API reference, section 4.3.
 */

export const STATE_VERSION_STATUSES = [
  'pending',
  'finalized',
  'discarded',
  'backing_data_soft_deleted',
  'backing_data_permanently_deleted',
] as const;

export type StateVersionStatus = (typeof STATE_VERSION_STATUSES)[number];

export interface StateVersionCreator {
  kind: 'user' | 'team';
  id: string;
}

/** One state version record (metadata; the bytes live in the blob store). */
export interface StateVersion {
  /** `sv-…` */
  id: string;
  workspaceId: string;
  /** Position in the workspace's history, 1, 2, 3 … without gaps. */
  seq: number;
  serial: number;
  lineage: string | null;
  /** Lowercase hex MD5 of the raw state (claimed by the client while pending). */
  md5: string;
  status: StateVersionStatus;
  /** Bytes of the raw state; null while pending. */
  size: number | null;
  /** The state file's `version`. */
  stateFormatVersion: number | null;
  terraformVersion: string | null;
  stateSha256: string | null;
  jsonSha256: string | null;
  /** Sealed one-time upload secrets, present until the matching content arrives. */
  uploadTokenSealed: string | null;
  jsonUploadTokenSealed: string | null;
  uploadExpiresAt: Date | null;
  resourcesProcessed: boolean;
  /** Set when extraction could not read the content; the version is processed all the same. */
  processingError: string | null;
  /** The extracted lists as stored (JSON text), embedded in answers without being parsed (RawJson). */
  resources: RawJson | null;
  modules: RawJson | null;
  providers: RawJson | null;
  billableRumCount: number | null;
  createdBy: StateVersionCreator | null;
  runId: string | null;
  rollbackOfId: string | null;
  deleteOlderThanNDays: number | null;
  softDeletedAt: Date | null;
  createdAt: Date;
}

/** A state version output as stored (values are JSON). */
export interface StateVersionOutput {
  /** `wsout-…` */
  id: string;
  stateVersionId: string;
  name: string;
  sensitive: boolean;
  type: string;
  detailedType: unknown;
  value: unknown;
}

/** What the client claims about the state it creates (create request or upload). */
export interface StateClaims {
  serial: number;
  md5: string;
  lineage: string | null;
}

/** The fields read from the state file itself. */
export interface StateFileFacts {
  serial: number;
  lineage: string;
}

export const MAX_SERIAL = Number.MAX_SAFE_INTEGER;

export function isMd5Hex(s: string): boolean {
  return /^[0-9a-fA-F]{32}$/.test(s);
}

/**
 * Strict base64 (standard alphabet, padded, as Go's encoder writes it); null when the text
 * is not base64 (Node's decoder alone would skip bad characters: decodeBase64Canonical).
 */
export const decodeBase64Strict: (text: string) => Buffer | null = decodeBase64Canonical;

/**
 * Compares a new version with the workspace's current one (reference 4.3, step 5):
 * a lower serial, the same serial with other content, or another lineage are
 * conflicts unless `force` is set. Identical re-uploads are accepted.
 */
export function checkAgainstCurrent(current: StateClaims | null, next: StateClaims, force: boolean): void {
  if (force || current === null) return;
  if (next.serial < current.serial) {
    throw conflict(
      `The serial provided in the state file (${next.serial}) is not greater than the serial currently known ` +
        `remotely (${current.serial})`,
      '/data/attributes/serial',
    );
  }
  if (next.serial === current.serial && next.md5.toLowerCase() !== current.md5.toLowerCase()) {
    throw conflict(
      'The MD5 hash of the state provided does not match what is currently known for the same serial number',
      '/data/attributes/md5',
    );
  }
  if (next.lineage !== null && current.lineage !== null && next.lineage !== current.lineage) {
    throw conflict(
      'The lineage provided in the state file does not match the value currently known by the server',
      '/data/attributes/lineage',
    );
  }
}

/**
 * The service specification requires `serial` to equal the serial inside the raw state
 * and `lineage`, when given, to match. HCP itself accepts mismatches, so a setting
 * (`state_allow_serial_mismatch`) turns the check off.
 */
export function checkFileMatchesClaims(file: StateFileFacts, claims: StateClaims, allowMismatch: boolean): void {
  if (allowMismatch) return;
  if (file.serial !== claims.serial) {
    throw invalid(
      `serial ${claims.serial} does not match the serial ${file.serial} inside the state`,
      '/data/attributes/serial',
    );
  }
  if (claims.lineage !== null && claims.lineage !== file.lineage) {
    throw invalid(
      `lineage "${claims.lineage}" does not match the lineage "${file.lineage}" inside the state`,
      '/data/attributes/lineage',
    );
  }
}

/** The settings that decide which state content is accepted. */
export interface StateContentRules {
  allowSerialMismatch: boolean;
  /** Accept OpenTofu's encrypted state envelopes (`state_allow_encrypted`). */
  allowEncrypted: boolean;
}

/** What is recorded about accepted state content (null for an encrypted envelope). */
export interface AcceptedStateContent {
  formatVersion: 3 | 4 | null;
  terraformVersion: string | null;
}

/**
 * The checks every new state content passes, inline or uploaded, after the whole
 * document was inspected (the MD5 is checked separately): a Terraform state of format
 * 3 or 4 whose serial and lineage match the claims, or, when allowed, an encrypted
 * envelope, which is opaque, so only its MD5 can be checked.
 */
export function acceptStateContent(
  inspection: StateInspection,
  claims: StateClaims,
  rules: StateContentRules,
): AcceptedStateContent {
  if (inspection.kind === 'invalid')
    throw invalid(`state is not a valid Terraform state: ${inspection.error}`, '/data/attributes/state');
  if (inspection.kind === 'encrypted') {
    if (!rules.allowEncrypted) {
      throw invalid(
        'state is an OpenTofu encrypted state (encrypted_data/encryption_version), which this server does not ' +
          'accept (state_allow_encrypted is false)',
        '/data/attributes/state',
      );
    }
    return { formatVersion: null, terraformVersion: null };
  }
  checkFileMatchesClaims(inspection.header, claims, rules.allowSerialMismatch);
  return { formatVersion: inspection.header.version, terraformVersion: inspection.header.terraformVersion };
}

export function checkMd5(actualHex: string, claims: StateClaims): void {
  if (actualHex.toLowerCase() !== claims.md5.toLowerCase()) {
    throw invalid(`md5 ${claims.md5} does not match the MD5 of the state (${actualHex})`, '/data/attributes/md5');
  }
}

export type BackingDataAction = 'soft_delete_backing_data' | 'restore_backing_data' | 'permanently_delete_backing_data';

export const BACKING_DATA_ACTIONS: readonly BackingDataAction[] = [
  'soft_delete_backing_data',
  'restore_backing_data',
  'permanently_delete_backing_data',
];

/** Marks a refused backing-data transition; routes answer it with 400 as the specification says. */
export const TRANSITION_NOT_ALLOWED = 'transition_not_allowed';

function notAllowed(detail: string): DomainError {
  return new DomainError('invalid', `transition not allowed: ${detail}`, { meta: { reason: TRANSITION_NOT_ALLOWED } });
}

export function isTransitionNotAllowed(err: unknown): boolean {
  return err instanceof DomainError && err.meta?.reason === TRANSITION_NOT_ALLOWED;
}

/**
 * The self-hosted backing-data transitions (specification, "States and transitions"):
 *   finalized, not current        --soft delete-->      backing_data_soft_deleted
 *   backing_data_soft_deleted     --restore-->          finalized
 *   backing_data_soft_deleted,
 *     not current                 --permanent delete--> backing_data_permanently_deleted
 * Restore "applies to any state version not in backing_data_permanently_deleted": on a
 * version whose data is present it changes nothing. Everything else is refused.
 */
export function backingDataTransition(
  action: BackingDataAction,
  status: StateVersionStatus,
  isCurrent: boolean,
): StateVersionStatus {
  switch (action) {
    case 'soft_delete_backing_data':
      if (status !== 'finalized')
        throw notAllowed(`only a finalized state version can be soft deleted (status is ${status})`);
      if (isCurrent) throw notAllowed('the current state version cannot be soft deleted');
      return 'backing_data_soft_deleted';
    case 'restore_backing_data':
      if (status === 'backing_data_permanently_deleted') throw notAllowed('the backing data was permanently deleted');
      return status === 'backing_data_soft_deleted' ? 'finalized' : status;
    case 'permanently_delete_backing_data':
      if (status !== 'backing_data_soft_deleted') {
        throw notAllowed(`only soft-deleted backing data can be permanently deleted (status is ${status})`);
      }
      if (isCurrent) throw notAllowed('the current state version cannot be permanently deleted');
      return 'backing_data_permanently_deleted';
  }
}

/** Whether the raw state of a version in this status can be read. */
export function backingDataReadable(status: StateVersionStatus): boolean {
  return status === 'finalized';
}

/** `filter[status]`: a comma-separated list of statuses; unknown values are invalid. */
export function parseStatusFilter(raw: string | undefined): StateVersionStatus[] | undefined {
  if (raw === undefined || raw === '') return undefined;
  const out: StateVersionStatus[] = [];
  for (const part of raw.split(',')) {
    const s = part.trim();
    if (!(STATE_VERSION_STATUSES as readonly string[]).includes(s)) {
      throw invalid(
        `filter[status] must be one of ${STATE_VERSION_STATUSES.join(', ')}; got "${s}"`,
        '/query/filter[status]',
      );
    }
    out.push(s as StateVersionStatus);
  }
  return out;
}

/** Retention of old state versions (specification, Limits: the free-tier rule). */
export interface RetentionPolicy {
  /** Keep at least this many most recent states (versions holding state data) across all workspaces. */
  keepLatest: number;
  /** Versions beyond those are deleted once older than this many days (0 = never). */
  maxAgeDays: number;
}

/** What retention needs to know about one version. */
export interface RetentionFacts {
  createdAt: Date;
  isCurrent: boolean;
  /** The version references state content (finalized or soft deleted); pending, discarded and purged ones do not. */
  holdsState: boolean;
  /** A newer version of the same workspace holds state. */
  newerStateInWorkspace: boolean;
  /** Versions holding state, in any workspace, created after this one. */
  newerStates: number;
}

/**
 * Whether retention may remove a version. Kept: current versions; the newest version of
 * each workspace that holds state (a newer pending or discarded version has nothing to
 * restore from); everything created since the `keepLatest`-th newest state, counting
 * only versions that hold state; and whatever is younger than `maxAgeDays`.
 */
export function retentionMayDelete(v: RetentionFacts, policy: RetentionPolicy, now: Date): boolean {
  if (policy.maxAgeDays <= 0) return false;
  if (v.isCurrent) return false;
  if (v.holdsState && !v.newerStateInWorkspace) return false;
  if (v.newerStates < policy.keepLatest) return false;
  return now.getTime() - v.createdAt.getTime() > policy.maxAgeDays * 86_400_000;
}

/**
 * Reads of what a version's state content holds, its outputs included, fail once the
 * backing data is soft or permanently deleted, with the answer the state download gives
 * (reference 4.8: downloads of soft-deleted data return 404).
 */
export function assertBackingDataNotDeleted(v: { id: string; status: StateVersionStatus }): void {
  if (v.status === 'backing_data_soft_deleted')
    throw notFound(`the backing data of state version ${v.id} is soft deleted; restore it to read it`);
  if (v.status === 'backing_data_permanently_deleted')
    throw notFound(`the backing data of state version ${v.id} was permanently deleted`);
}

/** Whether the outputs of a version in this status may be shown. */
export function outputsReadable(status: StateVersionStatus): boolean {
  return status !== 'backing_data_soft_deleted' && status !== 'backing_data_permanently_deleted';
}
