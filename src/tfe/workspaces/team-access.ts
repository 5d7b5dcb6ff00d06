/**
 * Team access to a workspace (`team-workspaces`, reference 8.2,
 * https://developer.hashicorp.com/terraform/cloud-docs/api-docs/team-access): a fixed
 * level, or `custom` with HCP's permission fields. Only state-versions and
 * workspace-locking grant anything here (no runs, variables or policies exist); the
 * others are kept and read back as HCP shows them.
 */
import { invalid } from '../../shared/errors.js';
import { STATE_VERSIONS_ACCESS, TEAM_ACCESS_LEVELS } from '../identity/permissions.js';
import type { StateVersionsAccess, TeamAccessLevel } from '../identity/permissions.js';

export type RunsAccess = 'read' | 'plan' | 'apply';
export type VariablesAccess = 'none' | 'read' | 'write';
export type SentinelMocksAccess = 'none' | 'read';

/** The permission fields: editable only with access `custom`, implied by the level otherwise. */
export interface TeamAccessFields {
  runs: RunsAccess;
  variables: VariablesAccess;
  stateVersions: StateVersionsAccess;
  sentinelMocks: SentinelMocksAccess;
  workspaceLocking: boolean;
  runTasks: boolean;
}

export interface TeamAccess extends TeamAccessFields {
  /** `tws-…` */
  id: string;
  teamId: string;
  workspaceId: string;
  access: TeamAccessLevel;
  createdAt: Date;
}

/** A create or update request: the fields it names (routes check JSON types). */
export interface TeamAccessInput {
  access?: string;
  runs?: string;
  variables?: string;
  stateVersions?: string;
  sentinelMocks?: string;
  workspaceLocking?: boolean;
  runTasks?: boolean;
}

type Stored = Pick<TeamAccess, 'access'> & TeamAccessFields;

/** The attribute of each field, for errors, and the values a string field takes. */
const FIELDS: Array<{ key: keyof TeamAccessFields; attribute: string; values?: readonly string[] }> = [
  { key: 'runs', attribute: 'runs', values: ['read', 'plan', 'apply'] },
  { key: 'variables', attribute: 'variables', values: ['none', 'read', 'write'] },
  { key: 'stateVersions', attribute: 'state-versions', values: STATE_VERSIONS_ACCESS },
  { key: 'sentinelMocks', attribute: 'sentinel-mocks', values: ['none', 'read'] },
  { key: 'workspaceLocking', attribute: 'workspace-locking' },
  { key: 'runTasks', attribute: 'run-tasks' },
];

/** HCP's defaults for a custom level's fields that a request leaves out. */
const CUSTOM_DEFAULTS: TeamAccessFields = {
  runs: 'read',
  variables: 'none',
  stateVersions: 'none',
  sentinelMocks: 'none',
  workspaceLocking: false,
  runTasks: false,
};

const WRITE_FIELDS: TeamAccessFields = {
  runs: 'apply',
  variables: 'write',
  stateVersions: 'write',
  sentinelMocks: 'read',
  workspaceLocking: true,
  runTasks: false,
};

/**
 * What a fixed level shows in the permission fields (HCP's read-only values): `admin`
 * shows every field at its full value.
 */
export function impliedFields(access: Exclude<TeamAccessLevel, 'custom'>): TeamAccessFields {
  switch (access) {
    case 'read':
      return { ...CUSTOM_DEFAULTS, variables: 'read', stateVersions: 'read' };
    case 'plan':
      return { ...CUSTOM_DEFAULTS, runs: 'plan', variables: 'read', stateVersions: 'read' };
    case 'write':
      return WRITE_FIELDS;
    case 'admin':
      return { ...WRITE_FIELDS, runTasks: true };
  }
}

/**
 * Validates and completes a request into the stored level and fields. A fixed level with
 * any permission field is refused, as HCP documents ("can only be used when access is
 * custom"), rather than silently overriding what was asked; a custom level keeps each
 * field as given, the rest as they were (or HCP's defaults).
 */
export function resolveTeamAccess(input: TeamAccessInput, current?: Stored): Stored {
  const access = input.access ?? current?.access;
  if (access === undefined) throw invalid('access is required', '/data/attributes/access');
  if (!(TEAM_ACCESS_LEVELS as readonly string[]).includes(access)) {
    throw invalid(`access must be one of ${TEAM_ACCESS_LEVELS.join(', ')}`, '/data/attributes/access');
  }
  const level = access as TeamAccessLevel;
  const given = FIELDS.filter((f) => input[f.key] !== undefined);
  for (const f of given) {
    const v = input[f.key];
    if (f.values && !f.values.includes(v as string)) {
      throw invalid(`${f.attribute} must be one of ${f.values.join(', ')}`, `/data/attributes/${f.attribute}`);
    }
  }
  if (level !== 'custom') {
    const first = given[0];
    if (first) {
      throw invalid(
        `${first.attribute} can only be set with access "custom" (access "${level}" implies its own permissions)`,
        `/data/attributes/${first.attribute}`,
      );
    }
    return { access: level, ...impliedFields(level) };
  }
  const base = current?.access === 'custom' ? current : CUSTOM_DEFAULTS;
  const out: Stored = { access: 'custom', ...pickFields(base) };
  for (const f of given) (out as unknown as Record<string, unknown>)[f.key] = input[f.key];
  return out;
}

function pickFields(f: TeamAccessFields): TeamAccessFields {
  return {
    runs: f.runs,
    variables: f.variables,
    stateVersions: f.stateVersions,
    sentinelMocks: f.sentinelMocks,
    workspaceLocking: f.workspaceLocking,
    runTasks: f.runTasks,
  };
}
