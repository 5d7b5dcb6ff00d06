import { before, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describeWithServer } from '../support/test-server.js';
import { TfeHttp, assertDoc, assertError, orgBody, wsBody } from '../support/tfe-http.js';
import { createBody, md5, put, stateFile } from './tfe-state-versions-fixture.js';

describeWithServer('tfe workspaces and locks over HTTP', (s) => {
  let api: TfeHttp;
  before(async () => {
    api = new TfeHttp(s.url, s.rootToken);
    assertDoc(await api.post('/api/v2/organizations', orgBody('acme')), 201);
  });

  /** A user in a team of acme with the given access on the workspace; returns a client with their token. */
  async function member(username: string, wsId: string, access: Record<string, unknown>): Promise<TfeHttp> {
    const tfe = s.deps.tfe;
    const admin = (await tfe.identity.authenticate(s.rootToken))!;
    const user = await tfe.identity.createUser(admin, { username });
    const team = await api.post('/api/v2/organizations/acme/teams', {
      data: { type: 'teams', attributes: { name: `${username}-team` } },
    });
    assertDoc(team, 201);
    assert.equal(
      (
        await api.post(`/api/v2/teams/${team.body.data.id}/relationships/users`, {
          data: [{ type: 'users', id: username }],
        })
      ).status,
      204,
    );
    const grant = await api.post('/api/v2/team-workspaces', {
      data: {
        type: 'team-workspaces',
        attributes: access,
        relationships: {
          team: { data: { type: 'teams', id: team.body.data.id } },
          workspace: { data: { type: 'workspaces', id: wsId } },
        },
      },
    });
    assertDoc(grant, 200);
    const tok = await api.post(`/api/v2/users/${user.id}/authentication-tokens`, {
      data: { type: 'authentication-tokens', attributes: { description: 'e2e' } },
    });
    assertDoc(tok, 201);
    return api.as(tok.body.data.attributes.token);
  }

  it('create, read by name and id, list, search, include and update', async () => {
    const attrs = {
      'auto-apply': true,
      'allow-destroy-plan': false,
      'terraform-version': '0.11.0',
      'trigger-prefixes': ['/modules', '/shared'],
      'working-directory': 'bar/',
    };
    const created = await api.post('/api/v2/organizations/acme/workspaces', wsBody('net', attrs));
    assertDoc(created, 201);
    const w = created.body.data;
    assert.match(w.id, /^ws-[1-9A-HJ-NP-Za-km-z]{16}$/);
    assert.equal(w.type, 'workspaces');
    for (const [k, v] of Object.entries(attrs)) assert.deepEqual(w.attributes[k], v, k);
    assert.equal(w.attributes['execution-mode'], 'local');
    assert.equal(w.attributes.operations, false);
    assert.equal(w.attributes.locked, false);
    assert.equal(w.attributes.permissions['can-queue-run'], false);
    assert.equal(w.attributes.permissions['can-destroy'], true);
    assert.equal(w.attributes.permissions['can-create-state-versions'], true);
    assert.equal(w.attributes.permissions['can-force-unlock'], true);
    assert.deepEqual(w.relationships.organization.data, { id: 'acme', type: 'organizations' });
    assert.deepEqual(w.relationships['locked-by'], { data: null });
    assert.equal(w.relationships['current-state-version'].data, null);
    assert.equal(w.links.self, '/api/v2/organizations/acme/workspaces/net');

    const byName = await api.get('/api/v2/organizations/acme/workspaces/net');
    assertDoc(byName, 200);
    assert.deepEqual(byName.body.data, w);
    assert.equal(byName.body.included, undefined);
    assert.deepEqual((await api.get(`/api/v2/workspaces/${w.id}`)).body.data, w);

    await api.post('/api/v2/organizations/acme/workspaces', wsBody('other'));
    const list = await api.get('/api/v2/organizations/acme/workspaces?include=');
    assertDoc(list, 200);
    assert.deepEqual(
      list.body.data.find((x: { id: string }) => x.id === w.id),
      w,
    );
    assert.equal(list.body.meta.pagination['total-count'], 2);
    const search = await api.get('/api/v2/organizations/acme/workspaces?search%5Bname%5D=ne');
    assert.deepEqual(
      search.body.data.map((x: { id: string }) => x.id),
      [w.id],
    );
    const none = await api.get('/api/v2/organizations/acme/workspaces?search%5Bname%5D=nonexisting');
    assert.deepEqual(none.body.data, []);
    assert.equal(none.body.meta.pagination['current-page'], 1);
    assert.equal(none.body.meta.pagination['total-count'], 0);
    const inc = await api.get('/api/v2/organizations/acme/workspaces?include=organization');
    assert.equal(inc.body.included[0].type, 'organizations');
    assert.equal(inc.body.included[0].attributes.email, 'acme@example.com');
    const bad = await api.get('/api/v2/organizations/acme/workspaces/net?include=bogus');
    assertError(bad, 400, { detail: /include parameter/ });

    const patched = await api.patch(`/api/v2/workspaces/${w.id}`, {
      data: { type: 'workspaces', attributes: { 'terraform-version': '1.9.0' } },
    });
    assertDoc(patched, 200);
    assert.equal(patched.body.data.attributes['terraform-version'], '1.9.0');
    const renamed = await api.patch('/api/v2/organizations/acme/workspaces/other', {
      data: { type: 'workspaces', attributes: { name: 'renamed' } },
    });
    assert.equal(renamed.body.data.attributes.name, 'renamed');
    assertError(await api.get('/api/v2/organizations/acme/workspaces/other'), 404);
  });

  it('422s: remote execution, bad attributes and duplicate names; 404 for unknown org or workspace', async () => {
    const remote = await api.post('/api/v2/organizations/acme/workspaces', wsBody('r', { 'execution-mode': 'remote' }));
    assertError(remote, 422, { pointer: '/data/attributes/execution-mode', detail: /remote runs/ });
    assertError(await api.post('/api/v2/organizations/acme/workspaces', wsBody('r', { operations: true })), 422, {
      pointer: '/data/attributes/operations',
    });
    assertError(await api.post('/api/v2/organizations/acme/workspaces', wsBody('r', { 'auto-apply': 'yes' })), 422, {
      pointer: '/data/attributes/auto-apply',
    });
    assertError(
      await api.post('/api/v2/organizations/acme/workspaces', wsBody('r', { 'trigger-prefixes': [1] })),
      422,
      { pointer: '/data/attributes/trigger-prefixes' },
    );
    assertError(await api.post('/api/v2/organizations/acme/workspaces', wsBody('bad/name')), 422, {
      pointer: '/data/attributes/name',
    });
    await api.post('/api/v2/organizations/acme/workspaces', wsBody('dup'));
    assertError(await api.post('/api/v2/organizations/acme/workspaces', wsBody('dup')), 422, {
      pointer: '/data/attributes/name',
    });
    assertError(
      await api.post('/api/v2/organizations/bar/workspaces', wsBody('x', { 'terraform-version': 'nonexisting' })),
      404,
    );
    assertError(await api.get('/api/v2/organizations/acme/workspaces/nope'), 404);
    assertError(await api.get('/api/v2/organizations/nope/workspaces/dup'), 404);
    assertError(await api.get('/api/v2/workspaces/ws-nonexisting'), 404);
    assertError(await api.patch('/api/v2/organizations/acme/workspaces/dup', '{"data":'), 400);
  });

  it('lock, unlock and force-unlock, with every lock body shape and body-less POSTs', async () => {
    const id = (await api.post('/api/v2/organizations/acme/workspaces', wsBody('locky'))).body.data.id;
    const lockPath = `/api/v2/workspaces/${id}/actions/lock`;
    for (const body of [
      { data: { type: '', attributes: { reason: 'Locked by Terraform' } } },
      { reason: 'Locked by Terraform' },
      {},
      undefined,
    ]) {
      const locked = await api.post(lockPath, body);
      assertDoc(locked, 200);
      assert.equal(locked.body.data.attributes.locked, true);
      assert.equal(
        locked.body.data.attributes['locked-reason'],
        body && Object.keys(body).length > 0 ? 'Locked by Terraform' : null,
      );
      assert.equal(locked.body.data.relationships['locked-by'].data.type, 'users');
      assertError(await api.post(lockPath, {}), 409);
      const unlocked = await api.post(`/api/v2/workspaces/${id}/actions/unlock`);
      assertDoc(unlocked, 200);
      assert.equal(unlocked.body.data.attributes.locked, false);
      assert.deepEqual(unlocked.body.data.relationships['locked-by'], { data: null });
    }
    // go-tfe sends these with the JSON:API content type and Content-Length: 0.
    assertError(await api.post(`/api/v2/workspaces/${id}/actions/unlock`, undefined), 409, {
      detail: /already unlocked/,
    });
    assertError(await api.post(`/api/v2/workspaces/${id}/actions/force-unlock`, ''), 409);
    assertDoc(await api.post(lockPath), 200);
    const forced = await api.post(`/api/v2/workspaces/${id}/actions/force-unlock`);
    assertDoc(forced, 200);
    assert.equal(forced.body.data.attributes.locked, false);
    assertError(await api.post('/api/v2/workspaces/ws-nonexisting/actions/lock', {}), 404);
    assertError(await api.post(lockPath, { data: { attributes: { reason: 7 } } }), 422, {
      pointer: '/data/attributes/reason',
    });
  });

  it("team access decides what members see and do; someone else's lock is a 409 naming the holder", async () => {
    const id = (await api.post('/api/v2/organizations/acme/workspaces', wsBody('shared'))).body.data.id;
    const writer = await member('wendy', id, { access: 'write' });
    const reader = await member('rita', id, { access: 'custom', 'state-versions': 'read' });

    const rv = await reader.get(`/api/v2/workspaces/${id}`);
    assertDoc(rv, 200);
    assert.equal(rv.body.data.attributes.permissions['can-read-state-versions'], true);
    assert.equal(rv.body.data.attributes.permissions['can-create-state-versions'], false);
    assert.equal(rv.body.data.attributes.permissions['can-lock'], false);
    assertError(await reader.post(`/api/v2/workspaces/${id}/actions/lock`, {}), 404);
    assertError(await reader.get('/api/v2/organizations/acme/workspaces/locky'), 404);
    const readerList = await reader.get('/api/v2/organizations/acme/workspaces');
    assert.deepEqual(
      readerList.body.data.map((x: { id: string }) => x.id),
      [id],
    );

    const locked = await writer.post(`/api/v2/workspaces/${id}/actions/lock`, { reason: 'apply' });
    assertDoc(locked, 200);
    assert.equal(locked.body.data.relationships['locked-by'].data.type, 'users');
    assertError(await api.post(`/api/v2/workspaces/${id}/actions/unlock`), 409, {
      detail: /is locked by User wendy/,
    });
    assertError(await writer.post(`/api/v2/workspaces/${id}/actions/force-unlock`), 404);
    assertError(await writer.delete(`/api/v2/workspaces/${id}`), 404);
    assertDoc(await writer.post(`/api/v2/workspaces/${id}/actions/unlock`), 200);

    const grants = await api.get(`/api/v2/team-workspaces?filter%5Bworkspace%5D%5Bid%5D=${id}`);
    assertDoc(grants, 200);
    assert.equal(grants.body.data.length, 2);
    const custom = grants.body.data.find((g: { attributes: { access: string } }) => g.attributes.access === 'custom');
    assert.equal(custom.attributes['state-versions'], 'read');
    assert.equal(custom.attributes['workspace-locking'], false);
    const upd = await api.patch(`/api/v2/team-workspaces/${custom.id}`, {
      data: { type: 'team-workspaces', attributes: { 'workspace-locking': true } },
    });
    assertDoc(upd, 200);
    assert.equal(upd.body.data.attributes['workspace-locking'], true);
    assertDoc(await reader.post(`/api/v2/workspaces/${id}/actions/lock`, {}), 200);
    assertDoc(await reader.post(`/api/v2/workspaces/${id}/actions/unlock`), 200);
    assertError(
      await api.patch(`/api/v2/team-workspaces/${custom.id}`, { data: { attributes: { access: 'owner' } } }),
      422,
      { pointer: '/data/attributes/access' },
    );
    assert.equal((await api.delete(`/api/v2/team-workspaces/${custom.id}`)).status, 204);
    assertError(await reader.get(`/api/v2/workspaces/${id}`), 404);
    assertError(await api.get(`/api/v2/team-workspaces/${custom.id}`), 404);
  });

  it('unlock with a pending version: 400 for Terraform >= 1.10 (or no header), 503 older; force works', async () => {
    const id = (await api.post('/api/v2/organizations/acme/workspaces', wsBody('pending'))).body.data.id;
    assertDoc(await api.post(`/api/v2/workspaces/${id}/actions/lock`, {}), 200);
    const lineage = randomUUID();
    const bytes = stateFile(1, lineage);
    const created = await api.post(
      `/api/v2/workspaces/${id}/state-versions`,
      createBody({ serial: 1, md5: md5(bytes), lineage }),
    );
    assertDoc(created, 201);
    assert.equal(created.body.data.attributes.status, 'pending');

    const unlock = (headers: Record<string, string>) =>
      api.post(`/api/v2/workspaces/${id}/actions/unlock`, undefined, headers);
    const refusals: Array<[string | undefined, number]> = [
      // Terraform >= 1.10 retries a 400 whose text says the version is still pending.
      ['1.10.0', 400],
      ['1.10.2', 400],
      ['1.14.1', 400],
      ['2.0.0', 400],
      // Older clients only retry server errors (reference 7.4).
      ['1.9.8', 503],
      ['1.5.7', 503],
      ['0.14.11', 503],
      // No header (not a go-tfe client): our choice, the reference names only the two cases above.
      [undefined, 400],
    ];
    for (const [version, status] of refusals) {
      const r = await unlock(version === undefined ? {} : { 'terraform-version': version });
      // A decodable JSON:API error either way (go-tfe reads the text), never a 409 ("already unlocked").
      assertError(r, status, { detail: /latest state version is still pending/ });
      assert.equal(
        (await api.get(`/api/v2/workspaces/${id}`)).body.data.attributes.locked,
        true,
        `still locked after the ${version ?? 'header-less'} unlock`,
      );
    }

    // Force-unlock works while the version is pending; it stays pending and still blocks a normal unlock.
    const forced = await api.post(`/api/v2/workspaces/${id}/actions/force-unlock`);
    assertDoc(forced, 200);
    assert.equal(forced.body.data.attributes.locked, false);
    assertDoc(await api.post(`/api/v2/workspaces/${id}/actions/lock`, {}), 200);
    assertError(await unlock({ 'terraform-version': '1.10.5' }), 400, {
      detail: /latest state version is still pending/,
    });
    assertError(await unlock({ 'terraform-version': '1.9.0' }), 503, {
      detail: /latest state version is still pending/,
    });

    // Once the upload finalizes the version, the normal unlock succeeds.
    const uploaded = await put(created.body.data.attributes['hosted-state-upload-url'], bytes);
    assert.equal(uploaded.status, 200, uploaded.text);
    const unlocked = await unlock({ 'terraform-version': '1.9.8' });
    assertDoc(unlocked, 200);
    assert.equal(unlocked.body.data.attributes.locked, false);
  });

  it('flat tags: create with relationships.tags, list by search[tags], add and remove', async () => {
    const created = await api.post('/api/v2/organizations/acme/workspaces', {
      data: {
        type: 'workspaces',
        attributes: { name: 'tagged' },
        relationships: { tags: { data: [{ type: 'tags', attributes: { name: 'net' } }] } },
      },
    });
    assertDoc(created, 201);
    assert.deepEqual(created.body.data.attributes['tag-names'], ['net']);
    const id = created.body.data.id;
    assert.equal(
      (
        await api.post(`/api/v2/workspaces/${id}/relationships/tags`, {
          data: [{ type: 'tags', attributes: { name: 'prod' } }],
        })
      ).status,
      204,
    );
    const both = await api.get('/api/v2/organizations/acme/workspaces?search%5Btags%5D=net%2Cprod');
    assert.deepEqual(
      both.body.data.map((w: { id: string }) => w.id),
      [id],
    );
    const tags = await api.get(`/api/v2/workspaces/${id}/relationships/tags`);
    assertDoc(tags, 200);
    assert.deepEqual(
      tags.body.data.map((t: { attributes: { name: string } }) => t.attributes.name),
      ['net', 'prod'],
    );
    assert.equal(
      (
        await api.call('DELETE', `/api/v2/workspaces/${id}/relationships/tags`, {
          data: [{ type: 'tags', attributes: { name: 'prod' } }],
        })
      ).status,
      204,
    );
    assert.deepEqual((await api.get('/api/v2/organizations/acme/workspaces?search%5Btags%5D=prod')).body.data, []);
    assertError(
      await api.post(`/api/v2/workspaces/${id}/relationships/tags`, { data: [{ type: 'tags', attributes: {} }] }),
      422,
      { pointer: '/data/0/attributes/name' },
    );
    // No key/value tag bindings: the CLI reads this 404 as "use flat tags".
    assertError(await api.get(`/api/v2/workspaces/${id}/tag-bindings`), 404);
  });

  it('delete by name and by id', async () => {
    await api.post('/api/v2/organizations/acme/workspaces', wsBody('gone1'));
    const id2 = (await api.post('/api/v2/organizations/acme/workspaces', wsBody('gone2'))).body.data.id;
    const d1 = await api.delete('/api/v2/organizations/acme/workspaces/gone1');
    assert.equal(d1.status, 204);
    assertError(await api.get('/api/v2/organizations/acme/workspaces/gone1'), 404);
    assert.equal((await api.delete(`/api/v2/workspaces/${id2}`)).status, 204);
    assertError(await api.get(`/api/v2/workspaces/${id2}`), 404);
    assertError(await api.delete(`/api/v2/workspaces/${id2}`), 404);
  });
});
