import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dbKinds, createTestDb } from '../../../test/support/test-db.js';
import type { TestDatabase } from '../../../test/support/test-db.js';
import { timeOrderedUuid, uuid } from '../../shared/ids.js';
import { AuditEventRepo } from './audit-event-repo.js';
import type { AuditEvent } from './audit-event.js';

function event(organizationId: string, actorDescription: string, at: number): AuditEvent {
  return {
    id: timeOrderedUuid(),
    timestamp: new Date(1_700_000_000_000 + at),
    organizationId,
    organization: 'acme',
    workspaceId: null,
    actorType: 'user',
    actorId: 'user-1',
    actorDescription,
    tokenId: 'at-1',
    action: 'read',
    resourceType: 'state_version',
    resourceId: null,
    outcome: 'success',
    status: 200,
    sourceIp: '127.0.0.1',
    requestId: uuid(),
  };
}

for (const kind of dbKinds()) {
  describe(`audit event rows [${kind}]`, () => {
    let tdb: TestDatabase;
    before(async () => (tdb = await createTestDb(kind)));
    after(async () => tdb.cleanup());

    it('stores a group of events as they were, a lone UTF-16 surrogate replaced', async () => {
      const repo = new AuditEventRepo({ db: tdb.db.kysely, kind });
      const org = uuid();
      const names = ['alice', 'quote " and \\u00e9 and é', 'lone \ud800 high', 'pair 😀 kept'];
      await repo.insertMany(names.map((n, i) => event(org, n, i)));
      const { items, total } = await repo.page(org, undefined, 0, 10);
      assert.equal(total, names.length);
      const got = items.map((e) => e.actorDescription);
      assert.deepEqual([got[0], got[1], got[3]], ['alice', 'quote " and \\u00e9 and é', 'pair 😀 kept']);
      // Stored, not refused: the surrogate replaced (by one U+FFFD on PostgreSQL; SQLite's UTF-8 gives one per byte).
      assert.match(got[2] as string, /^lone \ufffd+ high$/);
      assert.equal(items[0]?.status, 200);
      assert.equal(items[0]?.timestamp.getTime(), 1_700_000_000_000);
    });
  });
}
