import { before, it } from 'node:test';
import assert from 'node:assert/strict';
import { describeWithServer } from '../support/test-server.js';
import { assertBadBodiesRefused } from '../support/tfe-bad-bodies.js';
import { TfeHttp, assertDoc, assertError, orgBody, wsBody } from '../support/tfe-http.js';

const PRJ = /^prj-[1-9A-HJ-NP-Za-km-z]{16}$/;

const projectBody = (attributes: Record<string, unknown>) => ({ data: { type: 'projects', attributes } });
const inProject = (name: string, projectId: string) => ({
  data: {
    type: 'workspaces',
    attributes: { name },
    relationships: { project: { data: { type: 'projects', id: projectId } } },
  },
});

describeWithServer('projects', (s) => {
  let api: TfeHttp;
  let defaultId: string;

  async function createProject(org: string, name: string, caller = api): Promise<string> {
    const r = await caller.post(`/api/v2/organizations/${org}/projects`, projectBody({ name }));
    assertDoc(r, 201);
    return r.body.data.id as string;
  }

  async function userToken(username: string): Promise<TfeHttp> {
    const admin = (await s.deps.tfe.identity.authenticate(s.rootToken))!;
    const user = await s.deps.tfe.identity.createUser(admin, { username });
    const t = await api.post(`/api/v2/users/${user.id}/authentication-tokens`);
    assertDoc(t, 201);
    return api.as(t.body.data.attributes.token as string);
  }

  async function teamWith(name: string, attributes: Record<string, unknown>, member: string): Promise<string> {
    const t = await api.post('/api/v2/organizations/acme/teams', {
      data: { type: 'teams', attributes: { name, ...attributes } },
    });
    assertDoc(t, 201);
    const added = await api.post(`/api/v2/teams/${t.body.data.id}/relationships/users`, {
      data: [{ type: 'users', id: member }],
    });
    assert.equal(added.status, 204, added.text);
    return t.body.data.id as string;
  }

  before(async () => {
    api = new TfeHttp(s.url, s.rootToken);
    assertDoc(await api.post('/api/v2/organizations', orgBody('acme')), 201);
  });

  it('every organization has a default project, named in its document and included on request', async () => {
    const org = await api.get('/api/v2/organizations/acme');
    assertDoc(org, 200);
    const rel = org.body.data.relationships['default-project'];
    assert.equal(rel.data.type, 'projects');
    assert.match(rel.data.id, PRJ);
    defaultId = rel.data.id;
    assert.equal(org.body.included, undefined);
    assert.equal(org.body.data.attributes.permissions['can-create-project'], true);

    const withIt = await api.get('/api/v2/organizations/acme?include=default-project');
    assertDoc(withIt, 200);
    assert.equal(withIt.body.included.length, 1);
    const p = withIt.body.included[0];
    assert.equal(p.id, defaultId);
    assert.equal(p.type, 'projects');
    assert.equal(p.attributes.name, 'Default Project');
    assert.deepEqual(p.relationships.organization.data, { id: 'acme', type: 'organizations' });
    assert.equal(p.links.self, `/api/v2/projects/${defaultId}`);
    const listed = await api.get('/api/v2/organizations?include=default-project');
    assert.ok(listed.body.included.some((x: { id: string }) => x.id === defaultId));

    const shown = await api.get(`/api/v2/projects/${defaultId}`);
    assertDoc(shown, 200);
    assert.deepEqual(shown.body.data, p);
    assert.equal(shown.body.data.attributes.permissions['can-destroy'], false, 'the default project stays');
  });

  it('creates, shows, renames and lists projects with filter[names], q, sort and pagination', async () => {
    const created = await api.post(
      '/api/v2/organizations/acme/projects',
      projectBody({ name: 'Networking', description: 'VPCs and peering' }),
    );
    assertDoc(created, 201);
    const d = created.body.data;
    assert.match(d.id, PRJ);
    assert.equal(d.attributes.name, 'Networking');
    assert.equal(d.attributes.description, 'VPCs and peering');
    assert.equal(d.attributes['workspace-count'], 0);
    assert.deepEqual(d.attributes.permissions['can-update'], true);
    for (const name of ['apps-prod', 'apps-staging', 'Data Lake']) await createProject('acme', name);

    const list = async (q: string) => {
      const r = await api.get(`/api/v2/organizations/acme/projects${q}`);
      assertDoc(r, 200);
      return r.body;
    };
    const all = await list('');
    assert.deepEqual(
      all.data.map((p: { attributes: { name: string } }) => p.attributes.name),
      ['apps-prod', 'apps-staging', 'Data Lake', 'Default Project', 'Networking'],
    );
    assert.equal(all.meta.pagination['total-count'], 5);
    // filter[names]: exact names ignoring case, comma-separated; it wins over q.
    const named = await list('?filter%5Bnames%5D=networking,DATA%20LAKE&q=apps');
    assert.deepEqual(named.data.map((p: { attributes: { name: string } }) => p.attributes.name).sort(), [
      'Data Lake',
      'Networking',
    ]);
    assert.equal((await list('?filter%5Bnames%5D=Network')).data.length, 0);
    const searched = await list('?q=APPS');
    assert.deepEqual(
      searched.data.map((p: { attributes: { name: string } }) => p.attributes.name),
      ['apps-prod', 'apps-staging'],
    );
    assert.equal((await list('?q=100%25')).data.length, 0, 'LIKE wildcards in q are literal');
    const desc = await list('?sort=-name');
    assert.equal(desc.data[0].attributes.name, 'Networking');
    const page2 = await list('?page%5Bsize%5D=2&page%5Bnumber%5D=2');
    assert.deepEqual(
      page2.data.map((p: { attributes: { name: string } }) => p.attributes.name),
      ['Data Lake', 'Default Project'],
    );
    assert.deepEqual(page2.meta.pagination, {
      'current-page': 2,
      'page-size': 2,
      'prev-page': 1,
      'next-page': 3,
      'total-pages': 3,
      'total-count': 5,
    });
    assert.equal((await list('?page%5Bnumber%5D=99')).data.length, 0);
    assertError(await api.get('/api/v2/organizations/acme/projects?sort=created'), 422, { pointer: '/query/sort' });
    assertError(await api.get('/api/v2/organizations/acme/projects?page%5Bsize%5D=x'), 422);
    assertError(await api.get('/api/v2/organizations/nope/projects'), 404);

    const renamed = await api.patch(`/api/v2/projects/${d.id}`, projectBody({ name: 'Network', description: null }));
    assertDoc(renamed, 200);
    assert.equal(renamed.body.data.attributes.name, 'Network');
    assert.equal(renamed.body.data.attributes.description, null);
    assert.equal((await api.get(`/api/v2/projects/${d.id}`)).body.data.attributes.name, 'Network');
    const tags = await api.get(`/api/v2/projects/${d.id}/tag-bindings`);
    assertDoc(tags, 200);
    assert.deepEqual(tags.body.data, []);
  });

  it('refuses bad names, duplicates ignoring case and bad bodies with 422 naming the member, never 500', async () => {
    for (const name of ['ab', ' padded', 'padded ', 'x'.repeat(41), 'semi;colon', 'ünï']) {
      assertError(await api.post('/api/v2/organizations/acme/projects', projectBody({ name })), 422, {
        pointer: '/data/attributes/name',
      });
    }
    assertError(await api.post('/api/v2/organizations/acme/projects', projectBody({})), 422, {
      pointer: '/data/attributes/name',
    });
    assertError(await api.post('/api/v2/organizations/acme/projects', projectBody({ name: 'NETWORK' })), 422, {
      pointer: '/data/attributes/name',
      detail: /already exists/,
    });
    assertError(
      await api.post(
        '/api/v2/organizations/acme/projects',
        projectBody({ name: 'ok name', description: 'd'.repeat(257) }),
      ),
      422,
      { pointer: '/data/attributes/description' },
    );
    assertError(
      await api.post('/api/v2/organizations/acme/projects', {
        data: { type: 'workspaces', attributes: { name: 'abc' } },
      }),
      422,
      { pointer: '/data/type' },
    );
    assertError(await api.post('/api/v2/organizations/acme/projects', { data: { attributes: { name: 'abc' } } }), 422, {
      pointer: '/data/type',
    });
    const p = await createProject('acme', 'bodies');
    const other = await createProject('acme', 'Bodies Two');
    assertError(await api.patch(`/api/v2/projects/${p}`, projectBody({ name: 'bodies two' })), 422, {
      pointer: '/data/attributes/name',
    });
    await assertBadBodiesRefused(api, 'POST', '/api/v2/organizations/acme/projects');
    await assertBadBodiesRefused(api, 'PATCH', `/api/v2/projects/${p}`);
    await assertBadBodiesRefused(api, 'POST', '/api/v2/organizations/acme/workspaces');
    await assertBadBodiesRefused(api, 'PATCH', `/api/v2/organizations/acme/workspaces/none`);
    assertError(await api.get('/api/v2/projects/prj-AAAAAAAAAAAAAAAA'), 404);
    assertError(await api.patch('/api/v2/projects/prj-AAAAAAAAAAAAAAAA', projectBody({ name: 'abc' })), 404);
    assertError(await api.delete('/api/v2/projects/prj-AAAAAAAAAAAAAAAA'), 404);
    assert.equal((await api.delete(`/api/v2/projects/${other}`)).status, 204);
  });

  it('workspaces belong to a project: created in one, moved, listed by filter[project][id], included', async () => {
    const infra = await createProject('acme', 'infra');
    const plain = await api.post('/api/v2/organizations/acme/workspaces', wsBody('in-default'));
    assertDoc(plain, 201);
    assert.deepEqual(plain.body.data.relationships.project.data, { id: defaultId, type: 'projects' });
    const inInfra = await api.post('/api/v2/organizations/acme/workspaces', inProject('in-infra', infra));
    assertDoc(inInfra, 201);
    assert.deepEqual(inInfra.body.data.relationships.project.data, { id: infra, type: 'projects' });
    // go-tfe sends the relationship with an empty type on some calls; it is accepted.
    const emptyType = await api.post('/api/v2/organizations/acme/workspaces', {
      data: {
        type: 'workspaces',
        attributes: { name: 'empty-type' },
        relationships: { project: { data: { type: '', id: infra } } },
      },
    });
    assertDoc(emptyType, 201);
    const byName = await api.get('/api/v2/organizations/acme/workspaces/in-infra?include=project');
    assertDoc(byName, 200);
    assert.equal(byName.body.included[0].id, infra);
    assert.equal(byName.body.included[0].attributes['workspace-count'], 2);

    const listed = await api.get(
      `/api/v2/organizations/acme/workspaces?filter%5Bproject%5D%5Bid%5D=${infra}&include=project`,
    );
    assertDoc(listed, 200);
    assert.deepEqual(
      listed.body.data.map((w: { attributes: { name: string } }) => w.attributes.name),
      ['empty-type', 'in-infra'],
    );
    assert.deepEqual(
      listed.body.included.map((p: { id: string }) => p.id),
      [infra],
    );

    // Move by PATCH (by id and by name); moving to the same project is a no-op.
    const moved = await api.patch(`/api/v2/workspaces/${plain.body.data.id}`, {
      data: { type: 'workspaces', relationships: { project: { data: { type: 'projects', id: infra } } } },
    });
    assertDoc(moved, 200);
    assert.deepEqual(moved.body.data.relationships.project.data, { id: infra, type: 'projects' });
    const back = await api.patch('/api/v2/organizations/acme/workspaces/in-default', {
      data: {
        type: 'workspaces',
        attributes: {},
        relationships: { project: { data: { type: 'projects', id: defaultId } } },
      },
    });
    assertDoc(back, 200);
    assert.equal(back.body.data.relationships.project.data.id, defaultId);

    // Unknown projects, another organization's, and a wrong type.
    assertDoc(await api.post('/api/v2/organizations', orgBody('other')), 201);
    const foreign = await createProject('other', 'foreign');
    for (const id of ['prj-AAAAAAAAAAAAAAAA', foreign]) {
      assertError(await api.post('/api/v2/organizations/acme/workspaces', inProject('nowhere', id)), 404, {
        pointer: '/data/relationships/project/data/id',
      });
      assertError(
        await api.patch(`/api/v2/workspaces/${plain.body.data.id}`, {
          data: { type: 'workspaces', relationships: { project: { data: { type: 'projects', id } } } },
        }),
        404,
        { pointer: '/data/relationships/project/data/id' },
      );
    }
    assertError(
      await api.post('/api/v2/organizations/acme/workspaces', {
        data: {
          type: 'workspaces',
          attributes: { name: 'x' },
          relationships: { project: { data: { type: 'teams', id: infra } } },
        },
      }),
      422,
      { pointer: '/data/relationships/project/data/type' },
    );
    assertError(await api.get('/api/v2/organizations/acme/workspaces/nowhere'), 404);

    // A project holding workspaces is not deleted; once empty it is.
    assertError(await api.delete(`/api/v2/projects/${infra}`), 409, { detail: /holds workspaces/ });
    assertError(await api.delete(`/api/v2/projects/${defaultId}`), 409, { detail: /default project/ });
    for (const name of ['in-infra', 'empty-type'])
      assert.equal((await api.delete(`/api/v2/organizations/acme/workspaces/${name}`)).status, 204);
    assert.equal((await api.delete(`/api/v2/projects/${infra}`)).status, 204);
    assertError(await api.get(`/api/v2/projects/${infra}`), 404);
  });

  it('who sees and changes projects: owners, the organization token, manage/read teams, workspace grants', async () => {
    const secret = await createProject('acme', 'secret');
    const shared = await createProject('acme', 'shared');
    const ws = await api.post('/api/v2/organizations/acme/workspaces', inProject('shared-ws', shared));
    assertDoc(ws, 201);
    const granted = await userToken('gina');
    const team = await teamWith('ginas', {}, 'gina');
    assert.equal(
      (
        await api.post('/api/v2/team-workspaces', {
          data: {
            type: 'team-workspaces',
            attributes: { access: 'write' },
            relationships: {
              team: { data: { type: 'teams', id: team } },
              workspace: { data: { type: 'workspaces', id: ws.body.data.id } },
            },
          },
        })
      ).status,
      200,
    );
    // A member with a workspace grant sees that workspace's project only, and changes nothing.
    const seen = await granted.get('/api/v2/organizations/acme/projects');
    assertDoc(seen, 200);
    assert.deepEqual(
      seen.body.data.map((p: { id: string }) => p.id),
      [shared],
    );
    assert.deepEqual(seen.body.data[0].attributes.permissions['can-update'], false);
    assertError(await granted.get(`/api/v2/projects/${secret}`), 404);
    assertError(await granted.patch(`/api/v2/projects/${shared}`, projectBody({ name: 'mine' })), 404);
    assertError(await granted.post('/api/v2/organizations/acme/projects', projectBody({ name: 'mine' })), 404);
    assert.equal(
      (await granted.get('/api/v2/organizations/acme/projects?filter%5Bpermissions%5D%5Bupdate%5D')).body.data.length,
      0,
    );

    // read-projects sees them all; manage-projects also creates, renames and deletes.
    const reader = await userToken('rita');
    await teamWith('readers', { 'organization-access': { 'read-projects': true } }, 'rita');
    assert.ok((await reader.get(`/api/v2/projects/${secret}`)).status === 200);
    assertError(await reader.post('/api/v2/organizations/acme/projects', projectBody({ name: 'rita' })), 404);
    const manager = await userToken('mark');
    await teamWith('managers', { 'organization-access': { 'manage-projects': true } }, 'mark');
    const made = await createProject('acme', 'by-mark', manager);
    assertDoc(await manager.patch(`/api/v2/projects/${made}`, projectBody({ name: 'by mark' })), 200);
    assert.equal((await manager.delete(`/api/v2/projects/${made}`)).status, 204);

    // The organization token manages projects (HCP lets it); another organization sees nothing.
    const ot = await api.post('/api/v2/organizations/acme/authentication-token');
    const org = api.as(ot.body.data.attributes.token);
    const byOrg = await createProject('acme', 'by-org', org);
    assert.equal((await org.delete(`/api/v2/projects/${byOrg}`)).status, 204);
    const otherOt = await api.post('/api/v2/organizations/other/authentication-token');
    const outsider = api.as(otherOt.body.data.attributes.token);
    assertError(await outsider.get('/api/v2/organizations/acme/projects'), 404);
    assertError(await outsider.get(`/api/v2/projects/${shared}`), 404);
    assertError(await outsider.delete(`/api/v2/projects/${secret}`), 404);
  });
});
