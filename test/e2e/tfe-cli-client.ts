import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import type { TestServer } from '../support/test-server.js';

/**
 * Requests shaped as the Terraform CLI sends them through go-tfe (reference 1.1, 3):
 * JSON:API media types, `User-Agent: go-tfe`, `Terraform-Version`, and the cloud
 * block's `X-Terraform-Integration`. Upload PUTs carry no Authorization header.
 */

export const JSONAPI = 'application/vnd.api+json';

export interface CliResponse {
  status: number;
  headers: Headers;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
}

export interface Recorded {
  method: string;
  path: string;
  status: number;
}

export class TerraformCli {
  /** Every request made, for asserting call sequences. */
  readonly log: Recorded[] = [];

  constructor(
    readonly srv: TestServer,
    readonly token: string,
    readonly opts: { version?: string; integration?: 'cloud' | 'remote' } = {},
  ) {}

  private base(): Record<string, string> {
    const h: Record<string, string> = { 'user-agent': 'go-tfe', 'terraform-version': this.opts.version ?? '1.10.5' };
    if ((this.opts.integration ?? 'cloud') === 'cloud') h['x-terraform-integration'] = 'cloud';
    return h;
  }

  async request(
    method: string,
    url: string,
    init: {
      body?: unknown;
      headers?: Record<string, string>;
      auth?: boolean;
      raw?: Buffer | string;
      redirect?: 'follow' | 'manual';
    } = {},
  ): Promise<CliResponse> {
    const headers: Record<string, string> = { ...this.base(), ...init.headers };
    if (init.auth ?? true) headers.authorization = `Bearer ${this.token}`;
    let body: string | Buffer | undefined;
    if (init.raw !== undefined) body = init.raw;
    else if (init.body !== undefined) body = JSON.stringify(init.body);
    const full = url.startsWith('http') ? url : `${this.srv.url}${url}`;
    const r = await fetch(full, { method, headers, body, redirect: init.redirect ?? 'follow' });
    const text = await r.text();
    let json: unknown;
    try {
      json = text === '' ? undefined : JSON.parse(text);
    } catch {
      json = undefined;
    }
    this.log.push({ method, path: new URL(full).pathname, status: r.status });
    return { status: r.status, headers: r.headers, text, json };
  }

  /** A go-tfe API GET. */
  get(path: string): Promise<CliResponse> {
    return this.request('GET', `/api/v2/${path}`, { headers: { accept: JSONAPI } });
  }

  /** A go-tfe API POST/PATCH; go-tfe sends the JSON:API content type even without a body. */
  send(method: 'POST' | 'PATCH' | 'DELETE', path: string, body?: unknown): Promise<CliResponse> {
    return this.request(method, `/api/v2/${path}`, { body, headers: { accept: JSONAPI, 'content-type': JSONAPI } });
  }

  /** `GET <hosted-state-download-url>` as go-tfe does it: bearer token, Accept: application/json. */
  download(url: string, redirect: 'follow' | 'manual' = 'follow'): Promise<CliResponse> {
    return this.request('GET', url, { headers: { accept: 'application/json' }, redirect });
  }

