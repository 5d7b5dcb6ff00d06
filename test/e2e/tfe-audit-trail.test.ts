import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeWithServer, startSecondNode } from '../support/test-server.js';
import type { TestServer } from '../support/test-server.js';
import {
  b64,
  call,
  count,
  createBody,
  createInline,
  createPending,
  download,
  lock,
  md5,
  put,
  stateFile,
  teamWithAccess,
  unlock,
  workspace,
} from './tfe-state-versions-fixture.js';
import type { WorkspaceFixture } from './tfe-state-versions-fixture.js';

/**
 * The state service's audit trail over real HTTP: every state write and read, lock and
 * team/token change recorded with its actor, token id, workspace, outcome, source IP and
 * request id; read back through HCP's `GET /organization/audit-trail` with an organization
 * token; written to the audit devices too; one trail for two nodes of one database.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Event = any;

async function orgToken(srv: TestServer, org: string): Promise<string> {
  const r = await call(srv, 'POST', `/api/v2/organizations/${org}/authentication-token`, {
    body: { data: { type: 'authentication-token', attributes: {} } },
  });
  assert.equal(r.status, 201, r.text);
  return r.json.data.attributes.token as string;
}

async function trail(srv: TestServer, token: string, query = ''): Promise<{ data: Event[]; pagination: Event }> {
  const r = await call(srv, 'GET', `/api/v2/organization/audit-trail${query}`, { token });
  assert.equal(r.status, 200, r.text);
  return r.json as { data: Event[]; pagination: Event };
}

describeWithServer('state service audit trail', (srv, kind) => {
  let dir: string;
  let f: WorkspaceFixture;
  let token: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'strongroom-tfe-audit-'));
    f = await workspace(srv);
    token = await orgToken(srv, f.org);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('records state writes and reads, locks, team and token changes, with outcome and actor', async () => {
    const file = join(dir, 'devices.log');
    const dev = await fetch(`${srv.url}/v1/sys/audit/tfe`, {
      method: 'PUT',
      headers: { 'x-vault-token': srv.rootToken },
      body: JSON.stringify({ type: 'file', options: { file_path: file } }),
    });
    assert.equal(dev.status, 204);
    const since = new Date().toISOString();

    const { data: v1 } = await createInline(srv, f, 1);
    const dl = await download(srv, v1.attributes['hosted-state-download-url']);
    assert.equal(dl.status, 200);
    const bytes = stateFile(2, f.lineage);
    const pending = await createPending(srv, f, 2, bytes);
    const up = await put(pending.attributes['hosted-state-upload-url'], bytes);
    assert.equal(up.status, 200, up.text);
    await srv.deps.worker.runUntilIdle();
    const current = await call(srv, 'GET', `/api/v2/workspaces/${f.wsId}/current-state-version`);
    assert.equal(current.status, 200);
    const outputs = await call(srv, 'GET', `/api/v2/workspaces/${f.wsId}/current-state-version-outputs`);
    assert.equal(outputs.status, 200);
    // A refused write: the workspace is locked by the admin, not by this team.
    const team = await teamWithAccess(srv, f, 'write');
    const refused = await call(srv, 'POST', `/api/v2/workspaces/${f.wsId}/state-versions`, {
      token: team.token,
      body: createBody({ serial: 3, md5: md5(bytes), lineage: f.lineage, state: b64(bytes) }),
    });
    assert.equal(refused.status, 409, refused.text);
    assert.equal((await unlock(srv, f.wsId)).status, 200);
    await lock(srv, f.wsId, team.token);
    assert.equal((await unlock(srv, f.wsId, undefined, true)).status, 200);
    const rollback = await call(srv, 'PATCH', `/api/v2/workspaces/${f.wsId}/state-versions`, {
      body: {
        data: {
          type: 'state-versions',
          relationships: { 'rollback-state-version': { data: { type: 'state-versions', id: v1.id } } },
        },
      },
    });
    assert.ok(rollback.status === 201 || rollback.status === 409, rollback.text);

    const page = await trail(srv, token, `?since=${encodeURIComponent(since)}`);
    const actions = page.data.map((e) => `${e.resource.type}:${e.resource.action}:${e.resource.meta.outcome}`);
    for (const expected of [
      'state_version:create:success',
      'state_version:download:success',
      'state_version:upload:success',
      'state_version:read:success',
      'state_version_output:read:success',
      'team:create:success',
      'team_workspace:create:success',
      'authentication_token:create:success',
      'state_version:create:failure',
      'workspace:unlock:success',
      'workspace:lock:success',
      'workspace:force_unlock:success',
      'state_version:rollback:' + (rollback.status === 201 ? 'success' : 'failure'),
    ])
      assert.ok(actions.includes(expected), `${expected} missing from ${actions.join(', ')}`);

    const created = page.data.find((e) => e.resource.action === 'create' && e.resource.type === 'state_version');
    assert.equal(created.resource.id, v1.id);
    assert.equal(created.version, '0');
    assert.equal(created.type, 'Resource');
    assert.equal(created.auth.type, 'Client');
    assert.equal(created.auth.organization_id, page.data[0].auth.organization_id);
    assert.match(created.auth.organization_id, /^org-/);
    assert.equal(created.resource.meta.workspace_id, f.wsId);
    assert.equal(created.resource.meta.source_ip, '127.0.0.1');
    assert.equal(created.resource.meta.status_code, 201);
    assert.match(created.request.id, /^[0-9a-f-]{36}$/);
    assert.ok(!Number.isNaN(Date.parse(created.timestamp)));

    const denied = page.data.find((e) => e.resource.meta.outcome === 'failure' && e.resource.action === 'create');
    assert.equal(denied.resource.meta.status_code, 409);
    assert.equal(denied.resource.meta.actor_type, 'team');
    assert.match(denied.resource.meta.token_id, /^at-/);
    // The token id, never the token.
    const text = JSON.stringify(page);
    assert.ok(!text.includes(team.token) && !text.includes(token) && !text.includes(srv.rootToken));

    const upload = page.data.find((e) => e.resource.action === 'upload');
    assert.equal(upload.resource.id, pending.id);
    assert.equal(upload.auth.type, 'Unauthenticated');

    // The same events reached the audit device, as `state` entries.
    const lines = readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Event);
    const stateLines = lines.filter((l) => l.type === 'state');
    assert.ok(stateLines.some((l) => l.event.id === created.id && l.event.resource.action === 'create'));
    assert.ok(!readFileSync(file, 'utf8').includes(team.token));
    await fetch(`${srv.url}/v1/sys/audit/tfe`, { method: 'DELETE', headers: { 'x-vault-token': srv.rootToken } });
  });

  it('serves the trail to organization tokens only, with since and pagination', async () => {
    const all = await trail(srv, token);
    assert.ok(all.data.length >= 3);
    assert.equal(all.pagination.current_page, 1);
    assert.equal(all.pagination.total_count, all.data.length);
    const p2 = await trail(srv, token, '?page%5Bsize%5D=2&page%5Bnumber%5D=2');
    assert.deepEqual(
      p2.data.map((e) => e.id),
      all.data.slice(2, 4).map((e) => e.id),
    );
    assert.equal(p2.pagination.prev_page, 1);
    assert.equal(p2.pagination.total_pages, Math.ceil(all.data.length / 2));
    const later = await trail(srv, token, `?since=${encodeURIComponent(all.data[1].timestamp)}`);
    assert.ok(later.data.every((e) => e.timestamp > all.data[1].timestamp));

    // Another organization's events are not there.
    const other = await workspace(srv);
    await createInline(srv, other, 1);
    assert.ok(!(await trail(srv, token)).data.some((e) => e.resource.meta.workspace_id === other.wsId));

    // A user (the admin) or team token is refused; bad parameters get 422 with a pointer.
    const asAdmin = await call(srv, 'GET', '/api/v2/organization/audit-trail');
    assert.equal(asAdmin.status, 404, asAdmin.text);
    const bad = await call(srv, 'GET', '/api/v2/organization/audit-trail?since=yesterday', { token });
    assert.equal(bad.status, 422, bad.text);
    assert.equal(bad.json.errors[0].source.pointer, '/query/since');
    const big = await call(srv, 'GET', '/api/v2/organization/audit-trail?page%5Bsize%5D=1001', { token });
    assert.equal(big.status, 422, big.text);
  });

  it('refuses state writes that no audit device can record, and performs nothing', async () => {
    const file = join(dir, 'fragile.log');
    const put = (body: unknown) =>
      fetch(`${srv.url}/v1/sys/audit/fragile`, {
        method: 'PUT',
        headers: { 'x-vault-token': srv.rootToken },
        body: JSON.stringify(body),
      });
    assert.equal((await put({ type: 'file', options: { file_path: file } })).status, 204);
    const g = await workspace(srv);
    await createInline(srv, g, 1);
    // The file is rotated away and a directory stands in its place: the device cannot reopen it.
    renameSync(file, `${file}.1`);
    mkdirSync(file);
    srv.deps.core.audit.reopen();
    const bytes = stateFile(2, g.lineage);
    const refused = await call(srv, 'POST', `/api/v2/workspaces/${g.wsId}/state-versions`, {
      body: createBody({ serial: 2, md5: md5(bytes), lineage: g.lineage, state: b64(bytes) }),
    });
    assert.equal(refused.status, 500, refused.text);
    rmSync(file, { recursive: true });
    assert.equal(await count(srv, g), 1, 'the refused version was not created');
    await createInline(srv, g, 2);
    const lines = readFileSync(file, 'utf8');
    assert.match(lines, /"phase":"request"/);
    assert.match(lines, /"phase":"response"/);
    await fetch(`${srv.url}/v1/sys/audit/fragile`, { method: 'DELETE', headers: { 'x-vault-token': srv.rootToken } });
  });

  it(
    'keeps one trail for two nodes of one database',
    { skip: kind !== 'postgres' ? 'PostgreSQL only: several nodes share one database' : false },
    async () => {
      const node2 = await startSecondNode(srv);
      try {
        const r = await call({ ...srv, url: node2.url }, 'GET', `/api/v2/workspaces/${f.wsId}/current-state-version`);
        assert.equal(r.status, 200, r.text);
        const requestId = r.headers.get('x-request-id');
        const seen = await trail(srv, token);
        assert.ok(seen.data.some((e) => e.request.id === requestId));
        const fromNode2 = await trail({ ...srv, url: node2.url }, token);
        assert.equal(fromNode2.pagination.total_count, seen.pagination.total_count);
      } finally {
        await node2.close();
      }
    },
  );
});
