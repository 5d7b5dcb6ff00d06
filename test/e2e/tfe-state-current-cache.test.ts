import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import Database from 'better-sqlite3';
import { ManualClock } from '../../src/shared/clock.js';
import { dbKinds } from '../support/test-db.js';
import { describeWithServer, startTestServer } from '../support/test-server.js';
import type { TestServer } from '../support/test-server.js';
import { waitFor } from '../support/wait.js';
import {
  assertError,
  call,
  createInline,
  createPending,
  put,
  stateFile,
  teamWithAccess,
  workspace,
} from './tfe-state-versions-fixture.js';
import type { Res, WorkspaceFixture } from './tfe-state-versions-fixture.js';

// GET …/current-state-version is answered from memory where it can be (decision 0014):
// these tests read it before and after every kind of write and check that no answer is stale.

async function current(srv: TestServer, wsId: string, token?: string): Promise<Res> {
  return call(srv, 'GET', `/api/v2/workspaces/${wsId}/current-state-version`, { token });
}

/** Reads the current version twice (the second read is the one a cache would answer) and checks both agree. */
async function currentData(srv: TestServer, wsId: string, token?: string) {
  const first = await current(srv, wsId, token);
  assert.equal(first.status, 200, first.text);
  const second = await current(srv, wsId, token);
  assert.equal(second.text, first.text);
  assert.match(second.headers.get('content-type') ?? '', /^application\/vnd\.api\+json/);
  return second.json.data;
}

/** A team with `access` on the workspace and a token for it; returns the token and the grant id. */
async function teamWithGrant(
  srv: TestServer,
  f: WorkspaceFixture,
  access: string,
): Promise<{ token: string; grantId: string }> {
  const { token, grantId } = await teamWithAccess(srv, f, access);
  return { token, grantId: grantId as string };
}

const rollbackBody = (id: string) => ({
  data: {
    type: 'state-versions',
    relationships: { 'rollback-state-version': { data: { type: 'state-versions', id } } },
  },
});

