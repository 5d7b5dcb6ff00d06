import { before, it } from 'node:test';
import assert from 'node:assert/strict';
import { describeWithServer } from '../support/test-server.js';
import { TfeHttp, assertDoc, assertError, orgBody } from '../support/tfe-http.js';

describeWithServer('tfe organizations over HTTP', (s) => {
  let api: TfeHttp;
  before(async () => {
    api = new TfeHttp(s.url, s.rootToken);
  });

  it('create, read, list, update, entitlements and delete', async () => {
    const created = await api.post('/api/v2/organizations', orgBody('acme', 'ops@acme.test'));
    assertDoc(created, 201);
    const o = created.body.data;
    assert.equal(o.id, 'acme');
    assert.equal(o.type, 'organizations');
    assert.equal(o.attributes.name, 'acme');
    assert.equal(o.attributes.email, 'ops@acme.test');
    assert.match(o.attributes['external-id'], /^org-[1-9A-HJ-NP-Za-km-z]{16}$/);
    assert.match(o.attributes['created-at'], /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    assert.equal(o.attributes.permissions['can-destroy'], true);
    assert.equal(o.attributes['trial-expires-at'], null);
    assert.deepEqual(o.relationships['entitlement-set'].data, {
      id: o.attributes['external-id'],
      type: 'entitlement-sets',
    });

    const read = await api.get('/api/v2/organizations/acme');
    assertDoc(read, 200);
    assert.deepEqual(read.body.data, o);

    const list = await api.get('/api/v2/organizations');
    assertDoc(list, 200);
    assert.deepEqual(list.body.data, [o]);
    assert.deepEqual(list.body.meta.pagination, {
      'current-page': 1,
      'page-size': 20,
      'prev-page': null,
      'next-page': null,
      'total-pages': 1,
      'total-count': 1,
    });
    assert.match(
      list.body.links.self,
      /^http:\/\/127\.0\.0\.1:\d+\/api\/v2\/organizations\?page%5Bnumber%5D=1&page%5Bsize%5D=20$/,
    );
    const far = await api.get('/api/v2/organizations?page%5Bnumber%5D=999&page%5Bsize%5D=100');
    assert.deepEqual(far.body.data, []);
    assert.equal(far.body.meta.pagination['current-page'], 999);
    assert.equal(far.body.meta.pagination['total-count'], 1);

    const ent = await api.get('/api/v2/organizations/acme/entitlement-set');
    assertDoc(ent, 200);
    assert.equal(ent.body.data.type, 'entitlement-sets');
    assert.equal(ent.body.data.id, o.attributes['external-id']);
    assert.equal(ent.body.data.attributes['state-storage'], true);
    assert.equal(ent.body.data.attributes.operations, false);

    const empty = await api.patch('/api/v2/organizations/acme', { data: { type: 'organizations', attributes: {} } });
    assertDoc(empty, 200);
    assert.deepEqual(empty.body.data, o);
    const renamed = await api.patch('/api/v2/organizations/acme', {
      data: {
        type: 'organizations',
        attributes: { name: 'acme2', email: 'x@y.z', 'session-timeout': 3600, 'session-remember': 3600 },
      },
    });
    assertDoc(renamed, 200);
    assert.equal(renamed.body.data.id, 'acme2');
    assert.equal(renamed.body.data.attributes['session-timeout'], 3600);
    assertError(await api.get('/api/v2/organizations/acme'), 404);

    const del = await api.delete('/api/v2/organizations/acme2');
    assert.equal(del.status, 204);
    assert.equal(del.text, '');
    assertError(await api.get('/api/v2/organizations/acme2'), 404);
    assertError(await api.get('/api/v2/organizations/acme2/entitlement-set'), 404);
  });

  it('422 with a pointer for bad or missing attributes, 4xx for malformed documents', async () => {
    assertError(
      await api.post('/api/v2/organizations', { data: { type: 'organizations', attributes: { email: 'a@b.c' } } }),
      422,
      { pointer: '/data/attributes/name' },
    );
    assertError(
      await api.post('/api/v2/organizations', { data: { type: 'organizations', attributes: { name: 'x' } } }),
      422,
      { pointer: '/data/attributes/email' },
    );
    assertError(
      await api.post('/api/v2/organizations', {
        data: { type: 'organizations', attributes: { name: 42, email: 'a@b.c' } },
      }),
      422,
      { pointer: '/data/attributes/name' },
    );
    assertError(await api.post('/api/v2/organizations', orgBody('has space')), 422, {
      pointer: '/data/attributes/name',
    });
    await api.post('/api/v2/organizations', orgBody('taken'));
    assertError(await api.post('/api/v2/organizations', orgBody('taken')), 422, { pointer: '/data/attributes/name' });
    assertError(
      await api.patch('/api/v2/organizations/taken', { data: { attributes: { 'session-timeout': 'long' } } }),
      422,
      { pointer: '/data/attributes/session-timeout' },
    );
    assertError(
      await api.post('/api/v2/organizations', {
        data: { type: 'workspaces', attributes: { name: 'n', email: 'a@b.c' } },
      }),
      422,
      { pointer: '/data/type' },
    );
    assertError(await api.post('/api/v2/organizations', { name: 'flat' }), 422, { pointer: '/data' });
    assertError(await api.post('/api/v2/organizations', { data: [] }), 422, { pointer: '/data' });
    assertError(await api.post('/api/v2/organizations', { data: { attributes: 'x' } }), 422, {
      pointer: '/data/attributes',
    });
    assertError(await api.post('/api/v2/organizations', '[1,2'), 400);
    assertError(await api.post('/api/v2/organizations', 'null'), 422);
    assertError(await api.post('/api/v2/organizations'), 422);
    assertError(await api.get('/api/v2/organizations?page%5Bsize%5D=abc'), 422, { pointer: '/query/page[size]' });
    assertError(await api.get('/api/v2/organizations?page%5Bnumber%5D=99999999999999999999'), 422, {
      pointer: '/query/page[number]',
    });
  });

  it('hides organizations from users who are not members', async () => {
    await api.post('/api/v2/organizations', orgBody('private'));
    const user = await s.deps.tfe.identity.createUser((await s.deps.tfe.identity.authenticate(s.rootToken))!, {
      username: 'outsider',
    });
    const admin = (await s.deps.tfe.identity.authenticate(s.rootToken))!;
    const tok = await s.deps.tfe.tokens.createUserToken(admin, user.id, {});
    const them = api.as(tok.secret);
    assertError(await them.get('/api/v2/organizations/private'), 404);
    assertError(await them.get('/api/v2/organizations/private/entitlement-set'), 404);
    assertError(await them.delete('/api/v2/organizations/private'), 404);
    assertError(await them.post('/api/v2/organizations', orgBody('theirs')), 404);
    const list = await them.get('/api/v2/organizations');
    assertDoc(list, 200);
    assert.deepEqual(list.body.data, []);
  });
});
