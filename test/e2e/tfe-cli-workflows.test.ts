import { it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describeWithServer } from '../support/test-server.js';
import { JSONAPI, TerraformCli, init, jsonStateOutputs, md5, organization, tfState } from './tfe-cli-client.js';
import type { StateOutputSpec } from './tfe-cli-client.js';

/**
 * The Terraform CLI's call sequences (reference section 3) reproduced request by request
 * over HTTP, for what the real binary (terraform-cli.test.ts) does not reach here: the
 * headers older CLI versions read, intermediate snapshots, download redirects, the inline
 * create of older versions, crashed uploads and OpenTofu.
 */

const OUTPUTS: Record<string, StateOutputSpec> = {
  vpc_id: { value: 'vpc-1', type: 'string' },
  db_password: { value: 'hunter2', type: 'string', sensitive: true },
  subnets: { value: ['a', 'b'], type: ['list', 'string'] },
  cfg: { value: { port: 5432, tls: true }, type: ['object', { port: 'number', tls: 'bool' }] },
};

function versionAtLeast(v: string, min: number[]): boolean {
  const parts = v.split('.').map(Number);
  for (let i = 0; i < min.length; i++) {
    const a = parts[i] ?? 0;
    const b = min[i] ?? 0;
    if (a !== b) return a > b;
  }
  return true;
}