describeWithServer('current state version reads stay fresh', (srv, kind) => {
  it('follows create, extraction, upload, JSON upload, rollback and workspace deletion at once', async () => {
    const f = await workspace(srv);
    assertError(await current(srv, f.wsId), 404);

    const { data: v1 } = await createInline(srv, f, 1);
    let cur = await currentData(srv, f.wsId);
    assert.equal(cur.id, v1.id);
    assert.equal(cur.attributes['resources-processed'], false);
    assert.deepEqual(cur.relationships.outputs.data, []);

    await srv.deps.worker.runUntilIdle();
    cur = await currentData(srv, f.wsId);
    assert.equal(cur.attributes['resources-processed'], true);
    assert.equal(cur.relationships.outputs.data.length, 2, 'the extracted outputs are listed');

    // A pending version leaves the current one as it is; its upload makes it current.
    const bytes2 = stateFile(2, f.lineage);
    const v2 = await createPending(srv, f, 2, bytes2);
    cur = await currentData(srv, f.wsId);
    assert.equal(cur.id, v1.id);
    assert.equal(cur.attributes.status, 'finalized');
    assert.equal(cur.relationships.outputs.data.length, 2);

    assert.equal((await put(v2.attributes['hosted-state-upload-url'], bytes2)).status, 200);
    cur = await currentData(srv, f.wsId);
    assert.equal(cur.id, v2.id);
    assert.equal(cur.attributes.status, 'finalized');
    assert.equal(cur.attributes['hosted-state-upload-url'], null);
    assert.match(cur.attributes['hosted-state-download-url'], /\/download$/);
    assert.equal(cur.attributes['hosted-json-state-download-url'], null);

    assert.equal((await put(cur.attributes['hosted-json-state-upload-url'], '{"format_version":"1.0"}')).status, 200);
    cur = await currentData(srv, f.wsId);
    assert.match(cur.attributes['hosted-json-state-download-url'], /\/json-download$/);
    assert.equal(cur.attributes['hosted-json-state-upload-url'], null);

    const rb = await call(srv, 'PATCH', `/api/v2/workspaces/${f.wsId}/state-versions`, { body: rollbackBody(v1.id) });
    assert.equal(rb.status, 201, rb.text);
    cur = await currentData(srv, f.wsId);
    assert.equal(cur.id, rb.json.data.id);
    assert.equal(cur.relationships['rollback-state-version'].data.id, v1.id);

    const { data: v4 } = await createInline(srv, f, 3);
    assert.equal((await currentData(srv, f.wsId)).id, v4.id);

    assert.equal((await call(srv, 'DELETE', `/api/v2/workspaces/${f.wsId}`)).status, 204);
    assertError(await current(srv, f.wsId), 404);
  });

  it('a read made while a write is committing is not kept past that commit', async () => {
    const f = await workspace(srv);
    const { data: v1 } = await createInline(srv, f, 1);
    assert.equal((await currentData(srv, f.wsId)).attributes['resources-processed'], false);
    // What the extraction job does: the write reports its change, then commits. On PostgreSQL a request on another
    // connection of the pool reads the row as it was in between (on SQLite it waits for the commit).
    const repos = srv.deps.tfe.stateRepos;
    let between: Res | undefined;
    await repos.units.readWrite(async (trx) => {
      await repos.versions.markProcessed(trx, v1.id);
      if (kind === 'postgres') between = await current(srv, f.wsId);
    });
    if (kind === 'postgres') assert.equal(between?.json.data.attributes['resources-processed'], false);
    assert.equal((await currentData(srv, f.wsId)).attributes['resources-processed'], true);
  });

  it('renders the document for the host it was asked on, and includes on request', async () => {
    const f = await workspace(srv);
    await createInline(srv, f, 1);
    const plain = await currentData(srv, f.wsId);
    assert.ok(plain.attributes['hosted-state-download-url'].startsWith(srv.url));
    // fetch() will not send another Host header, node:http will.
    const u = new URL(srv.url);
    const text = await new Promise<string>((resolve, reject) => {
      const req = request(
        {
          host: u.hostname,
          port: u.port,
          path: `/api/v2/workspaces/${f.wsId}/current-state-version`,
          headers: { authorization: `Bearer ${srv.rootToken}`, host: 'state.example.test' },
        },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (body += c));
          res.on('end', () => resolve(body));
        },
      );
      req.on('error', reject);
      req.end();
    });
    const doc = JSON.parse(text) as { data: { attributes: Record<string, string> } };
    assert.equal(
      doc.data.attributes['hosted-state-download-url'],
      `http://state.example.test/api/v2/state-versions/${plain.id}/download`,
    );
    await srv.deps.worker.runUntilIdle();
    const withOutputs = await call(srv, 'GET', `/api/v2/workspaces/${f.wsId}/current-state-version?include=outputs`);
    assert.equal(withOutputs.status, 200, withOutputs.text);
    assert.equal(withOutputs.json.included.length, 2);
    assert.equal((await current(srv, f.wsId)).json.included, undefined);
  });

  it('a permission taken away through this node is enforced on the next request', async () => {
    const f = await workspace(srv);
    await createInline(srv, f, 1);
    const reader = await teamWithGrant(srv, f, 'read');
    await currentData(srv, f.wsId, reader.token);
    assert.equal((await call(srv, 'DELETE', `/api/v2/team-workspaces/${reader.grantId}`)).status, 204);
    assertError(await current(srv, f.wsId, reader.token), 404);

    // A grant narrowed to no state access.
    const other = await teamWithGrant(srv, f, 'write');
    await currentData(srv, f.wsId, other.token);
    const narrowed = await call(srv, 'PATCH', `/api/v2/team-workspaces/${other.grantId}`, {
      body: { data: { type: 'team-workspaces', attributes: { access: 'custom', 'state-versions': 'none' } } },
    });
    assert.equal(narrowed.status, 200, narrowed.text);
    assertError(await current(srv, f.wsId, other.token), 404);
  });
});

