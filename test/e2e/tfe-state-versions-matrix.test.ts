import { before, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describeWithServer } from '../support/test-server.js';
import { orgBody, wsBody } from '../support/tfe-http.js';
import { asAdmin, createTeam, grantTeam, joinTeam, ownersTeamId, tokenAt, userToken } from './tfe-principals.js';
import { b64, call, count, createBody, inlineAttrs, md5, put, stateFile } from './tfe-state-versions-fixture.js';
import type { Res } from './tfe-state-versions-fixture.js';

/**
 * The whole permission matrix of the state versions API: every endpoint, called over
 * HTTP by every kind of caller, answers exactly what the specification's permission
 * table says (docs: /work/shared/spec/state-versions-service.md, "Authentication"):
 *
 *   list, show, current                 read state versions
 *   create (inline or pending), rollback  read and write state versions; organization tokens refused
 *   soft delete, restore, purge         organization owner
 *   a refused read or action            the 404 of a missing resource
 *
 * What the spec leaves open is taken from the reference (tfe-state-api.md) and marked:
 *   - which team levels hold which state permission (reference 8.2): read and plan read,
 *     write and admin also write, custom follows its `state-versions` field; `lock` is the
 *     reference's "write includes lock/unlock", needed because create and rollback require
 *     the caller's own lock (custom grants here all allow locking, so only the state
 *     permission differs between them);
 *   - downloads and a version's outputs need full state read, the current outputs only
 *     read-outputs (reference 6.2, 8.2);
 *   - the list answers 404 to a caller who may not read, like an unknown workspace (4.5);
 *   - [P] project choices where neither says anything (decision 0003): a site admin acts as
 *     an owner of every organization; the organization token reads state (the spec leaves
 *     the token kinds of the reads open) but never writes it or holds a lock.
 *
 * The upload URL (`PUT /v1/object/<secret>`) takes no Authorization at all: the secret is
 * the credential, so it has no row; each allowed pending create below uploads through it
 * without a token.
 */

const COLUMNS = [
  'lock',
  'list',
  'show',
  'current',
  'download',
  'json-download',
  'outputs',
  'output',
  'current-outputs',
  'create',
  'create-pending',
  'rollback',
  'soft-delete',
  'restore',
  'purge',
] as const;
type Column = (typeof COLUMNS)[number];

/** Custom grants, named after their `state-versions` field; all of them may lock. */
const LEVELS = [
  'none',
  'read',
  'plan',
  'write',
  'admin',
  'custom:none',
  'custom:read-outputs',
  'custom:read',
  'custom:write',
] as const;
type Level = (typeof LEVELS)[number];

// Expected status per caller (rows) and endpoint (columns). "team <level>" is that team's
// token, "user <level>" a user whose only team is that team; "other org" callers own or
// speak for a second organization and nothing in this one.
// prettier-ignore
const MATRIX: Record<string, string> = {
  //                          lock list show curr dl   json outs out  cout new  pend roll soft rest purge
  'site-admin user [P]':     '200  200  200  200  200  200  200  200  200  201  201  201  200  200  200',
  'owners-team user':        '200  200  200  200  200  200  200  200  200  201  201  201  200  200  200',
  'owners-team token':       '200  200  200  200  200  200  200  200  200  201  201  201  200  200  200',
  'organization token [P]':  '404  200  200  200  200  200  200  200  200  404  404  404  404  404  404',
  'user none':               '404  404  404  404  404  404  404  404  404  404  404  404  404  404  404',
  'team none':               '404  404  404  404  404  404  404  404  404  404  404  404  404  404  404',
  'user read':               '404  200  200  200  200  200  200  200  200  404  404  404  404  404  404',
  'team read':               '404  200  200  200  200  200  200  200  200  404  404  404  404  404  404',
  'user plan':               '404  200  200  200  200  200  200  200  200  404  404  404  404  404  404',
  'team plan':               '404  200  200  200  200  200  200  200  200  404  404  404  404  404  404',
  'user write':              '200  200  200  200  200  200  200  200  200  201  201  201  404  404  404',
  'team write':              '200  200  200  200  200  200  200  200  200  201  201  201  404  404  404',
  'user admin':              '200  200  200  200  200  200  200  200  200  201  201  201  404  404  404',
  'team admin':              '200  200  200  200  200  200  200  200  200  201  201  201  404  404  404',
  'user custom:none':        '200  404  404  404  404  404  404  404  404  404  404  404  404  404  404',
  'team custom:none':        '200  404  404  404  404  404  404  404  404  404  404  404  404  404  404',
  'user custom:read-outputs':'200  404  404  404  404  404  404  404  200  404  404  404  404  404  404',
  'team custom:read-outputs':'200  404  404  404  404  404  404  404  200  404  404  404  404  404  404',
  'user custom:read':        '200  200  200  200  200  200  200  200  200  404  404  404  404  404  404',
  'team custom:read':        '200  200  200  200  200  200  200  200  200  404  404  404  404  404  404',
  'user custom:write':       '200  200  200  200  200  200  200  200  200  201  201  201  404  404  404',
  'team custom:write':       '200  200  200  200  200  200  200  200  200  201  201  201  404  404  404',
  'other org: owner user':   '404  404  404  404  404  404  404  404  404  404  404  404  404  404  404',
  'other org: org token':    '404  404  404  404  404  404  404  404  404  404  404  404  404  404  404',
};

