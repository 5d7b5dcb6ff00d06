import { before, it } from 'node:test';
import assert from 'node:assert/strict';
import { describeWithServer } from '../support/test-server.js';
import { assertBadBodiesRefused } from '../support/tfe-bad-bodies.js';
import { TfeHttp, assertDoc, assertError, orgBody, wsBody } from '../support/tfe-http.js';

const TOKEN = /^[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9]{67}$/;

/** Every documented organization-access flag, each set to a value of its own. */
const FLAGS: Record<string, boolean> = {
  'manage-policies': true,
  'manage-policy-overrides': false,
  'manage-workspaces': false,
  'manage-vcs-settings': true,
  'manage-providers': true,
  'manage-modules': false,
  'manage-run-tasks': true,
  'manage-projects': false,
  'read-workspaces': true,
  'read-projects': true,
  'manage-membership': true,
  'manage-teams': false,
  'manage-organization-access': true,
  'access-secret-teams': false,
  'manage-agent-pools': true,
};

const NO_RIGHTS = {
  'can-update-membership': false,
  'can-destroy': false,
  'can-update-organization-access': false,
  'can-update-api-token': false,
  'can-update-visibility': false,
  'can-update-name': false,
};

describeWithServer('teams, team tokens and team access read back what they are', (s) => {
  let api: TfeHttp;
  let ownersId: string;
  let orgToken: TfeHttp;
  let member: TfeHttp;
  let wsId: string;

  async function userToken(username: string): Promise<string> {
    const admin = (await s.deps.tfe.identity.authenticate(s.rootToken))!;
    const user = await s.deps.tfe.identity.createUser(admin, { username });
    const t = await api.post(`/api/v2/users/${user.id}/authentication-tokens`);
    assertDoc(t, 201);
    return t.body.data.attributes.token as string;
  }

  async function team(name: string, attributes: Record<string, unknown> = {}): Promise<string> {
    const r = await api.post('/api/v2/organizations/acme/teams', {
      data: { type: 'teams', attributes: { name, ...attributes } },
    });
    assertDoc(r, 201);
    return r.body.data.id as string;
  }

  before(async () => {
    api = new TfeHttp(s.url, s.rootToken);
    assertDoc(await api.post('/api/v2/organizations', orgBody('acme')), 201);
    const teams = await api.get('/api/v2/organizations/acme/teams');
    ownersId = teams.body.data.find((t: { attributes: { name: string } }) => t.attributes.name === 'owners').id;
    const ot = await api.post('/api/v2/organizations/acme/authentication-token');
    assertDoc(ot, 201);
    orgToken = api.as(ot.body.data.attributes.token);
    const plain = await team('plain');
    member = api.as(await userToken('mia'));
    assert.equal(
      (await api.post(`/api/v2/teams/${plain}/relationships/users`, { data: [{ type: 'users', id: 'mia' }] })).status,
      204,
    );
    wsId = (await api.post('/api/v2/organizations/acme/workspaces', wsBody('w'))).body.data.id as string;
  });

  it('token endpoints take the documented authentication-token type, the plural and no body', async () => {
    const tt = await team('tokens');
    const paths = [
      '/api/v2/organizations/acme/authentication-token',
      `/api/v2/teams/${tt}/authentication-token`,
      `/api/v2/teams/${tt}/authentication-tokens`,
    ];
    for (const path of paths) {
      let n = 0;
      for (const body of [
        { data: { type: 'authentication-token', attributes: { description: `a ${n++}` } } },
        { data: { type: 'authentication-tokens', attributes: { description: `a ${n++}` } } },
        {
          data: {
            type: 'authentication-token',
            attributes: { description: `a ${n++}`, 'expired-at': '2099-01-01T00:00:00.000Z' },
          },
        },
        undefined,
      ]) {
        const r = await api.post(path, body);
        assertDoc(r, 201);
        assert.match(r.body.data.attributes.token, TOKEN, `${path} ${JSON.stringify(body)}`);
        assert.equal(r.body.data.type, 'authentication-tokens');
      }
      assertError(await api.post(path, { data: { type: 'teams', attributes: {} } }), 422, { pointer: '/data/type' });
      assertError(
        await api.post(path, { data: { type: 'authentication-token', attributes: { 'expired-at': 'soon' } } }),
        422,
        {
          pointer: '/data/attributes/expired-at',
        },
      );
      await assertBadBodiesRefused(api, 'POST', path);
    }
    // The organization token kept working through all of that? It was regenerated: the newest one works.
    const last = await api.post(paths[0] as string, { data: { type: 'authentication-token' } });
    assertDoc(await api.as(last.body.data.attributes.token).get('/api/v2/organizations/acme'), 200);
    orgToken = api.as(last.body.data.attributes.token);
  });

  it('a team keeps every organization-access flag as given, on create, read, list and update', async () => {
    const id = await team('flags', { 'organization-access': FLAGS });
    const shown = await api.get(`/api/v2/teams/${id}`);
    assertDoc(shown, 200);
    assert.deepEqual(shown.body.data.attributes['organization-access'], FLAGS);
    const listed = await api.get('/api/v2/organizations/acme/teams');
    const inList = listed.body.data.find((t: { id: string }) => t.id === id);
    assert.deepEqual(inList.attributes['organization-access'], FLAGS);
    // An update replaces only the flags it names.
    const updated = await api.patch(`/api/v2/teams/${id}`, {
      data: {
        type: 'teams',
        attributes: { 'organization-access': { 'manage-policies': false, 'manage-modules': true } },
      },
    });
    assertDoc(updated, 200);
    assert.deepEqual(updated.body.data.attributes['organization-access'], {
      ...FLAGS,
      'manage-policies': false,
      'manage-modules': true,
    });
    assert.deepEqual((await api.get(`/api/v2/teams/${id}`)).body.data.attributes['organization-access'], {
      ...FLAGS,
      'manage-policies': false,
      'manage-modules': true,
    });
    // Managing implies reading.
    const manager = await team('manager', { 'organization-access': { 'manage-projects': true } });
    const m = (await api.get(`/api/v2/teams/${manager}`)).body.data.attributes['organization-access'];
    assert.equal(m['read-projects'], true);
    assertError(
      await api.post('/api/v2/organizations/acme/teams', {
        data: { type: 'teams', attributes: { name: 'bad', 'organization-access': { 'manage-run-tasks': 'yes' } } },
      }),
      422,
      { pointer: '/data/attributes/organization-access/manage-run-tasks' },
    );
    assertError(
      await api.post('/api/v2/organizations/acme/teams', {
        data: { type: 'teams', attributes: { name: 'bad', 'organization-access': true } },
      }),
      422,
      { pointer: '/data/attributes/organization-access' },
    );
    await assertBadBodiesRefused(api, 'POST', '/api/v2/organizations/acme/teams');
    await assertBadBodiesRefused(api, 'PATCH', `/api/v2/teams/${id}`);
  });

  it("permissions on read are the caller's real rights", async () => {
    const id = await team('rights');
    const full = {
      'can-update-membership': true,
      'can-destroy': true,
      'can-update-organization-access': true,
      'can-update-api-token': true,
      'can-update-visibility': true,
      'can-update-name': true,
    };
    assert.deepEqual((await api.get(`/api/v2/teams/${id}`)).body.data.attributes.permissions, full);
    assert.deepEqual((await orgToken.get(`/api/v2/teams/${id}`)).body.data.attributes.permissions, full);
    assert.deepEqual((await member.get(`/api/v2/teams/${id}`)).body.data.attributes.permissions, NO_RIGHTS);
    const listedByMember = await member.get('/api/v2/organizations/acme/teams');
    for (const t of listedByMember.body.data) assert.deepEqual(t.attributes.permissions, NO_RIGHTS, t.attributes.name);
    // The owners team: owners change its members and tokens, nobody deletes, renames or limits it.
    assert.deepEqual((await api.get(`/api/v2/teams/${ownersId}`)).body.data.attributes.permissions, {
      ...full,
      'can-destroy': false,
      'can-update-organization-access': false,
      'can-update-name': false,
    });
    const owners = (await orgToken.get(`/api/v2/teams/${ownersId}`)).body.data;
    assert.deepEqual(owners.attributes.permissions, NO_RIGHTS, 'the organization token may not change the owners team');
    assert.ok(Object.values(owners.attributes['organization-access']).every((v) => v === true));
    assertError(
      await api.patch(`/api/v2/teams/${ownersId}`, {
        data: { type: 'teams', attributes: { 'organization-access': { 'manage-workspaces': false } } },
      }),
      422,
      { pointer: '/data/attributes/organization-access/manage-workspaces' },
    );
    assertError(await member.get('/api/v2/teams/team-AAAAAAAAAAAAAAAA'), 404);
  });

  it('an organization token, or a member who is not an owner, cannot make anyone an owner', async () => {
    await userToken('eve');
    for (const [who, caller] of [
      ['organization token', orgToken],
      ['plain member', member],
    ] as const) {
      for (const path of [
        `/api/v2/teams/${ownersId}/authentication-token`,
        `/api/v2/teams/${ownersId}/authentication-tokens`,
      ])
        assertError(await caller.post(path, { data: { type: 'authentication-token' } }), 404);
      assertError(
        await caller.post(`/api/v2/teams/${ownersId}/relationships/users`, { data: [{ type: 'users', id: 'eve' }] }),
        404,
      );
      assertError(
        await caller.call('DELETE', `/api/v2/teams/${ownersId}/relationships/users`, {
          data: [{ type: 'users', id: 'site-admin' }],
        }),
        404,
      );
      assertError(await caller.get(`/api/v2/teams/${ownersId}/authentication-token`), 404, { detail: /not found/ });
      assert.equal((await api.get(`/api/v2/teams/${ownersId}`)).body.data.attributes['users-count'], 1, who);
    }
    // The owners team's own token exists only when an owner makes one; the organization token can
    // neither see it, list it nor delete it.
    const real = await api.post(`/api/v2/teams/${ownersId}/authentication-token`);
    assertDoc(real, 201);
    assertError(await orgToken.get(`/api/v2/authentication-tokens/${real.body.data.id}`), 404);
    assertError(await orgToken.delete(`/api/v2/authentication-tokens/${real.body.data.id}`), 404);
    assertError(await orgToken.delete(`/api/v2/teams/${ownersId}/authentication-token`), 404);
    const listed = await orgToken.get('/api/v2/organizations/acme/team-tokens');
    assertDoc(listed, 200);
    assert.ok(!listed.body.data.some((t: { id: string }) => t.id === real.body.data.id));
    assert.ok(
      (await api.get('/api/v2/organizations/acme/team-tokens')).body.data.some(
        (t: { id: string }) => t.id === real.body.data.id,
      ),
    );
    // Through it an owner may add owners; the organization token still manages other teams.
    const asOwners = api.as(real.body.data.attributes.token);
    assert.equal(
      (await asOwners.post(`/api/v2/teams/${ownersId}/relationships/users`, { data: [{ type: 'users', id: 'eve' }] }))
        .status,
      204,
    );
    const other = await team('others');
    assertDoc(await orgToken.post(`/api/v2/teams/${other}/authentication-token`), 201);
    assert.equal(
      (await orgToken.post(`/api/v2/teams/${other}/relationships/users`, { data: [{ type: 'users', id: 'eve' }] }))
        .status,
      204,
    );
  });

  it('team access validates as HCP does: no custom field on a fixed level, admin full, custom as given', async () => {
    const grant = async (teamName: string, attributes: Record<string, unknown>) => {
      const teamId = await team(teamName);
      return api.post('/api/v2/team-workspaces', {
        data: {
          type: 'team-workspaces',
          attributes,
          relationships: {
            team: { data: { type: 'teams', id: teamId } },
            workspace: { data: { type: 'workspaces', id: wsId } },
          },
        },
      });
    };
    assertError(await grant('coerce', { access: 'read', runs: 'apply' }), 422, { pointer: '/data/attributes/runs' });
    assertError(await grant('coerce2', { access: 'write', 'run-tasks': true }), 422, {
      pointer: '/data/attributes/run-tasks',
    });
    assertError(await grant('coerce3', { access: 'custom', variables: 'all' }), 422, {
      pointer: '/data/attributes/variables',
    });
    const admin = await grant('admins', { access: 'admin' });
    assertDoc(admin, 200);
    assert.deepEqual(admin.body.data.attributes, {
      access: 'admin',
      runs: 'apply',
      variables: 'write',
      'state-versions': 'write',
      'sentinel-mocks': 'read',
      'workspace-locking': true,
      'run-tasks': true,
    });
    const custom = {
      access: 'custom',
      runs: 'plan',
      variables: 'read',
      'state-versions': 'read-outputs',
      'sentinel-mocks': 'read',
      'workspace-locking': true,
      'run-tasks': true,
    };
    const c = await grant('customs', custom);
    assertDoc(c, 200);
    assert.deepEqual(c.body.data.attributes, custom);
    assert.deepEqual((await api.get(`/api/v2/team-workspaces/${c.body.data.id}`)).body.data.attributes, custom);
    const patched = await api.patch(`/api/v2/team-workspaces/${c.body.data.id}`, {
      data: { type: 'team-workspaces', attributes: { variables: 'write' } },
    });
    assertDoc(patched, 200);
    assert.deepEqual(patched.body.data.attributes, { ...custom, variables: 'write' });
    assertError(
      await api.patch(`/api/v2/team-workspaces/${admin.body.data.id}`, {
        data: { type: 'team-workspaces', attributes: { 'sentinel-mocks': 'none' } },
      }),
      422,
      { pointer: '/data/attributes/sentinel-mocks' },
    );
    await assertBadBodiesRefused(api, 'POST', '/api/v2/team-workspaces');
    await assertBadBodiesRefused(api, 'PATCH', `/api/v2/team-workspaces/${c.body.data.id}`);
  });
});
