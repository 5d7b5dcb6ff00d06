import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import type { TestServer } from '../support/test-server.js';

/** Small HTTP helpers for the state versions end-to-end tests (real server, fetch). */

export interface Res {
  status: number;
  headers: Headers;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
}

export const JSONAPI = 'application/vnd.api+json';

export async function call(
  srv: TestServer,
  method: string,
  path: string,
  opts: {
    token?: string | null;
    body?: unknown;
    raw?: string | Buffer;
    contentType?: string;
    headers?: Record<string, string>;
  } = {},
): Promise<Res> {
  const headers: Record<string, string> = { accept: JSONAPI, ...opts.headers };
  const token = opts.token === undefined ? srv.rootToken : opts.token;
  if (token) headers.authorization = `Bearer ${token}`;
  let body: string | Buffer | undefined;
  if (opts.raw !== undefined) {
    body = opts.raw;
    headers['content-type'] = opts.contentType ?? JSONAPI;
  } else if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] = opts.contentType ?? JSONAPI;
  }
  const url = path.startsWith('http') ? path : `${srv.url}${path}`;
  return toRes(await fetch(url, { method, headers, body }));
}

export async function toRes(r: Response): Promise<Res> {
  const text = await r.text();
  let json: unknown;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: r.status, headers: r.headers, text, json };
}

/** Asserts a JSON:API error document with the given status (and pointer, when given). */
export function assertError(r: Res, status: number, pointer?: string, detail?: RegExp): void {
  assert.equal(r.status, status, `expected ${status}, got ${r.status}: ${r.text}`);
  assert.match(r.headers.get('content-type') ?? '', /application\/vnd\.api\+json/);
  assert.equal(r.json.errors.length, 1);
  const e = r.json.errors[0];
  assert.equal(e.status, String(status));
  assert.equal(typeof e.title, 'string');
  if (pointer !== undefined) assert.equal(e.source?.pointer, pointer, `pointer of ${r.text}`);
  if (detail) assert.match(e.detail, detail);
}

export function md5(b: Buffer | string): string {
  return createHash('md5').update(b).digest('hex');
}

export function b64(b: Buffer | string): string {
  return Buffer.from(b).toString('base64');
}

/** A v4 state file with the given serial and lineage, and one output and one resource. */
export function stateFile(serial: number, lineage: string, extra = ''): Buffer {
  return Buffer.from(
    `${JSON.stringify(
      {
        version: 4,
        terraform_version: '1.9.5',
        serial,
        lineage,
        outputs: {
          greeting: { value: `hello ${serial}${extra}`, type: 'string' },
          secret: { value: 's3cr3t', type: 'string', sensitive: true },
        },
        resources: [
          {
            mode: 'managed',
            type: 'null_resource',
            name: 'n',
            provider: 'provider["registry.terraform.io/hashicorp/null"]',
            instances: [{ schema_version: 0, attributes: { id: '1' } }],
          },
          {
            mode: 'managed',
            type: 'random_pet',
            name: 'p',
            provider: 'provider["registry.terraform.io/hashicorp/random"]',
            instances: [
              { index_key: 0, schema_version: 0, attributes: { id: 'a' } },
              { index_key: 1, schema_version: 0, attributes: { id: 'b' } },
            ],
          },
        ],
        check_results: null,
      },
      null,
      2,
    )}\n`,
  );
}

export function createBody(attrs: Record<string, unknown>, relationships?: Record<string, unknown>): unknown {
  return { data: { type: 'state-versions', attributes: attrs, ...(relationships ? { relationships } : {}) } };
}

export function inlineAttrs(
  bytes: Buffer,
  serial: number,
  lineage: string | null,
  more: Record<string, unknown> = {},
): Record<string, unknown> {
  return { serial, md5: md5(bytes), ...(lineage === null ? {} : { lineage }), state: b64(bytes), ...more };
}

export interface WorkspaceFixture {
  org: string;
  wsName: string;
  wsId: string;
  lineage: string;
}

/** A fresh organization and workspace (as the admin), locked by the admin unless told otherwise. */
export async function workspace(srv: TestServer, opts: { lock?: boolean } = {}): Promise<WorkspaceFixture> {
  const org = `org-${randomUUID().slice(0, 8)}`;
  const o = await call(srv, 'POST', '/api/v2/organizations', {
    body: { data: { type: 'organizations', attributes: { name: org, email: `${org}@example.com` } } },
  });
  assert.equal(o.status, 201, o.text);
  const wsName = `ws-${randomUUID().slice(0, 8)}`;
  const w = await call(srv, 'POST', `/api/v2/organizations/${org}/workspaces`, {
    body: { data: { type: 'workspaces', attributes: { name: wsName } } },
  });
  assert.equal(w.status, 201, w.text);
  const wsId = w.json.data.id as string;
  if (opts.lock ?? true) await lock(srv, wsId);
  return { org, wsName, wsId, lineage: randomUUID() };
}

