import { before, it } from 'node:test';
import assert from 'node:assert/strict';
import { describeWithServer } from '../support/test-server.js';
import { TfeHttp, assertDoc, assertError, orgBody, wsBody } from '../support/tfe-http.js';

const TOKEN = /^[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9]{67}$/;

describeWithServer('tfe tokens, users and teams over HTTP', (s) => {
  let api: TfeHttp;
  let aliceId: string;
  before(async () => {
    api = new TfeHttp(s.url, s.rootToken);
    assertDoc(await api.post('/api/v2/organizations', orgBody('acme')), 201);
    const admin = (await s.deps.tfe.identity.authenticate(s.rootToken))!;
    aliceId = (await s.deps.tfe.identity.createUser(admin, { username: 'alice' })).id;
  });

  it('user tokens: create (token shown once), list, show, use, delete', async () => {
    const created = await api.post(`/api/v2/users/${aliceId}/authentication-tokens`, {
      data: { type: 'authentication-tokens', attributes: { description: 'laptop' } },
    });
    assertDoc(created, 201);
    const t = created.body.data;
    assert.equal(t.type, 'authentication-tokens');
    assert.match(t.id, /^at-/);
    assert.match(t.attributes.token, TOKEN);
    assert.equal(t.attributes.description, 'laptop');
    assert.equal(t.attributes['expired-at'], null);
    assert.equal(t.attributes['last-used-at'], null);

    const alice = api.as(t.attributes.token);
    const me = await alice.get('/api/v2/account/details');
    assertDoc(me, 200);
    assert.equal(me.body.data.id, aliceId);
    assert.equal(me.body.data.attributes.username, 'alice');
    assert.equal(me.body.data.attributes['is-site-admin'], false);

    const list = await alice.get(`/api/v2/users/${aliceId}/authentication-tokens`);
    assertDoc(list, 200);
    assert.deepEqual(
      list.body.data.map((x: { id: string }) => x.id),
      [t.id],
    );
    assert.equal(list.body.data[0].attributes.token, undefined);
    assert.ok(list.body.data[0].attributes['last-used-at']);
    const shown = await alice.get(`/api/v2/authentication-tokens/${t.id}`);
    assertDoc(shown, 200);
    assert.equal(shown.body.data.attributes.token, undefined);

    const user = await alice.get(`/api/v2/users/${aliceId}`);
    assertDoc(user, 200);
    assert.equal(user.body.data.attributes.username, 'alice');

    const del = await alice.delete(`/api/v2/authentication-tokens/${t.id}`);
    assert.equal(del.status, 204);
    assertError(await alice.get('/api/v2/account/details'), 401);
    assertError(await api.get(`/api/v2/authentication-tokens/${t.id}`), 404);
  });

  it('user tokens are private to their user; expiry is validated and enforced', async () => {
    const admin = (await s.deps.tfe.identity.authenticate(s.rootToken))!;
    const bob = await s.deps.tfe.identity.createUser(admin, { username: 'bob' });
    const bobTok = (
      await api.post(`/api/v2/users/${bob.id}/authentication-tokens`, {
        data: { type: 'authentication-tokens', attributes: {} },
      })
    ).body.data.attributes.token;
    const asBob = api.as(bobTok);
    assertError(await asBob.post(`/api/v2/users/${aliceId}/authentication-tokens`, { data: { attributes: {} } }), 404);
    assertError(await asBob.get(`/api/v2/users/${aliceId}/authentication-tokens`), 404);
    assertError(
      await api.post(`/api/v2/users/${bob.id}/authentication-tokens`, {
        data: { attributes: { 'expired-at': 'tomorrow' } },
      }),
      422,
      { pointer: '/data/attributes/expired-at' },
    );
    assertError(
      await api.post(`/api/v2/users/${bob.id}/authentication-tokens`, {
        data: { attributes: { 'expired-at': '2001-01-01T00:00:00Z' } },
      }),
      422,
      { pointer: '/data/attributes/expired-at' },
    );
    const soon = await api.post(`/api/v2/users/${bob.id}/authentication-tokens`, {
      data: { attributes: { 'expired-at': '2999-01-01T00:00:00.000Z' } },
    });
    assertDoc(soon, 201);
    assert.equal(soon.body.data.attributes['expired-at'], '2999-01-01T00:00:00.000Z');
    assertError(await api.get('/api/v2/users/user-nonexisting'), 404);
  });

  it('teams, the team token and the organization token', async () => {
    const team = await api.post('/api/v2/organizations/acme/teams', {
      data: {
        type: 'teams',
        attributes: { name: 'deployers', 'organization-access': { 'manage-workspaces': true } },
      },
    });
    assertDoc(team, 201);
    const teamId = team.body.data.id;
    assert.match(teamId, /^team-/);
    assert.equal(team.body.data.attributes['organization-access']['manage-workspaces'], true);
    assertError(
      await api.post('/api/v2/organizations/acme/teams', {
        data: { type: 'teams', attributes: { name: 'deployers' } },
      }),
      422,
      { pointer: '/data/attributes/name' },
    );
    assertError(
      await api.post('/api/v2/organizations/acme/teams', {
        data: { type: 'teams', attributes: { visibility: 'public', name: 'v' } },
      }),
      422,
      { pointer: '/data/attributes/visibility' },
    );
    const teams = await api.get('/api/v2/organizations/acme/teams');
    assertDoc(teams, 200);
    assert.deepEqual(teams.body.data.map((t: { attributes: { name: string } }) => t.attributes.name).sort(), [
      'deployers',
      'owners',
    ]);

    const tt = await api.post(`/api/v2/teams/${teamId}/authentication-token`);
    assertDoc(tt, 201);
    assert.match(tt.body.data.attributes.token, TOKEN);
    const asTeam = api.as(tt.body.data.attributes.token);
    const ws = await asTeam.post('/api/v2/organizations/acme/workspaces', wsBody('by-team'));
    assertDoc(ws, 201);
    const locked = await asTeam.post(`/api/v2/workspaces/${ws.body.data.id}/actions/lock`, {});
    assertDoc(locked, 200);
    assert.deepEqual(locked.body.data.relationships['locked-by'].data, { id: teamId, type: 'teams' });
    assertError(await api.post(`/api/v2/workspaces/${ws.body.data.id}/actions/unlock`), 409, {
      detail: /is locked by Team deployers/,
    });
    const acct = await asTeam.get('/api/v2/account/details');
    assertDoc(acct, 200);
    assert.equal(acct.body.data.attributes['is-service-account'], true);
    // Team tokens cannot do user-only things.
    assertError(await asTeam.post('/api/v2/organizations', orgBody('byteam')), 404);
    assertError(await asTeam.post(`/api/v2/users/${aliceId}/authentication-tokens`, { data: { attributes: {} } }), 404);

    const regenerated = await api.post(`/api/v2/teams/${teamId}/authentication-token`, {});
    assertDoc(regenerated, 201);
    assertError(await asTeam.get('/api/v2/account/details'), 401);
    const teamTokShow = await api.get(`/api/v2/teams/${teamId}/authentication-token`);
    assertDoc(teamTokShow, 200);
    assert.equal(teamTokShow.body.data.id, regenerated.body.data.id);
    assert.equal((await api.delete(`/api/v2/teams/${teamId}/authentication-token`)).status, 204);
    assertError(await api.get(`/api/v2/teams/${teamId}/authentication-token`), 404);

    const ot = await api.post('/api/v2/organizations/acme/authentication-token', {
      data: { type: 'authentication-tokens', attributes: {} },
    });
    assertDoc(ot, 201);
    const asOrg = api.as(ot.body.data.attributes.token);
    assertDoc(await asOrg.get('/api/v2/organizations/acme/workspaces'), 200);
    assertDoc(await asOrg.get('/api/v2/organizations/acme/authentication-token'), 200);
    // Organization tokens never hold locks and cannot create organizations or user tokens.
    assertError(await asOrg.post(`/api/v2/workspaces/${ws.body.data.id}/actions/lock`, {}), 404);
    assertError(await asOrg.post('/api/v2/organizations', orgBody('byorg')), 404);
    assertError(await asOrg.post(`/api/v2/users/${aliceId}/authentication-tokens`, { data: { attributes: {} } }), 404);
    assertError(await asOrg.patch('/api/v2/organizations/acme', { data: { attributes: { email: 'x@y.z' } } }), 404);
    assert.equal((await api.delete('/api/v2/organizations/acme/authentication-token')).status, 204);
    assertError(await asOrg.get('/api/v2/organizations/acme'), 401);

    const renamed = await api.patch(`/api/v2/teams/${teamId}`, {
      data: { type: 'teams', attributes: { name: 'shippers' } },
    });
    assertDoc(renamed, 200);
    assert.equal(renamed.body.data.attributes.name, 'shippers');
    assert.equal((await api.delete(`/api/v2/teams/${teamId}`)).status, 204);
    assertError(await api.get(`/api/v2/teams/${teamId}`), 404);
    const owners = teams.body.data.find((t: { attributes: { name: string } }) => t.attributes.name === 'owners');
    assertError(await api.delete(`/api/v2/teams/${owners.id}`), 404);
  });

  it('described team tokens: many per team, unique descriptions, listed per organization', async () => {
    const team = (
      await api.post('/api/v2/organizations/acme/teams', { data: { type: 'teams', attributes: { name: 'ci' } } })
    ).body.data;
    const a = await api.post(`/api/v2/teams/${team.id}/authentication-tokens`, {
      data: { type: 'authentication-tokens', attributes: { description: 'gha' } },
    });
    assertDoc(a, 201);
    assert.match(a.body.data.attributes.token, TOKEN);
    assert.deepEqual(a.body.data.relationships.team.data, { id: team.id, type: 'teams' });
    const b = await api.post(`/api/v2/teams/${team.id}/authentication-tokens`, {
      data: { type: 'authentication-tokens', attributes: { description: 'jenkins' } },
    });
    assertDoc(b, 201);
    assertError(
      await api.post(`/api/v2/teams/${team.id}/authentication-tokens`, {
        data: { attributes: { description: 'gha' } },
      }),
      422,
      { pointer: '/data/attributes/description' },
    );
    for (const t of [a, b])
      assertDoc(await api.as(t.body.data.attributes.token).get('/api/v2/organizations/acme'), 200);
    const list = await api.get('/api/v2/organizations/acme/team-tokens');
    assertDoc(list, 200);
    const ids = list.body.data.map((x: { id: string }) => x.id);
    assert.ok(ids.includes(a.body.data.id) && ids.includes(b.body.data.id));
    assert.equal((await api.delete(`/api/v2/authentication-tokens/${a.body.data.id}`)).status, 204);
    assertError(await api.as(a.body.data.attributes.token).get('/api/v2/organizations/acme'), 401);
    assertDoc(await api.as(b.body.data.attributes.token).get('/api/v2/organizations/acme'), 200);
  });

  it('membership by username; unknown users are a 422', async () => {
    const team = (
      await api.post('/api/v2/organizations/acme/teams', { data: { type: 'teams', attributes: { name: 'members' } } })
    ).body.data;
    assertError(
      await api.post(`/api/v2/teams/${team.id}/relationships/users`, { data: [{ type: 'users', id: 'ghost' }] }),
      422,
      { pointer: '/data/0/id' },
    );
    assertError(await api.post(`/api/v2/teams/${team.id}/relationships/users`, { data: {} }), 422, {
      pointer: '/data',
    });
    assert.equal(
      (await api.post(`/api/v2/teams/${team.id}/relationships/users`, { data: [{ type: 'users', id: 'alice' }] }))
        .status,
      204,
    );
    assert.equal((await api.get(`/api/v2/teams/${team.id}`)).body.data.attributes['users-count'], 1);
    assert.equal(
      (
        await api.call('DELETE', `/api/v2/teams/${team.id}/relationships/users`, {
          data: [{ type: 'users', id: 'alice' }],
        })
      ).status,
      204,
    );
    assert.equal((await api.get(`/api/v2/teams/${team.id}`)).body.data.attributes['users-count'], 0);
  });
});
