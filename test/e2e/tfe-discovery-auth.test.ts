import { before, it } from 'node:test';
import assert from 'node:assert/strict';
import { describeWithServer } from '../support/test-server.js';
import { TfeHttp, assertDoc, assertError } from '../support/tfe-http.js';

describeWithServer('tfe discovery, ping and authentication', (s) => {
  let api: TfeHttp;
  before(async () => {
    api = new TfeHttp(s.url, s.rootToken);
  });

  it('publishes the service discovery document', async () => {
    const res = await fetch(`${s.url}/.well-known/terraform.json`, { headers: { accept: 'application/json' } });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    const body = (await res.json()) as Record<string, string>;
    for (const key of ['tfe.v2', 'tfe.v2.1', 'state.v2']) assert.equal(body[key], '/api/v2/');
    assert.equal(typeof body['motd.v1'], 'string');
    const motd = await fetch(new URL(body['motd.v1'] as string, s.url));
    assert.equal(motd.status, 200);
    assert.deepEqual(await motd.json(), { msg: '' });
  });

  it('answers ping with the version headers, with or without a token', async () => {
    for (const client of [api, api.as(undefined), api.as('garbage')]) {
      const res = await client.get('/api/v2/ping');
      assert.equal(res.status, 204);
      const v = res.headers.get('tfp-api-version') ?? '';
      const [major, minor] = v.split('.').map(Number);
      assert.ok((major as number) > 2 || ((major as number) === 2 && (minor as number) >= 5), `TFP-API-Version ${v}`);
      assert.match(res.headers.get('x-tfe-version') ?? '', /^v\d{6}-\d+$/);
      assert.ok(res.headers.get('tfp-appname'));
    }
  });

  it('sends TFP-API-Version on every /api/v2 response, errors included', async () => {
    const res = await api.as(undefined).get('/api/v2/organizations');
    assert.equal(res.headers.get('tfp-api-version'), '2.5');
  });

  it('401 for a missing, malformed, unknown or revoked token', async () => {
    assertError(await api.as(undefined).get('/api/v2/account/details'), 401);
    assertError(await api.as('nope').get('/api/v2/account/details'), 401);
    assertError(await api.as('AAAAAAAAAAAAAA.atlasv1.' + 'A'.repeat(67)).get('/api/v2/organizations'), 401);
    const raw = await fetch(`${s.url}/api/v2/account/details`, { headers: { authorization: 'Basic abc' } });
    assert.equal(raw.status, 401);
    assert.deepEqual(await raw.json(), {
      errors: [{ status: '401', title: 'unauthorized', detail: 'unauthorized: no bearer token' }],
    });
  });

  it('unknown routes are 404 with or without a token', async () => {
    assertError(await api.get('/api/v2/%21%20/%20nope'), 404);
    assertError(await api.as(undefined).get('/api/v2/no/such/thing'), 404);
  });

  it('account details for the admin token: a site admin user', async () => {
    const res = await api.get('/api/v2/account/details');
    assertDoc(res, 200);
    const d = res.body.data;
    assert.equal(d.type, 'users');
    assert.match(d.id, /^user-/);
    assert.equal(d.attributes.username, 'site-admin');
    assert.equal(d.attributes['is-site-admin'], true);
    assert.equal(d.attributes.permissions['can-create-organizations'], true);
    assert.deepEqual(d.relationships['authenticated-resource'].data, { type: 'users', id: d.id });
  });
});
