import assert from 'node:assert/strict';
import type { TestServer } from '../support/test-server.js';
import { call } from './tfe-state-versions-fixture.js';
import type { Res } from './tfe-state-versions-fixture.js';

/**
 * The callers of the permission matrices, made over HTTP by the admin: users with their
 * tokens, teams with organization access and workspace grants, team and organization
 * tokens.
 */

/** A call as the admin that must answer `status`. */
export async function asAdmin(
  srv: TestServer,
  method: string,
  path: string,
  body: unknown,
  status: number,
): Promise<Res> {
  const r = await call(srv, method, path, { body });
  assert.equal(r.status, status, `${method} ${path}: ${r.text}`);
  return r;
}

/** A new token from a token endpoint (user, team or organization), made by the admin. */
export async function tokenAt(srv: TestServer, path: string): Promise<string> {
  const r = await asAdmin(srv, 'POST', path, { data: { type: 'authentication-tokens', attributes: {} } }, 201);
  return r.json.data.attributes.token as string;
}

/** A new user and a token of theirs. */
export async function userToken(srv: TestServer, username: string, siteAdmin = false): Promise<string> {
  const admin = (await srv.deps.tfe.identity.authenticate(srv.rootToken))!;
  const user = await srv.deps.tfe.identity.createUser(admin, { username, siteAdmin });
  return tokenAt(srv, `/api/v2/users/${user.id}/authentication-tokens`);
}

export async function joinTeam(srv: TestServer, teamId: string, username: string): Promise<void> {
  await asAdmin(
    srv,
    'POST',
    `/api/v2/teams/${teamId}/relationships/users`,
    { data: [{ type: 'users', id: username }] },
    204,
  );
}

export async function ownersTeamId(srv: TestServer, organization: string): Promise<string> {
  const teams = await asAdmin(srv, 'GET', `/api/v2/organizations/${organization}/teams`, undefined, 200);
  const owners = (teams.json.data as Array<{ id: string; attributes: { name: string } }>).find(
    (t) => t.attributes.name === 'owners',
  );
  assert.ok(owners, `${organization} has an owners team`);
  return owners.id;
}

export async function createTeam(
  srv: TestServer,
  organization: string,
  name: string,
  attributes: Record<string, unknown> = {},
): Promise<string> {
  const t = await asAdmin(
    srv,
    'POST',
    `/api/v2/organizations/${organization}/teams`,
    { data: { type: 'teams', attributes: { name, ...attributes } } },
    201,
  );
  return t.json.data.id as string;
}

export async function grantTeam(
  srv: TestServer,
  teamId: string,
  workspaceId: string,
  attributes: Record<string, unknown>,
): Promise<void> {
  const relationships = {
    team: { data: { type: 'teams', id: teamId } },
    workspace: { data: { type: 'workspaces', id: workspaceId } },
  };
  await asAdmin(
    srv,
    'POST',
    '/api/v2/team-workspaces',
    { data: { type: 'team-workspaces', attributes, relationships } },
    200,
  );
}
