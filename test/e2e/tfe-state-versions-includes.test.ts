import { it } from 'node:test';
import assert from 'node:assert/strict';
import { describeWithServer } from '../support/test-server.js';
import {
  call,
  createBody,
  createInline,
  inlineAttrs,
  lock,
  stateFile,
  teamWithAccess,
  workspace,
} from './tfe-state-versions-fixture.js';
import type { WorkspaceFixture } from './tfe-state-versions-fixture.js';

type Resource = { type: string; id: string; attributes: Record<string, unknown> };

const listPath = (f: WorkspaceFixture) =>
  `/api/v2/state-versions?filter%5Bworkspace%5D%5Bname%5D=${f.wsName}&filter%5Borganization%5D%5Bname%5D=${f.org}`;

describeWithServer('state versions: include', (srv) => {
  it('include=created_by adds the creator as GET /users/:id shows it; the relationship links resolve', async () => {
    const f = await workspace(srv);
    const { data } = await createInline(srv, f, 1);
    const me = (await call(srv, 'GET', '/api/v2/account/details')).json.data;
    const rel = data.relationships['created-by'];
    assert.deepEqual(rel.data, { type: 'users', id: me.id });
    assert.deepEqual(rel.links, { self: `/api/v2/users/${me.id}`, related: `/api/v2/users/${me.id}` });
    for (const link of [rel.links.self, rel.links.related]) {
      const r = await call(srv, 'GET', link);
      assert.equal(r.status, 200, r.text);
      assert.equal(r.json.data.id, me.id);
    }

    const r = await call(srv, 'GET', `/api/v2/state-versions/${data.id}?include=created_by`);
    assert.equal(r.status, 200, r.text);
    const user = (await call(srv, 'GET', `/api/v2/users/${me.id}`)).json.data;
    assert.deepEqual(r.json.included, [user]);
    assert.equal(r.json.included[0].attributes.username, me.attributes.username);
    assert.equal('email' in r.json.included[0].attributes, false);
  });

  it('include=created_by adds the creating team as GET /teams/:id shows it', async () => {
    const f = await workspace(srv, { lock: false });
    const writer = await teamWithAccess(srv, f, 'write');
    await lock(srv, f.wsId, writer.token);
    const { data } = await createInline(srv, f, 1, { token: writer.token });
    const rel = data.relationships['created-by'];
    assert.equal(rel.data.type, 'teams');
    assert.deepEqual(rel.links, { self: `/api/v2/teams/${rel.data.id}`, related: `/api/v2/teams/${rel.data.id}` });
    for (const token of [writer.token, srv.rootToken]) {
      // Each caller sees the team with its own permissions on it.
      const team = await call(srv, 'GET', rel.links.related, { token });
      assert.equal(team.status, 200, team.text);
      const r = await call(srv, 'GET', `/api/v2/workspaces/${f.wsId}/current-state-version?include=created_by`, {
        token,
      });
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.json.included, [team.json.data]);
      assert.equal(typeof r.json.included[0].attributes.name, 'string');
    }
  });

  it('run includes add nothing: without a run the relationship is null, a run id stays opaque', async () => {
    const f = await workspace(srv);
    const { data: plain } = await createInline(srv, f, 1);
    const runId = 'run-AbCdEfGh12345678';
    const bytes = stateFile(2, f.lineage);
    const withRun = await call(srv, 'POST', `/api/v2/workspaces/${f.wsId}/state-versions`, {
      body: createBody(inlineAttrs(bytes, 2, f.lineage), { run: { data: { type: 'runs', id: runId } } }),
    });
    assert.equal(withRun.status, 201, withRun.text);
    assert.deepEqual(withRun.json.data.relationships.run, { data: { type: 'runs', id: runId } });

    for (const include of [
      'run',
      'run.created_by',
      'run.configuration_version',
      'run,run.created_by,run.configuration_version',
    ]) {
      const a = await call(srv, 'GET', `/api/v2/state-versions/${plain.id}?include=${include}`);
      assert.equal(a.status, 200, a.text);
      assert.deepEqual(a.json.data.relationships.run, { data: null });
      assert.deepEqual(a.json.included, []);
      const b = await call(srv, 'GET', `/api/v2/state-versions/${withRun.json.data.id}?include=${include}`);
      assert.equal(b.status, 200, b.text);
      assert.deepEqual(b.json.data.relationships.run, { data: { type: 'runs', id: runId } });
      assert.deepEqual(b.json.included, []);
    }
    const cur = await call(srv, 'GET', `/api/v2/workspaces/${f.wsId}/current-state-version?include=run,created_by`);
    assert.equal(cur.json.data.id, withRun.json.data.id);
    assert.deepEqual(
      cur.json.included.map((i: Resource) => i.type),
      ['users'],
    );
  });

  it('include on the list endpoint: each creator once, the outputs of every listed version', async () => {
    const f = await workspace(srv);
    const { data: v1 } = await createInline(srv, f, 1);
    const { data: v2 } = await createInline(srv, f, 2);
    await srv.deps.worker.runUntilIdle();
    const r = await call(srv, 'GET', `${listPath(f)}&include=created_by,outputs,run`);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(
      r.json.data.map((v: Resource) => v.id),
      [v2.id, v1.id],
    );
    const included = r.json.included as Resource[];
    const users = included.filter((i) => i.type === 'users');
    assert.deepEqual(
      users.map((u) => u.id),
      [v1.relationships['created-by'].data.id],
    );
    assert.equal(typeof users[0]?.attributes.username, 'string');
    const outputIds = included
      .filter((i) => i.type === 'state-version-outputs')
      .map((i) => i.id)
      .sort();
    const expected = r.json.data
      .flatMap((v: { relationships: { outputs: { data: Resource[] } } }) =>
        v.relationships.outputs.data.map((o) => o.id),
      )
      .sort();
    assert.equal(expected.length, 4);
    assert.deepEqual(outputIds, expected);
    assert.equal(included.length, 5);

    const paged = await call(srv, 'GET', `${listPath(f)}&include=outputs&page%5Bsize%5D=1`);
    assert.equal(paged.json.included.length, 2);
    assert.ok(
      paged.json.included.every((o: Resource) =>
        paged.json.data[0].relationships.outputs.data.some((d: Resource) => d.id === o.id),
      ),
    );
    const plain = await call(srv, 'GET', listPath(f));
    assert.equal(plain.json.included, undefined);
    const bad = await call(srv, 'GET', `${listPath(f)}&include=workspace`);
    assert.equal(bad.status, 400);
    assert.match(bad.json.errors[0].detail, /include parameter/);
  });
});
