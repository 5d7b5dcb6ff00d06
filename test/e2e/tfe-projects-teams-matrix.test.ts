import { before, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describeWithServer } from '../support/test-server.js';
import { orgBody } from '../support/tfe-http.js';
import { asAdmin, createTeam, grantTeam, joinTeam, ownersTeamId, tokenAt, userToken } from './tfe-principals.js';
import { call } from './tfe-state-versions-fixture.js';
import type { Res } from './tfe-state-versions-fixture.js';

/**
 * The projects API and the way to ownership, called over HTTP by every kind of caller
 * (docs/tfe-teams-projects.md, decision 0022):
 *
 *   projects     list (and how many it shows), show a project holding a workspace the caller
 *                has a grant on (P) and one without (Q), create, rename, delete, create a
 *                workspace in P, move a workspace from P to Q
 *   the owners   mint the owners team's legacy token and a described one, add a user to the
 *   team         owners team: only owners; the organization token, which may do the same
 *                for any other team (last column), may not, so it cannot make itself an owner
 *                and through that lock, write and permanently delete state
 *
 * A refusal is the JSON:API 404 of a missing resource.
 */

const COLUMNS = [
  'list',
  'seen',
  'show-p',
  'show-q',
  'create',
  'rename',
  'delete',
  'ws-in-p',
  'move',
  'owners-token',
  'owners-tokens',
  'owners-member',
  'team-tokens',
] as const;
type Column = (typeof COLUMNS)[number];

// "seen" is how many projects the list shows (the default project, P and Q exist); "-" when it is refused.
// prettier-ignore
const MATRIX: Record<string, string> = {
  //                           list seen shP  shQ  new  ren  del  wsP  move otok otks omem ttok
  'site-admin user':          '200  3    200  200  201  200  204  201  200  201  201  204  201',
  'owners-team user':         '200  3    200  200  201  200  204  201  200  201  201  204  201',
  'owners-team token':        '200  3    200  200  201  200  204  201  200  201  201  204  201',
  'organization token':       '200  3    200  200  201  200  204  201  200  404  404  404  201',
  'user, workspace grant':    '200  1    200  404  404  404  404  404  404  404  404  404  404',
  'team, workspace grant':    '200  1    200  404  404  404  404  404  404  404  404  404  404',
  'user, no grant':           '200  0    404  404  404  404  404  404  404  404  404  404  404',
  'user, manage-projects':    '200  3    200  200  201  200  204  201  200  404  404  404  404',
  'team, manage-projects':    '200  3    200  200  201  200  204  201  200  404  404  404  404',
  'user, read-projects':      '200  3    200  200  404  404  404  404  404  404  404  404  404',
  'user, manage-workspaces':  '200  3    200  200  404  404  404  201  200  404  404  404  404',
  'user, read-workspaces':    '200  3    200  200  404  404  404  404  404  404  404  404  404',
  'other org: owner user':    '404  -    404  404  404  404  404  404  404  404  404  404  404',
  'other org: org token':     '404  -    404  404  404  404  404  404  404  404  404  404  404',
};

interface Principal {
  name: string;
  token: string;
  expect: Record<Column, string>;
}

function expectations(row: string): Record<Column, string> {
  const cells = row.trim().split(/\s+/);
  assert.equal(cells.length, COLUMNS.length, `matrix row "${row}"`);
  return Object.fromEntries(COLUMNS.map((c, i) => [c, cells[i]])) as Record<Column, string>;
}

const projectBody = (name: string) => ({ data: { type: 'projects', attributes: { name } } });
const toProject = (id: string) => ({
  data: { type: 'workspaces', relationships: { project: { data: { type: 'projects', id } } } },
});