function expectations(row: string): Record<Column, number> {
  const cells = row.trim().split(/\s+/).map(Number);
  assert.equal(cells.length, COLUMNS.length, `matrix row "${row}"`);
  return Object.fromEntries(COLUMNS.map((c, i) => [c, cells[i]])) as Record<Column, number>;
}

interface Principal {
  name: string;
  token: string;
  expect: Record<Column, number>;
}

interface Ws {
  id: string;
  name: string;
  lineage: string;
  serial: number;
}

function grantAttributes(level: Exclude<Level, 'none'>): Record<string, unknown> {
  if (!level.startsWith('custom:')) return { access: level };
  return { access: 'custom', 'state-versions': level.slice('custom:'.length), 'workspace-locking': true };
}

const rollbackBody = (id: string) => ({
  data: {
    type: 'state-versions',
    relationships: { 'rollback-state-version': { data: { type: 'state-versions', id } } },
  },
});

describeWithServer('state versions: endpoint × token kind × permission matrix', (srv) => {
  const org = `mx-${randomUUID().slice(0, 8)}`;
  const principals: Principal[] = [];
  // Reads, writes (create, rollback) and the owner actions each get a workspace, so
  // writes never change what the reads see.
  let readWs: Ws;
  let writeWs: Ws;
  let ownerWs: Ws;
  let readV1: { id: string; outputId: string; bytes: Buffer; json: Buffer };

  const ok = (method: string, path: string, body: unknown, status: number) => asAdmin(srv, method, path, body, status);

  async function newWorkspace(): Promise<Ws> {
    const name = `ws-${randomUUID().slice(0, 8)}`;
    const r = await ok('POST', `/api/v2/organizations/${org}/workspaces`, wsBody(name), 201);
    return { id: r.json.data.id as string, name, lineage: randomUUID(), serial: 0 };
  }

  function add(name: string, tok: string): void {
    assert.ok(MATRIX[name], `no matrix row for ${name}`);
    principals.push({ name, token: tok, expect: expectations(MATRIX[name]) });
  }

  /** An inline version created by the admin, who holds the workspace's lock. */
  async function rootVersion(ws: Ws, more: Record<string, unknown> = {}): Promise<{ id: string; bytes: Buffer }> {
    ws.serial += 1;
    const bytes = stateFile(ws.serial, ws.lineage);
    const r = await ok(
      'POST',
      `/api/v2/workspaces/${ws.id}/state-versions`,
      createBody(inlineAttrs(bytes, ws.serial, ws.lineage, more)),
      201,
    );
    return { id: r.json.data.id as string, bytes };
  }

  async function statusOf(id: string): Promise<string> {
    return (await ok('GET', `/api/v2/state-versions/${id}`, undefined, 200)).json.data.attributes.status as string;
  }

  async function currentId(ws: Ws): Promise<string> {
    return (await ok('GET', `/api/v2/workspaces/${ws.id}/current-state-version`, undefined, 200)).json.data
      .id as string;
  }

  const countOf = (ws: Ws) => count(srv, { org, wsName: ws.name, wsId: ws.id, lineage: ws.lineage });

  /** Compares a response with the matrix; a refusal must be the JSON:API 404 of a missing resource. */
  function check(misses: string[], p: Principal, column: Column, r: Res): void {
    const want = p.expect[column];
    if (r.status !== want) {
      misses.push(`${p.name} × ${column}: expected ${want}, got ${r.status} ${r.text.slice(0, 160)}`);
    } else if (
      want === 404 &&
      !(
        r.json?.errors?.[0]?.status === '404' && /application\/vnd\.api\+json/.test(r.headers.get('content-type') ?? '')
      )
    ) {
      misses.push(`${p.name} × ${column}: 404 without a JSON:API error document: ${r.text.slice(0, 160)}`);
    }
  }

  before(async () => {
    await ok('POST', '/api/v2/organizations', orgBody(org), 201);
    readWs = await newWorkspace();
    writeWs = await newWorkspace();
    ownerWs = await newWorkspace();

    add('site-admin user [P]', await userToken(srv, `${org}-site-admin`, true));
    const owners = await ownersTeamId(srv, org);
    add('owners-team user', await userToken(srv, `${org}-owner`));
    await joinTeam(srv, owners, `${org}-owner`);
    add('owners-team token', await tokenAt(srv, `/api/v2/teams/${owners}/authentication-token`));
    add('organization token [P]', await tokenAt(srv, `/api/v2/organizations/${org}/authentication-token`));
    const other = `${org}-other`;
    await ok('POST', '/api/v2/organizations', orgBody(other), 201);
    const otherOwners = await ownersTeamId(srv, other);
    add('other org: owner user', await userToken(srv, `${other}-owner`));
    await joinTeam(srv, otherOwners, `${other}-owner`);
    add('other org: org token', await tokenAt(srv, `/api/v2/organizations/${other}/authentication-token`));

    for (const level of LEVELS) {
      const slug = level.replace(':', '-');
      const teamId = await createTeam(srv, org, `team-${slug}`);
      if (level !== 'none') {
        for (const ws of [readWs, writeWs, ownerWs]) await grantTeam(srv, teamId, ws.id, grantAttributes(level));
      }
      const username = `${org}-${slug}`;
      const userTok = await userToken(srv, username);
      await joinTeam(srv, teamId, username);
      add(`user ${level}`, userTok);
      add(`team ${level}`, await tokenAt(srv, `/api/v2/teams/${teamId}/authentication-token`));
    }
    assert.deepEqual(
      principals.map((p) => p.name).sort(),
      Object.keys(MATRIX).sort(),
      'every matrix row is a principal',
    );

    // Read targets: v1 (with JSON state and outputs) and a newer current version.
    for (const ws of [readWs, writeWs, ownerWs])
      await ok('POST', `/api/v2/workspaces/${ws.id}/actions/lock`, { reason: 'matrix setup' }, 200);
    const json = Buffer.from(JSON.stringify({ format_version: '1.0', values: { outputs: {} } }));
    const v1 = await rootVersion(readWs, { 'json-state': b64(json) });
    await rootVersion(readWs);
    await srv.deps.worker.runUntilIdle();
    const shown = await ok('GET', `/api/v2/state-versions/${v1.id}`, undefined, 200);
    readV1 = {
      id: v1.id,
      outputId: shown.json.data.relationships.outputs.data[0].id as string,
      bytes: v1.bytes,
      json,
    };
    await ok('POST', `/api/v2/workspaces/${readWs.id}/actions/unlock`, undefined, 200);
    // The writes roll back to this one; the admin lets go of the lock the callers need.
    await rootVersion(writeWs);
    await ok('POST', `/api/v2/workspaces/${writeWs.id}/actions/unlock`, undefined, 200);
  });

  it("reads: list, show, current, both downloads, a version's outputs, one output, the current outputs", async () => {
    const q = new URLSearchParams({ 'filter[workspace][name]': readWs.name, 'filter[organization][name]': org });
    const reads: Array<[Column, string, ((r: Res) => void)?]> = [
      ['list', `/api/v2/state-versions?${q}`, (r) => assert.equal(r.json.meta.pagination['total-count'], 2)],
      ['show', `/api/v2/state-versions/${readV1.id}`, (r) => assert.equal(r.json.data.id, readV1.id)],
      [
        'current',
        `/api/v2/workspaces/${readWs.id}/current-state-version`,
        (r) => assert.equal(r.json.data.type, 'state-versions'),
      ],
      [
        'download',
        `/api/v2/state-versions/${readV1.id}/download`,
        (r) => assert.equal(r.text, readV1.bytes.toString()),
      ],
      [
        'json-download',
        `/api/v2/state-versions/${readV1.id}/json-download`,
        (r) => assert.equal(r.text, readV1.json.toString()),
      ],
      ['outputs', `/api/v2/state-versions/${readV1.id}/outputs`, (r) => assert.equal(r.json.data.length, 2)],
      [
        'output',
        `/api/v2/state-version-outputs/${readV1.outputId}`,
        (r) => assert.equal(r.json.data.id, readV1.outputId),
      ],
      [
        'current-outputs',
        `/api/v2/workspaces/${readWs.id}/current-state-version-outputs`,
        (r) => assert.equal(r.json.data.length, 2),
      ],
    ];
    const misses: string[] = [];
    // Reads change nothing, so the callers go side by side.
    await Promise.all(
      principals.map(async (p) => {
        for (const [column, path, body] of reads) {
          const r = await call(srv, 'GET', path, { token: p.token });
          check(misses, p, column, r);
          if (r.status === 200 && body) body(r);
        }
      }),
    );
    assert.deepEqual(misses.sort(), []);
  });

  it('writes: create inline, create pending (upload without a token), rollback; a refusal writes nothing', async () => {
    const base = await currentId(writeWs);
    const misses: string[] = [];
    for (const p of principals) {
      const lock = await call(srv, 'POST', `/api/v2/workspaces/${writeWs.id}/actions/lock`, {
        token: p.token,
        body: { reason: 'matrix' },
      });
      check(misses, p, 'lock', lock);
      const countBefore = await countOf(writeWs);
      const currentBefore = await currentId(writeWs);

      writeWs.serial += 1;
      const inline = stateFile(writeWs.serial, writeWs.lineage);
      const created = await call(srv, 'POST', `/api/v2/workspaces/${writeWs.id}/state-versions`, {
        token: p.token,
        body: createBody(inlineAttrs(inline, writeWs.serial, writeWs.lineage)),
      });
      check(misses, p, 'create', created);

      writeWs.serial += 1;
      const later = stateFile(writeWs.serial, writeWs.lineage);
      const pending = await call(srv, 'POST', `/api/v2/workspaces/${writeWs.id}/state-versions`, {
        token: p.token,
        body: createBody({ serial: writeWs.serial, md5: md5(later), lineage: writeWs.lineage }),
      });
      check(misses, p, 'create-pending', pending);
      if (pending.status === 201) {
        const uploaded = await put(pending.json.data.attributes['hosted-state-upload-url'] as string, later);
        assert.equal(uploaded.status, 200, `${p.name}: upload without Authorization: ${uploaded.text}`);
      }

      const rolled = await call(srv, 'PATCH', `/api/v2/workspaces/${writeWs.id}/state-versions`, {
        token: p.token,
        body: rollbackBody(base),
      });
      check(misses, p, 'rollback', rolled);
      if (rolled.status === 201) assert.equal(rolled.json.data.relationships['rollback-state-version'].data.id, base);

      const written = (['create', 'create-pending', 'rollback'] as const).filter((c) => p.expect[c] === 201).length;
      const added = (await countOf(writeWs)) - countBefore;
      if (added !== written) misses.push(`${p.name}: ${added} new versions, expected ${written}`);
      if (written === 0 && (await currentId(writeWs)) !== currentBefore)
        misses.push(`${p.name}: the current version changed`);

      if (lock.status === 200) {
        const un = await call(srv, 'POST', `/api/v2/workspaces/${writeWs.id}/actions/unlock`, { token: p.token });
        assert.equal(un.status, 200, `${p.name} unlocks: ${un.text}`);
      }
    }
    assert.deepEqual(misses, []);
  });

  it('organization-owner actions: soft delete, restore, purge; a refusal leaves the status as it was', async () => {
    // The admin holds this workspace's lock from the setup and makes every target.
    const misses: string[] = [];
    const action = (id: string, name: string, tok: string) =>
      call(srv, 'POST', `/api/v2/state-versions/${id}/actions/${name}`, { token: tok, body: undefined });
    for (const p of principals) {
      const finalized = (await rootVersion(ownerWs)).id;
      const toRestore = (await rootVersion(ownerWs)).id;
      const toPurge = (await rootVersion(ownerWs)).id;
      await rootVersion(ownerWs); // the targets are not current
      for (const id of [toRestore, toPurge])
        await ok('POST', `/api/v2/state-versions/${id}/actions/soft_delete_backing_data`, undefined, 200);

      const steps: Array<[Column, string, string, string, string]> = [
        ['soft-delete', finalized, 'soft_delete_backing_data', 'finalized', 'backing_data_soft_deleted'],
        ['restore', toRestore, 'restore_backing_data', 'backing_data_soft_deleted', 'finalized'],
        [
          'purge',
          toPurge,
          'permanently_delete_backing_data',
          'backing_data_soft_deleted',
          'backing_data_permanently_deleted',
        ],
      ];
      for (const [column, id, name, from, to] of steps) {
        const r = await action(id, name, p.token);
        check(misses, p, column, r);
        const want = p.expect[column] === 200 ? to : from;
        const now = await statusOf(id);
        if (now !== want) misses.push(`${p.name} × ${column}: status ${now}, expected ${want}`);
      }
    }
    assert.deepEqual(misses, []);
  });
});