export async function lock(srv: TestServer, wsId: string, token?: string): Promise<void> {
  const r = await call(srv, 'POST', `/api/v2/workspaces/${wsId}/actions/lock`, { token, body: { reason: 'test' } });
  assert.equal(r.status, 200, r.text);
}

export async function unlock(srv: TestServer, wsId: string, token?: string, force = false): Promise<Res> {
  return call(srv, 'POST', `/api/v2/workspaces/${wsId}/actions/${force ? 'force-unlock' : 'unlock'}`, { token });
}

/** Creates an inline version and returns its document's data. */
export async function createInline(
  srv: TestServer,
  f: WorkspaceFixture,
  serial: number,
  opts: { extra?: string; token?: string; force?: boolean } = {},
) {
  const bytes = stateFile(serial, f.lineage, opts.extra);
  const r = await call(srv, 'POST', `/api/v2/workspaces/${f.wsId}/state-versions`, {
    token: opts.token,
    body: createBody(inlineAttrs(bytes, serial, f.lineage, opts.force ? { force: true } : {})),
  });
  assert.equal(r.status, 201, r.text);
  return { data: r.json.data, bytes };
}

/** Creates a pending version (no inline state). */
export async function createPending(srv: TestServer, f: WorkspaceFixture, serial: number, bytes: Buffer) {
  const r = await call(srv, 'POST', `/api/v2/workspaces/${f.wsId}/state-versions`, {
    body: createBody({ serial, md5: md5(bytes), lineage: f.lineage }),
  });
  assert.equal(r.status, 201, r.text);
  return r.json.data;
}

export async function put(url: string, body: Buffer | string, contentType = 'application/octet-stream'): Promise<Res> {
  return toRes(await fetch(url, { method: 'PUT', headers: { 'content-type': contentType }, body }));
}

export async function download(
  srv: TestServer,
  url: string,
  token: string | null = srv.rootToken,
): Promise<{ status: number; body: Buffer }> {
  const r = await fetch(url, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  return { status: r.status, body: Buffer.from(await r.arrayBuffer()) };
}

export async function count(srv: TestServer, f: WorkspaceFixture, status?: string): Promise<number> {
  const q = new URLSearchParams({ 'filter[workspace][name]': f.wsName, 'filter[organization][name]': f.org });
  if (status) q.set('filter[status]', status);
  const r = await call(srv, 'GET', `/api/v2/state-versions?${q}`);
  assert.equal(r.status, 200, r.text);
  return r.json.meta.pagination['total-count'] as number;
}

/** A new team of the workspace's organization with `access` on it (none when null), and a team token. */
export async function teamWithAccess(
  srv: TestServer,
  f: WorkspaceFixture,
  access: string | null,
): Promise<{ token: string; grantId: string | null }> {
  const t = await call(srv, 'POST', `/api/v2/organizations/${f.org}/teams`, {
    body: { data: { type: 'teams', attributes: { name: `t-${randomUUID().slice(0, 8)}` } } },
  });
  assert.equal(t.status, 201, t.text);
  const teamId = t.json.data.id as string;
  let grantId: string | null = null;
  if (access) {
    const g = await call(srv, 'POST', '/api/v2/team-workspaces', {
      body: {
        data: {
          type: 'team-workspaces',
          attributes: { access },
          relationships: {
            team: { data: { type: 'teams', id: teamId } },
            workspace: { data: { type: 'workspaces', id: f.wsId } },
          },
        },
      },
    });
    assert.equal(g.status, 200, g.text);
    grantId = g.json.data.id as string;
  }
  const tok = await call(srv, 'POST', `/api/v2/teams/${teamId}/authentication-token`, {
    body: { data: { type: 'authentication-tokens', attributes: {} } },
  });
  assert.equal(tok.status, 201, tok.text);
  return { token: tok.json.data.attributes.token as string, grantId };
}

/** A JSON:API call to a server known only by its base URL (a spawned process). */
export async function apiAt(base: string, token: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${base}/api/v2${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': JSONAPI },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return {
    status: res.status,
    body: text ? (JSON.parse(text) as { data: { id: string; attributes: Record<string, unknown> } }) : undefined,
  };
}