  /** `PUT <upload url>`: raw bytes, no Authorization. */
  upload(url: string, bytes: Buffer): Promise<CliResponse> {
    assert.match(url, /^https?:\/\//, 'upload URLs must be absolute');
    return this.request('PUT', url, {
      raw: bytes,
      auth: false,
      headers: { 'content-type': 'application/octet-stream', accept: 'application/json, */*' },
    });
  }

  lock(wsId: string, reason = 'Locked by Terraform'): Promise<CliResponse> {
    // go-tfe v1.x sends the reason inside a JSON:API document with an empty type.
    return this.send('POST', `workspaces/${wsId}/actions/lock`, { data: { type: '', attributes: { reason } } });
  }

  unlock(wsId: string): Promise<CliResponse> {
    return this.send('POST', `workspaces/${wsId}/actions/unlock`);
  }

  forceUnlock(wsId: string): Promise<CliResponse> {
    return this.send('POST', `workspaces/${wsId}/actions/force-unlock`);
  }

  /** The state manager's persist (reference 3.4): pending create, concurrent PUTs, re-read. */
  async persist(
    wsId: string,
    state: Buffer,
    opts: { jsonState?: Buffer; outputs?: Record<string, unknown> | null; force?: boolean } = {},
  ): Promise<CliResponse> {
    const doc = JSON.parse(state.toString('utf8')) as { serial: number; lineage: string };
    const attributes: Record<string, unknown> = {
      serial: doc.serial,
      md5: md5(state),
      lineage: doc.lineage,
      force: opts.force ?? false,
    };
    if (opts.outputs !== undefined)
      attributes['json-state-outputs'] = Buffer.from(JSON.stringify(opts.outputs)).toString('base64');
    const created = await this.send('POST', `workspaces/${wsId}/state-versions`, {
      data: { type: 'state-versions', attributes },
    });
    if (created.status !== 201) return created;
    const a = created.json.data.attributes;
    assert.equal(a.status, 'pending');
    const puts = [this.upload(a['hosted-state-upload-url'], state)];
    if (opts.jsonState) puts.push(this.upload(a['hosted-json-state-upload-url'], opts.jsonState));
    for (const r of await Promise.all(puts))
      assert.ok(r.status >= 200 && r.status < 400, `upload answered ${r.status}: ${r.text}`);
    return this.get(`state-versions/${created.json.data.id}`);
  }
}

export function md5(b: Buffer | string): string {
  return createHash('md5').update(b).digest('hex');
}

export interface StateOutputSpec {
  value: unknown;
  type: unknown;
  sensitive?: boolean;
}

/** A v4 state as Terraform writes it, with the given outputs and a few resources. */
export function tfState(
  serial: number,
  lineage: string,
  outputs: Record<string, StateOutputSpec> = {},
  resources: unknown[] = defaultResources(),
): Buffer {
  return Buffer.from(
    `${JSON.stringify(
      { version: 4, terraform_version: '1.9.5', serial, lineage, outputs, resources, check_results: null },
      null,
      2,
    )}\n`,
  );
}

/** The `json-state-outputs` object Terraform sends for those outputs. */
export function jsonStateOutputs(outputs: Record<string, StateOutputSpec>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(outputs).map(([k, o]) => [k, { sensitive: o.sensitive ?? false, value: o.value, type: o.type }]),
  );
}

export function defaultResources(extraAttr = 'a'): unknown[] {
  return [
    {
      mode: 'managed',
      type: 'random_pet',
      name: 'p',
      provider: 'provider["registry.terraform.io/hashicorp/random"]',
      instances: [
        {
          index_key: 0,
          schema_version: 0,
          attributes: { id: `pet-0-${extraAttr}`, length: 2 },
          sensitive_attributes: [],
        },
        { index_key: 1, schema_version: 0, attributes: { id: 'pet-1', length: 2 }, sensitive_attributes: [] },
      ],
    },
  ];
}

/** A fresh organization (as the site admin) with a user token for the CLI. */
export async function organization(srv: TestServer): Promise<{ org: string; cli: TerraformCli }> {
  const org = `org-${randomUUID().slice(0, 8)}`;
  const admin = new TerraformCli(srv, srv.rootToken);
  const r = await admin.send('POST', 'organizations', {
    data: { type: 'organizations', attributes: { name: org, email: `${org}@example.com` } },
  });
  assert.equal(r.status, 201, r.text);
  return { org, cli: admin };
}

/** `terraform init` with the cloud block: look the workspace up, create it when missing. */
export async function init(cli: TerraformCli, org: string, name: string): Promise<string> {
  const found = await cli.get(`organizations/${org}/workspaces/${name}`);
  if (found.status === 200) return found.json.data.id as string;
  assert.equal(found.status, 404, found.text);
  const created = await cli.send('POST', `organizations/${org}/workspaces`, {
    data: { type: 'workspaces', attributes: { name } },
  });
  assert.equal(created.status, 201, created.text);
  const id = created.json.data.id as string;
  const patched = await cli.send('PATCH', `workspaces/${id}`, {
    data: { type: 'workspaces', attributes: { 'terraform-version': '1.9.5' } },
  });
  assert.equal(patched.status, 200, patched.text);
  const cur = await cli.get(`workspaces/${id}/current-state-version`);
  assert.equal(cur.status, 404, 'a new workspace has no state');
  return id;
}