if (dbKinds().includes('postgres')) {
  describe('current state version with two nodes on one PostgreSQL database', () => {
    const clock = new ManualClock('2026-05-01T00:00:00.000Z');
    let a: TestServer;
    let b: TestServer;
    before(async () => {
      a = await startTestServer('postgres', { clock });
      b = await startTestServer('postgres', { clock, sameDatabaseAs: a });
    });
    after(async () => {
      await b.close();
      await a.close();
    });

    it('a write acknowledged by one node is what the other answers once its notification arrives', async () => {
      const f = await workspace(a);
      // Node b drops what it holds when node a's change notification arrives (decision 0048); it looks at most every
      // 100 ms of its clock, which the test moves on while it waits.
      const onB = (what: string, holds: (d: Awaited<ReturnType<typeof currentData>>) => boolean) =>
        waitFor(what, async () => {
          clock.advance(0.1);
          const d = await currentData(b, f.wsId);
          return holds(d) ? d : undefined;
        });
      const { data: v1 } = await createInline(a, f, 1);
      assert.equal((await currentData(b, f.wsId)).id, v1.id);

      const { data: v2 } = await createInline(a, f, 2);
      const seen2 = await onB('version 2 on node b', (d) => d.id === v2.id);
      assert.equal(seen2.attributes['resources-processed'], false);

      await a.deps.worker.runUntilIdle();
      const cur = await onB('extraction on node b', (d) => d.attributes['resources-processed'] === true);
      assert.equal(cur.relationships.outputs.data.length, 2);

      const bytes3 = stateFile(3, f.lineage);
      const v3 = await createPending(a, f, 3, bytes3);
      clock.advance(0.1);
      assert.equal((await currentData(b, f.wsId)).id, v2.id, 'a pending version is not current');
      const shown = (await call(b, 'GET', `/api/v2/state-versions/${v3.id}`)).json.data;
      // The upload URL shown by the other node works (both nodes share the master key).
      assert.equal((await put(shown.attributes['hosted-state-upload-url'].replace(b.url, a.url), bytes3)).status, 200);
      const cur3 = await onB('the upload on node b', (d) => d.id === v3.id);
      assert.equal(cur3.attributes.status, 'finalized');

      assert.equal((await call(a, 'DELETE', `/api/v2/workspaces/${f.wsId}`)).status, 204);
      await waitFor('the deletion on node b', async () => {
        clock.advance(0.1);
        return (await current(b, f.wsId)).status === 404 ? true : undefined;
      });
    });

    it('a permission taken away on one node holds on the other within the token cache time', async () => {
      const f = await workspace(a);
      await createInline(a, f, 1);
      const reader = await teamWithGrant(a, f, 'read');
      await currentData(b, f.wsId, reader.token);
      assert.equal((await call(a, 'DELETE', `/api/v2/team-workspaces/${reader.grantId}`)).status, 204);
      assertError(await current(a, f.wsId, reader.token), 404);
      // Node b may answer from its permission cache for up to two seconds (documented bound)…
      assert.equal((await current(b, f.wsId, reader.token)).status, 200);
      clock.advance(2);
      // …and no longer after them.
      assertError(await current(b, f.wsId, reader.token), 404);
    });
  });
}

describe('current state version on SQLite when another process writes the database file', () => {
  it('drops what it holds once another connection has committed', async () => {
    const clock = new ManualClock('2026-05-01T00:00:00.000Z');
    const srv = await startTestServer('sqlite', { clock });
    const other = new Database(srv.config.databaseUrl.replace(/^sqlite:/, ''));
    try {
      const f = await workspace(srv);
      const { data: v1 } = await createInline(srv, f, 1);
      const { data: v2 } = await createInline(srv, f, 2);
      assert.equal((await currentData(srv, f.wsId)).id, v2.id);
      other.prepare('update tfe_state_heads set current_id = ? where workspace_id = ?').run(v1.id, f.wsId);
      // The data_version probe runs at most every 100 ms of the server's clock.
      clock.advance(0.1);
      assert.equal((await currentData(srv, f.wsId)).id, v1.id);
    } finally {
      other.close();
      await srv.close();
    }
  });
});