describeWithServer('projects and the owners team: endpoint × caller matrix', (srv) => {
  const org = `pm-${randomUUID().slice(0, 8)}`;
  const principals: Principal[] = [];
  let ownersId: string;
  let plainTeam: string;
  let projectP: string;
  let projectQ: string;
  let workspaceW: string;

  const ok = (method: string, path: string, body: unknown, status: number) => asAdmin(srv, method, path, body, status);

  function add(name: string, token: string): void {
    assert.ok(MATRIX[name], `no matrix row for ${name}`);
    principals.push({ name, token, expect: expectations(MATRIX[name]) });
  }

  /** A member of a new team with these attributes (organization access), and the team. */
  async function member(name: string, attributes: Record<string, unknown> = {}): Promise<string> {
    const slug = name.replace(/ /g, '-');
    const teamId = await createTeam(srv, org, `t-${slug}`, attributes);
    const username = `${org}-${slug}`;
    add(`user, ${name}`, await userToken(srv, username));
    await joinTeam(srv, teamId, username);
    return teamId;
  }

  function check(misses: string[], p: Principal, column: Column, r: Res): void {
    const want = Number(p.expect[column]);
    if (r.status !== want)
      misses.push(`${p.name} × ${column}: expected ${want}, got ${r.status} ${r.text.slice(0, 160)}`);
    else if (want === 404 && r.json?.errors?.[0]?.status !== '404')
      misses.push(`${p.name} × ${column}: 404 without a JSON:API error document: ${r.text.slice(0, 160)}`);
  }

  before(async () => {
    await ok('POST', '/api/v2/organizations', orgBody(org), 201);
    projectP = (await ok('POST', `/api/v2/organizations/${org}/projects`, projectBody('Project P'), 201)).json.data.id;
    projectQ = (await ok('POST', `/api/v2/organizations/${org}/projects`, projectBody('Project Q'), 201)).json.data.id;
    const inP = { data: { ...toProject(projectP).data, attributes: { name: 'w' } } };
    const w = await ok('POST', `/api/v2/organizations/${org}/workspaces`, inP, 201);
    workspaceW = w.json.data.id;
    ownersId = await ownersTeamId(srv, org);
    plainTeam = await createTeam(srv, org, 'plain');

    add('site-admin user', await userToken(srv, `${org}-site-admin`, true));
    add('owners-team user', await userToken(srv, `${org}-owner`));
    await joinTeam(srv, ownersId, `${org}-owner`);
    add('owners-team token', await tokenAt(srv, `/api/v2/teams/${ownersId}/authentication-token`));
    add('organization token', await tokenAt(srv, `/api/v2/organizations/${org}/authentication-token`));
    const granted = await member('workspace grant');
    await grantTeam(srv, granted, workspaceW, { access: 'write' });
    add('team, workspace grant', await tokenAt(srv, `/api/v2/teams/${granted}/authentication-token`));
    await member('no grant');
    const managers = await member('manage-projects', { 'organization-access': { 'manage-projects': true } });
    add('team, manage-projects', await tokenAt(srv, `/api/v2/teams/${managers}/authentication-token`));
    await member('read-projects', { 'organization-access': { 'read-projects': true } });
    await member('manage-workspaces', { 'organization-access': { 'manage-workspaces': true } });
    await member('read-workspaces', { 'organization-access': { 'read-workspaces': true } });
    const other = `${org}-other`;
    await ok('POST', '/api/v2/organizations', orgBody(other), 201);
    add('other org: owner user', await userToken(srv, `${other}-owner`));
    await joinTeam(srv, await ownersTeamId(srv, other), `${other}-owner`);
    add('other org: org token', await tokenAt(srv, `/api/v2/organizations/${other}/authentication-token`));
    await userToken(srv, `${org}-candidate`);
    assert.deepEqual(
      principals.map((p) => p.name).sort(),
      Object.keys(MATRIX).sort(),
      'every matrix row is a principal',
    );
  });

  it('reads: the list and what it shows, a project with a granted workspace and one without', async () => {
    const misses: string[] = [];
    await Promise.all(
      principals.map(async (p) => {
        const list = await call(srv, 'GET', `/api/v2/organizations/${org}/projects`, { token: p.token });
        check(misses, p, 'list', list);
        const seen = list.status === 200 ? String(list.json.data.length) : '-';
        if (seen !== p.expect.seen) misses.push(`${p.name} × seen: expected ${p.expect.seen}, got ${seen}`);
        check(misses, p, 'show-p', await call(srv, 'GET', `/api/v2/projects/${projectP}`, { token: p.token }));
        check(misses, p, 'show-q', await call(srv, 'GET', `/api/v2/projects/${projectQ}`, { token: p.token }));
      }),
    );
    assert.deepEqual(misses.sort(), []);
  });

  it('writes: create, rename, delete, a workspace in a project, a move; a refusal changes nothing', async () => {
    const misses: string[] = [];
    for (const [i, p] of principals.entries()) {
      const created = await call(srv, 'POST', `/api/v2/organizations/${org}/projects`, {
        token: p.token,
        body: projectBody(`made ${i}`),
      });
      check(misses, p, 'create', created);
      if (created.status === 201) await ok('DELETE', `/api/v2/projects/${created.json.data.id}`, undefined, 204);

      const renamed = await call(srv, 'PATCH', `/api/v2/projects/${projectQ}`, {
        token: p.token,
        body: projectBody(`Project Q ${i}`),
      });
      check(misses, p, 'rename', renamed);
      const q = await ok('GET', `/api/v2/projects/${projectQ}`, undefined, 200);
      if ((q.json.data.attributes.name === `Project Q ${i}`) !== (renamed.status === 200))
        misses.push(`${p.name} × rename: the name is ${q.json.data.attributes.name}`);

      const doomed = (await ok('POST', `/api/v2/organizations/${org}/projects`, projectBody(`doomed ${i}`), 201)).json
        .data.id;
      const deleted = await call(srv, 'DELETE', `/api/v2/projects/${doomed}`, { token: p.token });
      check(misses, p, 'delete', deleted);
      if (deleted.status !== 204) await ok('DELETE', `/api/v2/projects/${doomed}`, undefined, 204);

      const body = { data: { ...toProject(projectP).data, attributes: { name: `in-p-${i}` } } };
      const inP = await call(srv, 'POST', `/api/v2/organizations/${org}/workspaces`, { token: p.token, body });
      check(misses, p, 'ws-in-p', inP);
      if (inP.status === 201) {
        assert.equal(inP.json.data.relationships.project.data.id, projectP);
        await ok('DELETE', `/api/v2/workspaces/${inP.json.data.id}`, undefined, 204);
      }

      const moved = await call(srv, 'PATCH', `/api/v2/workspaces/${workspaceW}`, {
        token: p.token,
        body: toProject(projectQ),
      });
      check(misses, p, 'move', moved);
      const w = await ok('GET', `/api/v2/workspaces/${workspaceW}`, undefined, 200);
      const now = w.json.data.relationships.project.data.id as string;
      if ((now === projectQ) !== (moved.status === 200)) misses.push(`${p.name} × move: the workspace is in ${now}`);
      if (now !== projectP) await ok('PATCH', `/api/v2/workspaces/${workspaceW}`, toProject(projectP), 200);
    }
    assert.deepEqual(misses, []);
  });

  it('the way to ownership: only owners mint owners team tokens or add owners; other teams manageable', async () => {
    const misses: string[] = [];
    const membersOfOwners = async () =>
      (await ok('GET', `/api/v2/teams/${ownersId}`, undefined, 200)).json.data.attributes['users-count'] as number;
    const ownersBefore = await membersOfOwners();
    for (const p of principals) {
      const legacy = await call(srv, 'POST', `/api/v2/teams/${ownersId}/authentication-token`, {
        token: p.token,
        body: { data: { type: 'authentication-token' } },
      });
      check(misses, p, 'owners-token', legacy);
      if (legacy.status === 201) {
        // Regenerating replaces the owners team's legacy token: its principal carries on with the new one.
        const owners = principals.find((x) => x.name === 'owners-team token') as Principal;
        owners.token = legacy.json.data.attributes.token as string;
      }
      const described = await call(srv, 'POST', `/api/v2/teams/${ownersId}/authentication-tokens`, {
        token: p.token,
        body: { data: { type: 'authentication-token', attributes: { description: `by ${p.name}` } } },
      });
      check(misses, p, 'owners-tokens', described);
      if (described.status === 201)
        await ok('DELETE', `/api/v2/authentication-tokens/${described.json.data.id}`, undefined, 204);

      const joined = await call(srv, 'POST', `/api/v2/teams/${ownersId}/relationships/users`, {
        token: p.token,
        body: { data: [{ type: 'users', id: `${org}-candidate` }] },
      });
      check(misses, p, 'owners-member', joined);
      const owners = await membersOfOwners();
      if ((owners === ownersBefore + 1) !== (joined.status === 204))
        misses.push(`${p.name} × owners-member: the owners team has ${owners} members`);
      if (owners !== ownersBefore)
        await ok(
          'DELETE',
          `/api/v2/teams/${ownersId}/relationships/users`,
          { data: [{ type: 'users', id: `${org}-candidate` }] },
          204,
        );

      const other = await call(srv, 'POST', `/api/v2/teams/${plainTeam}/authentication-tokens`, {
        token: p.token,
        body: { data: { type: 'authentication-token', attributes: { description: `for ${p.name}` } } },
      });
      check(misses, p, 'team-tokens', other);
    }
    assert.deepEqual(misses, []);
    // Without an owners-team token, the organization token still cannot lock, write or purge state.
    const orgToken = principals.find((p) => p.name === 'organization token') as Principal;
    const lock = await call(srv, 'POST', `/api/v2/workspaces/${workspaceW}/actions/lock`, {
      token: orgToken.token,
      body: {},
    });
    assert.equal(lock.status, 404, lock.text);
  });
});
