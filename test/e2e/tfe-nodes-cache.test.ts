import { it } from 'node:test';
import assert from 'node:assert/strict';
import { openDatabase } from '../../src/db/database.js';
import { createTestDb } from '../support/test-db.js';
import { describeWithServer, startSecondNode } from '../support/test-server.js';
import { waitFor } from '../support/wait.js';
import { call, createInline, workspace } from './tfe-state-versions-fixture.js';

const SEVERAL_NODES = 'PostgreSQL only: several nodes share one database';

/**
 * Nodes sharing one PostgreSQL database keep the current state version in memory and drop it when another node
 * changes it (change notifications, decision 0048): the cache never expires by itself, so only the notification
 * can make the second node see the new version.
 */
describeWithServer('in-memory caches of several nodes', (srv, kind) => {
  const skip = kind !== 'postgres' ? SEVERAL_NODES : false;

  it('a new current version written through one node is served by the other', { skip }, async () => {
    const node2 = await startSecondNode(srv);
    try {
      const f = await workspace(srv);
      await createInline(srv, f, 1);
      const serialOn = async (url: string) => {
        const r = await call({ ...srv, url }, 'GET', `/api/v2/workspaces/${f.wsId}/current-state-version`);
        assert.equal(r.status, 200, r.text);
        return r.json.data.attributes.serial as number;
      };
      // Node 2 reads (and keeps) serial 1; node 1 writes serial 2 and, later, serial 3.
      assert.equal(await serialOn(node2.url), 1);
      assert.equal(await serialOn(node2.url), 1);
      await createInline(srv, f, 2);
      await waitFor('node 2 to serve serial 2', async () => ((await serialOn(node2.url)) === 2 ? true : undefined));
      await createInline(srv, f, 3);
      await waitFor('node 2 to serve serial 3', async () => ((await serialOn(node2.url)) === 3 ? true : undefined));
      assert.equal(await serialOn(srv.url), 3);
    } finally {
      await node2.close();
    }
  });

  it('counts the changes of other nodes only, as SQLite counts other connections', { skip }, async () => {
    const t = await createTestDb(kind);
    const other = openDatabase({ url: t.url });
    try {
      const a = t.db.externalChanges!;
      const b = other.externalChanges!;
      // Both listen once their number stops moving on every look.
      await waitFor('both nodes to listen', async () => (a() === a() && b() === b() ? true : undefined));
      const [a0, b0] = [a(), b()];
      // A statement trigger: it notifies even when the statement changes no row.
      await t.db.kysely.updateTable('organizations').set({ name: 'x' }).where('id', '=', 'none').execute();
      await waitFor('node b to hear of it', async () => (b() !== b0 ? true : undefined));
      assert.equal(a(), a0, 'a node does not count its own commit');
      const b1 = b();
      await other.kysely.deleteFrom('workspaces').where('id', '=', 'none').execute();
      await waitFor('node a to hear of it', async () => (a() !== a0 ? true : undefined));
      assert.equal(b(), b1);
    } finally {
      await other.destroy();
      await t.cleanup();
    }
  });
});
