import type { Db } from '../../db/database.js';
import type { UnitGroup, UnitsOfWork } from '../../db/unit-of-work.js';
import type { ContentSealing } from '../../secrets/content-cipher.js';
import { StateBlobRepo } from './state-blob-repo.js';
import { StateChanges } from './state-changes.js';
import { StateOutputRepo } from './state-output-repo.js';
import { StateVersionRepo } from './state-version-repo.js';

/** Most creates and uploads one group commit carries. */
const MAX_GROUP = 256;

/**
 * PostgreSQL: group transactions of creates that run at once. One: the creates that arrive
 * meanwhile form a larger next group, which cost less per create than two or four smaller
 * groups overlapping (decision 0053).
 */
const PG_CREATE_GROUPS_IN_FLIGHT = 1;

/** The state tables' repositories (one owner per table) and the units of work that write them. */
export interface StateRepos {
  /** `tfe_state_versions` and `tfe_state_heads`. */
  versions: StateVersionRepo;
  /** `tfe_state_version_outputs`. */
  outputs: StateOutputRepo;
  /** `tfe_state_blobs`. */
  blobs: StateBlobRepo;
  /** Where the writes of `versions` and `outputs` report the workspaces they touched. */
  changes: StateChanges;
  /**
   * Read-write units (maintenance, backing-data changes, extraction results). Like `commits`,
   * they report the workspaces they touched again once they have ended (StateChanges).
   */
  units: Pick<UnitsOfWork, 'readWrite'>;
  /**
   * Creates and uploads: short read-write units that share commits with concurrent ones on
   * SQLite (one writer, one fsync per commit); each its own transaction on PostgreSQL,
   * which groups commits itself (decisions 0015, 0016, 0050), except the creates of
   * `createGroups`.
   */
  commits: UnitGroup;
  /**
   * PostgreSQL: finalized creates with inline content are written by group transactions,
   * a few statements for all the creates that arrived together (decision 0053). Absent on
   * SQLite, where `commits` shares the commit and a statement costs no round trip.
   */
  createGroups?: { batches: UnitsOfWork['batches']; options: { maxBatch: number; inFlight: number } };
}

export function stateRepos(db: Pick<Db, 'kysely' | 'units' | 'kind'>, sealing?: ContentSealing): StateRepos {
  const changes = new StateChanges();
  const group = db.units.group({ maxBatch: MAX_GROUP, grouped: db.kind === 'sqlite' });
  const outputs = new StateOutputRepo({ db: db.kysely, changes, ...(sealing ? { sealing } : {}) });
  return {
    versions: new StateVersionRepo({ db: db.kysely, outputs, changes }),
    outputs,
    blobs: new StateBlobRepo({ db: db.kysely, ...(sealing ? { sealing } : {}) }),
    changes,
    units: { readWrite: (fn) => changes.reportingAfter(() => db.units.readWrite(fn)) },
    commits: {
      readWrite: (fn) => changes.reportingAfter(() => group.readWrite(fn)),
      drain: () => group.drain(),
    },
    ...(db.kind === 'postgres'
      ? {
          createGroups: {
            batches: (commit, opts) => db.units.batches(commit, opts),
            options: { maxBatch: MAX_GROUP, inFlight: PG_CREATE_GROUPS_IN_FLIGHT },
          },
        }
      : {}),
  };
}