describeWithServer('Terraform CLI call sequences', (srv) => {
  it('backend configuration: discovery, ping headers, entitlements', async () => {
    const { org, cli } = await organization(srv);
    const disco = await fetch(`${srv.url}/.well-known/terraform.json`, {
      headers: { accept: 'application/json', 'user-agent': 'HashiCorp Terraform/1.9.5 (+https://www.terraform.io)' },
    });
    assert.equal(disco.status, 200);
    assert.match(disco.headers.get('content-type') ?? '', /^application\/json/);
    const services = (await disco.json()) as Record<string, string>;
    for (const key of ['tfe.v2', 'tfe.v2.1', 'state.v2']) assert.equal(services[key], '/api/v2/', key);
    assert.equal(typeof services['motd.v1'], 'string');
    const motd = await fetch(new URL(services['motd.v1'] as string, srv.url));
    assert.equal(motd.status, 200);
    assert.equal(typeof ((await motd.json()) as { msg: unknown }).msg, 'string');

    const ping = await cli.get('ping');
    assert.ok(ping.status === 200 || ping.status === 204, `ping answered ${ping.status}`);
    const apiVersion = ping.headers.get('tfp-api-version') ?? '';
    assert.ok(
      /^\d+(\.\d+)*$/.test(apiVersion) && versionAtLeast(apiVersion, [2, 5]),
      `TFP-API-Version ${apiVersion} must be >= 2.5 without a pre-release`,
    );
    assert.match(ping.headers.get('x-tfe-version') ?? '', /^v\d{6}-\d+$/);
    const limit = ping.headers.get('x-ratelimit-limit');
    assert.ok(limit === null || Number(limit) > 3, 'a rate limit of 1-3 breaks go-tfe');
    // The header is on every /api/v2 response, errors included.
    assert.equal((await cli.get('organizations/nope-nope')).headers.get('tfp-api-version'), apiVersion);

    const ent = await cli.get(`organizations/${org}/entitlement-set`);
    assert.equal(ent.status, 200, ent.text);
    assert.equal(ent.json.data.type, 'entitlement-sets');
    assert.equal(typeof ent.json.data.attributes.operations, 'boolean');
    assert.equal(ent.json.data.attributes['state-storage'], true);
    assert.equal((await cli.get(`organizations/no-such-org-${randomUUID().slice(0, 6)}/entitlement-set`)).status, 404);
  });

  it('init creates the workspace; apply uploads through URLs with an intermediate snapshot; outputs set', async () => {
    const { org, cli } = await organization(srv);
    const name = `app-${randomUUID().slice(0, 8)}`;
    const wsId = await init(cli, org, name);
    // A second init finds it.
    assert.equal(await init(cli, org, name), wsId);

    // apply: workspace by name twice, lock, refresh, persist (an intermediate snapshot, then the final one), unlock.
    cli.log.length = 0;
    for (let i = 0; i < 2; i++) assert.equal((await cli.get(`organizations/${org}/workspaces/${name}`)).status, 200);
    const locked = await cli.lock(wsId);
    assert.equal(locked.status, 200, locked.text);
    assert.equal(locked.json.data.attributes.locked, true);
    assert.equal(locked.json.data.attributes['locked-reason'], 'Locked by Terraform');
    const again = await cli.lock(wsId);
    assert.equal(
      again.status,
      409,
      'a second lock is refused (the CLI reports "workspace already locked" and retries per -lock-timeout)',
    );
    assert.equal((await cli.get(`workspaces/${wsId}/current-state-version`)).status, 404);

    const lineage = randomUUID();
    const snap = await cli.persist(wsId, tfState(1, lineage, { vpc_id: OUTPUTS.vpc_id as StateOutputSpec }), {
      outputs: jsonStateOutputs({ vpc_id: OUTPUTS.vpc_id as StateOutputSpec }),
    });
    assert.equal(snap.status, 200, snap.text);
    assert.equal(snap.json.data.attributes.status, 'finalized');
    assert.equal(snap.json.data.attributes['hosted-state-upload-url'], null);

    const state = tfState(2, lineage, OUTPUTS);
    const jsonState = Buffer.from(
      JSON.stringify({
        format_version: '1.0',
        terraform_version: '1.9.5',
        values: { outputs: jsonStateOutputs(OUTPUTS), root_module: {} },
      }),
    );
    const final = await cli.persist(wsId, state, { jsonState, outputs: jsonStateOutputs(OUTPUTS) });
    assert.equal(final.status, 200, final.text);
    const sv = final.json.data;
    assert.equal(sv.attributes.status, 'finalized');
    assert.equal(sv.attributes.serial, 2);
    assert.match(sv.attributes['hosted-state-download-url'], /^https?:\/\//);
    // json-state-outputs fill the outputs at once, before extraction.
    const outs = await cli.get(`workspaces/${wsId}/current-state-version-outputs`);
    assert.equal(outs.status, 200, outs.text);
    assert.deepEqual(
      outs.json.data.map((o: { attributes: { name: string } }) => o.attributes.name),
      Object.keys(OUTPUTS),
    );

    const unlocked = await cli.unlock(wsId);
    assert.equal(unlocked.status, 200, unlocked.text);
    assert.equal(unlocked.json.data.attributes.locked, false);
    assert.deepEqual(
      cli.log.map(
        (r) =>
          `${r.method} ${r.path.replace(/sv-\w+/, 'sv-ID').replace(/\/v1\/object\/.*/, '/v1/object/SECRET')} ` +
          r.status,
      ),
      [
        `GET /api/v2/organizations/${org}/workspaces/${name} 200`,
        `GET /api/v2/organizations/${org}/workspaces/${name} 200`,
        `POST /api/v2/workspaces/${wsId}/actions/lock 200`,
        `POST /api/v2/workspaces/${wsId}/actions/lock 409`,
        `GET /api/v2/workspaces/${wsId}/current-state-version 404`,
        `POST /api/v2/workspaces/${wsId}/state-versions 201`,
        'PUT /v1/object/SECRET 200',
        'GET /api/v2/state-versions/sv-ID 200',
        `POST /api/v2/workspaces/${wsId}/state-versions 201`,
        'PUT /v1/object/SECRET 200',
        'PUT /v1/object/SECRET 200',
        'GET /api/v2/state-versions/sv-ID 200',
        `GET /api/v2/workspaces/${wsId}/current-state-version-outputs 200`,
        `POST /api/v2/workspaces/${wsId}/actions/unlock 200`,
      ],
    );

    // Extraction runs as a job, drained here.
    await srv.deps.worker.runUntilIdle();
    const cur = await cli.get(`workspaces/${wsId}/current-state-version`);
    assert.equal(cur.json.data.id, sv.id);
    const a = cur.json.data.attributes;
    assert.equal(a['resources-processed'], true);
    assert.deepEqual(a.resources, [
      {
        name: 'p',
        type: 'random_pet',
        count: 2,
        module: 'root',
        provider: 'provider["registry.terraform.io/hashicorp/random"]',
      },
    ]);
    assert.equal(a['billable-rum-count'], 2);
    assert.equal(a['terraform-version'], '1.9.5');
    assert.match(a['hosted-json-state-download-url'], /json-download$/);
    const versions = await cli.get(
      `state-versions?filter%5Bworkspace%5D%5Bname%5D=${name}&filter%5Borganization%5D%5Bname%5D=${org}`,
    );
    assert.equal(versions.json.meta.pagination['total-count'], 2, 'one intermediate snapshot and the final state');
  });

  it('state pull, terraform_remote_state and downloads with and without redirects', async () => {
    const { org, cli } = await organization(srv);
    const name = `pull-${randomUUID().slice(0, 8)}`;
    const wsId = await init(cli, org, name);
    assert.equal((await cli.lock(wsId)).status, 200);
    const state = tfState(5, randomUUID(), OUTPUTS);
    assert.equal((await cli.persist(wsId, state, { outputs: jsonStateOutputs(OUTPUTS) })).status, 200);
    assert.equal((await cli.unlock(wsId)).status, 200);

    // state pull / terraform_remote_state: workspace by name → current → download.
    const ws = await cli.get(`organizations/${org}/workspaces/${name}`);
    assert.equal(ws.json.data.id, wsId);
    const cur = await cli.get(`workspaces/${wsId}/current-state-version`);
    assert.equal(cur.status, 200);
    const url = cur.json.data.attributes['hosted-state-download-url'] as string;
    for (const redirect of ['follow', 'manual'] as const) {
      const dl = await cli.download(url, redirect);
      assert.equal(dl.status, 200, `download (${redirect}) answered ${dl.status}`);
      assert.equal(dl.text, state.toString('utf8'));
      assert.equal(md5(dl.text), md5(state));
    }
    // The URL resolves against the API root too (go-tfe resolves relative URLs).
    const relative = await cli.download(new URL(url).pathname);
    assert.equal(relative.status, 200);
    // Without the token: 401, never the state.
    const anon = await cli.request('GET', url, { auth: false, headers: { accept: 'application/json' } });
    assert.equal(anon.status, 401);
    assert.doesNotMatch(anon.text, /hunter2/);
  });

  it('inline create (fallback of servers without upload URLs) and the json-state "" cloud blocks send', async () => {
    const { org, cli } = await organization(srv);
    const wsId = await init(cli, org, `inline-${randomUUID().slice(0, 8)}`);
    assert.equal((await cli.lock(wsId)).status, 200);
    const state = tfState(1, randomUUID(), OUTPUTS);
    const r = await cli.send('POST', `workspaces/${wsId}/state-versions`, {
      data: {
        type: 'state-versions',
        attributes: {
          serial: 1,
          md5: md5(state),
          lineage: JSON.parse(state.toString()).lineage,
          force: false,
          state: state.toString('base64'),
          'json-state': '',
          'json-state-outputs': Buffer.from(JSON.stringify(jsonStateOutputs(OUTPUTS))).toString('base64'),
        },
      },
    });
    assert.equal(r.status, 201, r.text);
    assert.equal(r.json.data.attributes.status, 'finalized');
    assert.equal(r.json.data.attributes['hosted-state-upload-url'], null);
    assert.equal(r.json.data.relationships.outputs.data.length, 4);
    assert.equal((await cli.unlock(wsId)).status, 200);
  });

  it('force-unlock after a crashed upload: unlock refused while the latest version is pending', async () => {
    const { org, cli } = await organization(srv);
    const name = `crash-${randomUUID().slice(0, 8)}`;
    const wsId = await init(cli, org, name);
    assert.equal((await cli.lock(wsId)).status, 200);
    const state = tfState(1, randomUUID());
    const created = await cli.send('POST', `workspaces/${wsId}/state-versions`, {
      data: { type: 'state-versions', attributes: { serial: 1, md5: md5(state), lineage: 'x', force: false } },
    });
    assert.equal(created.status, 201, created.text);
    // The upload never happens. Terraform >= 1.10 retries an unlock answered with this text.
    const refused = await cli.unlock(wsId);
    assert.ok(refused.status === 400 || refused.status === 503, `unlock answered ${refused.status}`);
    assert.match(JSON.stringify(refused.json.errors), /latest state version is still pending/);
    // Terraform 1.9 (older go-tfe) gets 503 and retries it as a server error.
    const old = await cli.request('POST', `/api/v2/workspaces/${wsId}/actions/unlock`, {
      headers: { accept: JSONAPI, 'content-type': JSONAPI, 'terraform-version': '1.9.8' },
    });
    assert.ok(old.status === 400 || old.status === 503);
    // terraform force-unlock <org>/<name>: workspace by name, then force-unlock.
    assert.equal((await cli.get(`organizations/${org}/workspaces/${name}`)).status, 200);
    const forced = await cli.forceUnlock(wsId);
    assert.equal(forced.status, 200, forced.text);
    assert.equal(forced.json.data.attributes.locked, false);
    const twice = await cli.forceUnlock(wsId);
    assert.equal(twice.status, 409);
    assert.equal(twice.json.errors[0].status, '409');
    const unlockAgain = await cli.unlock(wsId);
    assert.equal(
      unlockAgain.status,
      409,
      'unlocking an unlocked workspace is a JSON:API 409 (go-tfe: already unlocked)',
    );
    assert.equal(unlockAgain.json.errors[0].status, '409');
  });

  it('OpenTofu: its lock reason, the same persist flow, and its outputs reading', async () => {
    const { org, cli: admin } = await organization(srv);
    const tofu = new TerraformCli(srv, admin.token, { version: '1.8.3' });
    const name = `tofu-${randomUUID().slice(0, 8)}`;
    const wsId = await init(tofu, org, name);
    const locked = await tofu.lock(wsId, 'Locked by OpenTofu');
    assert.equal(locked.status, 200);
    assert.equal(locked.json.data.attributes['locked-reason'], 'Locked by OpenTofu');
    const state = tfState(1, randomUUID(), OUTPUTS);
    const persisted = await tofu.persist(wsId, state, { outputs: jsonStateOutputs(OUTPUTS) });
    assert.equal(persisted.status, 200, persisted.text);
    assert.equal(persisted.json.data.attributes.status, 'finalized');
    // OpenTofu does not retry a refused unlock, so it must succeed at once after a finished upload.
    assert.equal((await tofu.unlock(wsId)).status, 200);
    const outs = await tofu.get(`workspaces/${wsId}/current-state-version-outputs`);
    assert.equal(outs.status, 200);
    assert.equal(outs.json.data.length, Object.keys(OUTPUTS).length);
    const dl = await tofu.download(
      (await tofu.get(`workspaces/${wsId}/current-state-version`)).json.data.attributes['hosted-state-download-url'],
    );
    assert.equal(dl.text, state.toString('utf8'));
  });

  it('OpenTofu with client-side state encryption: the envelope is stored and served as sent', async () => {
    const { org, cli: admin } = await organization(srv);
    const tofu = new TerraformCli(srv, admin.token, { version: '1.8.3' });
    const wsId = await init(tofu, org, `enc-${randomUUID().slice(0, 8)}`);
    assert.equal((await tofu.lock(wsId, 'Locked by OpenTofu')).status, 200);
    const envelope = (n: number) =>
      Buffer.from(
        JSON.stringify({
          meta: { 'key_provider.pbkdf2.k': 'eyJzYWx0Ijoi' },
          encrypted_data: Buffer.from(`ciphertext ${n}`).toString('base64'),
          encryption_version: 'v0',
        }),
      );
    const lineage = randomUUID();
    const e1 = envelope(1);
    const created = await tofu.send('POST', `workspaces/${wsId}/state-versions`, {
      data: {
        type: 'state-versions',
        attributes: {
          serial: 1,
          md5: md5(e1),
          lineage,
          force: false,
          'json-state-outputs': Buffer.from(JSON.stringify(jsonStateOutputs(OUTPUTS))).toString('base64'),
        },
      },
    });
    assert.equal(created.status, 201, created.text);
    assert.equal((await tofu.upload(created.json.data.attributes['hosted-state-upload-url'], e1)).status, 200);
    const sv = await tofu.get(`state-versions/${created.json.data.id}`);
    assert.equal(sv.json.data.attributes.status, 'finalized');
    assert.equal((await tofu.download(sv.json.data.attributes['hosted-state-download-url'])).text, e1.toString());
    await srv.deps.worker.runUntilIdle();
    const a = (await tofu.get(`state-versions/${created.json.data.id}`)).json.data.attributes;
    assert.equal(a['resources-processed'], true);
    assert.equal(a.resources, null);
    assert.equal(typeof a['resources-processing-error'], 'string');
    assert.equal(
      (await tofu.get(`workspaces/${wsId}/current-state-version-outputs`)).json.data.length,
      Object.keys(OUTPUTS).length,
    );
    // Inline too; a JSON object that is neither a state nor an envelope is still refused.
    const e2 = envelope(2);
    const inline = await tofu.send('POST', `workspaces/${wsId}/state-versions`, {
      data: {
        type: 'state-versions',
        attributes: { serial: 2, md5: md5(e2), lineage, state: e2.toString('base64') },
      },
    });
    assert.equal(inline.status, 201, inline.text);
    const junk = Buffer.from('{"encrypted_data":"x"}');
    const refused = await tofu.send('POST', `workspaces/${wsId}/state-versions`, {
      data: {
        type: 'state-versions',
        attributes: { serial: 3, md5: md5(junk), lineage, state: junk.toString('base64') },
      },
    });
    assert.equal(refused.status, 422);
    assert.equal((await tofu.unlock(wsId)).status, 200);
  });
});
