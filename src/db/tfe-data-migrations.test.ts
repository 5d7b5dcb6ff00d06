import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createDatabaseUrl, dbKinds } from '../../test/support/test-db.js';
import { openDatabase } from './database.js';
import type { Db } from './database.js';
import { migrateTo, migrateToLatest } from './migrate.js';

const AT = '2026-01-01T00:00:00.000Z';

/** A state version row in the shape every migration since 0004 accepts. */
function versionRow(id: string, workspaceId: string, seq: number, status: string) {
  return {
    id,
    workspace_id: workspaceId,
    seq,
    serial: seq,
    md5: '0'.repeat(32),
    status,
    state_sha256: status === 'finalized' ? 'a'.repeat(64) : null,
    resources_processed: 0,
    created_at: AT,
  };
}

/**
 * Data migrations of the state service, each run against rows written in the schema it
 * starts from, on both databases.
 */
for (const kind of dbKinds()) {
  describe(`data migrations of the state service [${kind}]`, () => {
    let db: Db;
    let drop: () => Promise<void>;
    before(async () => {
      const url = await createDatabaseUrl(kind);
      drop = url.drop;
      db = openDatabase({ url: url.url, poolSize: 2 });
    });
    after(async () => {
      await db.destroy();
      await drop();
    });

    it('0014: a workspace whose current version is pending gets its newest finalized version back', async () => {
      await migrateTo(db, '0013-pki-lease-token-index');
      const k = db.kysely;
      // ws-a: finalized 1, 2, then pending 3 (current); ws-b: only a pending version (current);
      // ws-c: finalized 1 current, untouched.
      await k
        .insertInto('tfe_state_versions')
        .values([
          versionRow('sv-a1', 'ws-a', 1, 'finalized'),
          versionRow('sv-a2', 'ws-a', 2, 'finalized'),
          versionRow('sv-a3', 'ws-a', 3, 'pending'),
          versionRow('sv-b1', 'ws-b', 1, 'pending'),
          versionRow('sv-c1', 'ws-c', 1, 'finalized'),
        ])
        .execute();
      await k
        .insertInto('tfe_state_heads')
        .values([
          { workspace_id: 'ws-a', current_id: 'sv-a3', head_seq: 3, version_count: 3 },
          { workspace_id: 'ws-b', current_id: 'sv-b1', head_seq: 1, version_count: 1 },
          { workspace_id: 'ws-c', current_id: 'sv-c1', head_seq: 1, version_count: 1 },
        ])
        .execute();
      await migrateToLatest(db);
      const heads = await k.selectFrom('tfe_state_heads').select(['workspace_id', 'current_id']).execute();
      assert.deepEqual(
        Object.fromEntries(
          heads.map((h: { workspace_id: string; current_id: string | null }) => [h.workspace_id, h.current_id]),
        ),
        { 'ws-a': 'sv-a2', 'ws-b': null, 'ws-c': 'sv-c1' },
      );
    });
  });
}
