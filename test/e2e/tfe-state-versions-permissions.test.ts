import { it } from 'node:test';
import assert from 'node:assert/strict';
import { describeWithServer } from '../support/test-server.js';
import type { TestServer } from '../support/test-server.js';
import {
  assertError,
  call,
  count,
  createBody,
  createInline,
  download,
  inlineAttrs,
  lock,
  stateFile,
  teamWithAccess,
  unlock,
  workspace,
} from './tfe-state-versions-fixture.js';
import type { WorkspaceFixture } from './tfe-state-versions-fixture.js';

async function teamToken(srv: TestServer, f: WorkspaceFixture, access: string | null): Promise<string> {
  return (await teamWithAccess(srv, f, access)).token;
}

async function orgToken(srv: TestServer, f: WorkspaceFixture): Promise<string> {
  const r = await call(srv, 'POST', `/api/v2/organizations/${f.org}/authentication-token`, {
    body: { data: { type: 'authentication-tokens', attributes: {} } },
  });
  assert.equal(r.status, 201, r.text);
  return r.json.data.attributes.token as string;
}

const listPath = (f: WorkspaceFixture) =>
  `/api/v2/state-versions?filter%5Bworkspace%5D%5Bname%5D=${f.wsName}&filter%5Borganization%5D%5Bname%5D=${f.org}`;
const rollbackBody = (id: string) => ({
  data: {
    type: 'state-versions',
    relationships: { 'rollback-state-version': { data: { type: 'state-versions', id } } },
  },
});

describeWithServer('state versions: permissions and token kinds', (srv) => {
  it('organization tokens may read but never create or roll back', async () => {
    const f = await workspace(srv);
    const { data: v1 } = await createInline(srv, f, 1);
    const token = await orgToken(srv, f);
    assert.equal((await call(srv, 'GET', `/api/v2/state-versions/${v1.id}`, { token })).status, 200);
    assert.equal((await call(srv, 'GET', listPath(f), { token })).status, 200);
    assertError(
      await call(srv, 'POST', `/api/v2/workspaces/${f.wsId}/state-versions`, {
        token,
        body: createBody(inlineAttrs(stateFile(2, f.lineage), 2, f.lineage)),
      }),
      404,
    );
    assertError(
      await call(srv, 'PATCH', `/api/v2/workspaces/${f.wsId}/state-versions`, { token, body: rollbackBody(v1.id) }),
      404,
    );
    assert.equal(await count(srv, f), 1);
  });

  it('read access reads; write access writes under its own lock; no access sees 404', async () => {
    const f = await workspace(srv, { lock: false });
    const reader = await teamToken(srv, f, 'read');
    const writer = await teamToken(srv, f, 'write');
    const outsider = await teamToken(srv, f, null);

    await lock(srv, f.wsId, writer);
    const { data: v1, bytes } = await createInline(srv, f, 1, { token: writer });
    assert.deepEqual(v1.relationships['created-by'].data.type, 'teams');
    // The admin does not hold the lock, so its writes conflict.
    assertError(
      await call(srv, 'POST', `/api/v2/workspaces/${f.wsId}/state-versions`, {
        body: createBody(inlineAttrs(stateFile(2, f.lineage), 2, f.lineage)),
      }),
      409,
    );
    assertError(
      await call(srv, 'POST', `/api/v2/workspaces/${f.wsId}/state-versions`, {
        token: reader,
        body: createBody(inlineAttrs(stateFile(2, f.lineage), 2, f.lineage)),
      }),
      404,
    );
    assertError(
      await call(srv, 'PATCH', `/api/v2/workspaces/${f.wsId}/state-versions`, {
        token: reader,
        body: rollbackBody(v1.id),
      }),
      404,
    );

    for (const token of [reader, writer]) {
      assert.equal((await call(srv, 'GET', `/api/v2/state-versions/${v1.id}`, { token })).status, 200);
      assert.equal(
        (await call(srv, 'GET', `/api/v2/workspaces/${f.wsId}/current-state-version`, { token })).status,
        200,
      );
      assert.equal((await call(srv, 'GET', listPath(f), { token })).status, 200);
      assert.ok((await download(srv, v1.attributes['hosted-state-download-url'], token)).body.equals(bytes));
    }
    assertError(await call(srv, 'GET', `/api/v2/state-versions/${v1.id}`, { token: outsider }), 404);
    assertError(await call(srv, 'GET', `/api/v2/workspaces/${f.wsId}/current-state-version`, { token: outsider }), 404);
    assertError(await call(srv, 'GET', listPath(f), { token: outsider }), 404);
    assert.equal((await download(srv, v1.attributes['hosted-state-download-url'], outsider)).status, 404);
    assertError(await call(srv, 'GET', `/api/v2/state-versions/${v1.id}`, { token: 'not-a-token' }), 401);

    // Backing-data actions need organization owners.
    await createInline(srv, f, 2, { token: writer });
    for (const token of [reader, writer, outsider]) {
      assertError(
        await call(srv, 'POST', `/api/v2/state-versions/${v1.id}/actions/soft_delete_backing_data`, { token }),
        404,
      );
    }
    assert.equal(
      (await call(srv, 'POST', `/api/v2/state-versions/${v1.id}/actions/soft_delete_backing_data`)).status,
      200,
    );
    assert.equal((await unlock(srv, f.wsId, writer)).status, 200);
  });
});

describeWithServer(
  'state versions: settings',
  { config: { bodyLimit: 4096, stateAllowSerialMismatch: true } },
  (srv) => {
    it('refuses bodies over the API body limit with 413 and stores nothing', async () => {
      const f = await workspace(srv);
      const big = stateFile(1, f.lineage, 'x'.repeat(5000));
      const r = await call(srv, 'POST', `/api/v2/workspaces/${f.wsId}/state-versions`, {
        body: createBody(inlineAttrs(big, 1, f.lineage)),
      });
      assertError(r, 413);
      assert.equal(await count(srv, f), 0);
    });

    it('accepts serial and lineage that differ from the file when state_allow_serial_mismatch is set', async () => {
      const f = await workspace(srv);
      const bytes = stateFile(2, 'b2b54b23-e7ea-5500-7b15-fcb68c1d92bb');
      const r = await call(srv, 'POST', `/api/v2/workspaces/${f.wsId}/state-versions`, {
        body: createBody(inlineAttrs(bytes, 0, f.lineage)),
      });
      assert.equal(r.status, 201, r.text);
      assert.equal(r.json.data.attributes.serial, 0);
    });
  },
);
