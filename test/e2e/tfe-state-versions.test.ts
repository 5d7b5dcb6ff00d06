import { it } from 'node:test';
import assert from 'node:assert/strict';
import { describeWithServer } from '../support/test-server.js';
import {
  assertError,
  b64,
  call,
  count,
  createBody,
  createInline,
  createPending,
  download,
  inlineAttrs,
  md5,
  put,
  stateFile,
  unlock,
  workspace,
} from './tfe-state-versions-fixture.js';

describeWithServer('state versions: create, read, upload', (srv) => {
  it('creates a finalized version from inline state; it becomes current and downloads byte for byte', async () => {
    const f = await workspace(srv);
    const { data, bytes } = await createInline(srv, f, 1);
    assert.match(data.id, /^sv-[1-9A-HJ-NP-Za-km-z]{16}$/);
    assert.equal(data.type, 'state-versions');
    const a = data.attributes;
    assert.equal(a.status, 'finalized');
    assert.equal(a.serial, 1);
    assert.equal(a.size, bytes.length);
    assert.equal(a['state-version'], 4);
    assert.equal(a['hosted-state-upload-url'], null);
    assert.equal(a['hosted-json-state-upload-url'], null);
    assert.equal(a['hosted-json-state-download-url'], null);
    assert.equal(a.intermediate, false);
    assert.match(a['created-at'], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.equal(a.md5, undefined);
    assert.equal(a.state, undefined);
    assert.deepEqual(data.relationships.workspace.data, { type: 'workspaces', id: f.wsId });
    assert.deepEqual(data.relationships['rollback-state-version'], { data: null });
    assert.deepEqual(data.relationships.run, { data: null });
    assert.equal(data.links.self, `/api/v2/state-versions/${data.id}`);

    const cur = await call(srv, 'GET', `/api/v2/workspaces/${f.wsId}/current-state-version`);
    assert.equal(cur.status, 200);
    assert.match(cur.headers.get('content-type') ?? '', /application\/vnd\.api\+json/);
    assert.equal(cur.json.data.id, data.id);
    const show = await call(srv, 'GET', `/api/v2/state-versions/${data.id}`);
    assert.deepEqual(show.json.data, data);

    const dl = await download(srv, a['hosted-state-download-url']);
    assert.equal(dl.status, 200);
    assert.ok(dl.body.equals(bytes));
    assert.equal((await download(srv, a['hosted-state-download-url'], null)).status, 401);
  });

  it('creates a pending version with one-time upload URLs; the upload finalizes it', async () => {
    const f = await workspace(srv);
    const bytes = stateFile(3, f.lineage);
    const sv = await createPending(srv, f, 3, bytes);
    assert.equal(sv.attributes.status, 'pending');
    assert.equal(sv.attributes['hosted-state-download-url'], null);
    const up = sv.attributes['hosted-state-upload-url'] as string;
    const upJson = sv.attributes['hosted-json-state-upload-url'] as string;
    assert.match(up, new RegExp(`^${srv.url}/v1/object/[A-Za-z0-9_-]{40,}$`));
    assert.match(upJson, new RegExp(`^${srv.url}/v1/object/[A-Za-z0-9_-]{40,}$`));
    assert.notEqual(up, upJson);
    // The pending version is shown with its URLs on later reads too; it is not current yet.
    assert.equal(
      (await call(srv, 'GET', `/api/v2/state-versions/${sv.id}`)).json.data.attributes['hosted-state-upload-url'],
      up,
    );
    assert.equal((await call(srv, 'GET', `/api/v2/workspaces/${f.wsId}/current-state-version`)).status, 404);
    // Normal unlock is refused while the latest version is pending.
    const un = await unlock(srv, f.wsId);
    assert.notEqual(un.status, 200);
    assert.match(un.text, /latest state version is still pending/);

    const jsonState = Buffer.from(JSON.stringify({ format_version: '1.0', values: {} }));
    assert.equal((await put(upJson, jsonState)).status, 200);
    const r = await put(up, bytes);
    assert.equal(r.status, 200, r.text);

    const show = await call(srv, 'GET', `/api/v2/state-versions/${sv.id}`);
    const a = show.json.data.attributes;
    assert.equal(a.status, 'finalized');
    assert.equal(a['hosted-state-upload-url'], null);
    assert.equal(a['hosted-json-state-upload-url'], null);
    assert.equal(a.size, bytes.length);
    assert.ok((await download(srv, a['hosted-state-download-url'])).body.equals(bytes));
    assert.ok((await download(srv, a['hosted-json-state-download-url'])).body.equals(jsonState));
    // Finalized by its upload, it is the current version.
    const cur = await call(srv, 'GET', `/api/v2/workspaces/${f.wsId}/current-state-version`);
    assert.equal(cur.json.data.id, sv.id);
    const ws = await call(srv, 'GET', `/api/v2/workspaces/${f.wsId}`);
    assert.deepEqual(ws.json.data.relationships['current-state-version'].data, { id: sv.id, type: 'state-versions' });
    // A retried identical upload succeeds; other content is a conflict.
    assert.equal((await put(up, bytes)).status, 200);
    assertError(await put(up, stateFile(3, f.lineage, 'x')), 409);
    assertError(await put(upJson, Buffer.from('{"other":1}')), 409);
    assert.equal((await unlock(srv, f.wsId)).status, 200);
  });

  it('an upload that never arrives leaves the last finalized version current for every reader', async () => {
    const f = await workspace(srv);
    const { data: v1, bytes: b1 } = await createInline(srv, f, 1);
    await srv.deps.worker.runUntilIdle();
    // An apply whose upload was interrupted: the version was created, its content never came.
    const v2 = await createPending(srv, f, 2, stateFile(2, f.lineage));
    const cur = await call(srv, 'GET', `/api/v2/workspaces/${f.wsId}/current-state-version`);
    assert.equal(cur.status, 200, cur.text);
    assert.equal(cur.json.data.id, v1.id);
    // `terraform state pull` and `terraform_remote_state`: current, then its download.
    const dl = await download(srv, cur.json.data.attributes['hosted-state-download-url']);
    assert.equal(dl.status, 200);
    assert.ok(dl.body.equals(b1));
    // `terraform output`: the current outputs.
    const outs = await call(srv, 'GET', `/api/v2/workspaces/${f.wsId}/current-state-version-outputs`);
    assert.equal(outs.status, 200, outs.text);
    assert.equal(outs.json.data.length, 2);
    const ws = await call(srv, 'GET', `/api/v2/workspaces/${f.wsId}`);
    assert.deepEqual(ws.json.data.relationships['current-state-version'].data, { id: v1.id, type: 'state-versions' });
    const listed = await call(srv, 'GET', `/api/v2/organizations/${f.org}/workspaces`);
    assert.equal(listed.json.data[0].relationships['current-state-version'].data.id, v1.id);
    // The lock rules stay: a normal unlock waits for the upload, force-unlock does not.
    assert.match((await unlock(srv, f.wsId)).text, /latest state version is still pending/);
    assert.equal((await unlock(srv, f.wsId, undefined, true)).status, 200);
    // Discarded by a newer version, the pending one never becomes current.
    await call(srv, 'POST', `/api/v2/workspaces/${f.wsId}/actions/lock`, { body: {} });
    const { data: v3 } = await createInline(srv, f, 3);
    assert.equal((await call(srv, 'GET', `/api/v2/state-versions/${v2.id}`)).json.data.attributes.status, 'discarded');
    assertError(await put(v2.attributes['hosted-state-upload-url'], stateFile(2, f.lineage)), 409);
    assert.equal((await call(srv, 'GET', `/api/v2/workspaces/${f.wsId}/current-state-version`)).json.data.id, v3.id);
  });

  it('discards a pending version when a newer version is created before its upload', async () => {
    const f = await workspace(srv);
    const bytes = stateFile(1, f.lineage);
    const sv = await createPending(srv, f, 1, bytes);
    const { data: newer } = await createInline(srv, f, 2);
    const old = await call(srv, 'GET', `/api/v2/state-versions/${sv.id}`);
    assert.equal(old.json.data.attributes.status, 'discarded');
    assert.equal(old.json.data.attributes['hosted-state-upload-url'], null);
    assertError(await put(sv.attributes['hosted-state-upload-url'], bytes), 409);
    const cur = await call(srv, 'GET', `/api/v2/workspaces/${f.wsId}/current-state-version`);
    assert.equal(cur.json.data.id, newer.id);
    assert.equal(await count(srv, f, 'discarded'), 1);
    assert.equal(await count(srv, f, 'finalized'), 1);
  });

  it('rejects bad create bodies with 422 naming the attribute, and stores nothing', async () => {
    const f = await workspace(srv);
    const bytes = stateFile(1, f.lineage);
    const path = `/api/v2/workspaces/${f.wsId}/state-versions`;
    const cases: Array<[unknown, string]> = [
      [createBody({ md5: md5(bytes), state: b64(bytes) }), '/data/attributes/serial'],
      [createBody({ serial: '1', md5: md5(bytes), state: b64(bytes) }), '/data/attributes/serial'],
      [createBody({ serial: 1.5, md5: md5(bytes), state: b64(bytes) }), '/data/attributes/serial'],
      [createBody({ serial: 1, state: b64(bytes) }), '/data/attributes/md5'],
      [createBody({ serial: 1, md5: 42, state: b64(bytes) }), '/data/attributes/md5'],
      [createBody({ serial: 1, md5: 'not-an-md5', state: b64(bytes) }), '/data/attributes/md5'],
      [createBody(inlineAttrs(bytes, 1, f.lineage, { state: '%%%not base64%%%' })), '/data/attributes/state'],
      [createBody(inlineAttrs(bytes, 1, f.lineage, { md5: md5('other') })), '/data/attributes/md5'],
      [createBody(inlineAttrs(bytes, 2, f.lineage)), '/data/attributes/serial'],
      [createBody(inlineAttrs(bytes, 1, 'another-lineage')), '/data/attributes/lineage'],
      [createBody(inlineAttrs(Buffer.from('{"version":4,'), 1, null)), '/data/attributes/state'],
      [
        createBody(inlineAttrs(Buffer.from('{"version":2,"serial":1,"lineage":"x"}'), 1, null)),
        '/data/attributes/state',
      ],
      [createBody(inlineAttrs(bytes, 1, f.lineage, { 'json-state': '!!' })), '/data/attributes/json-state'],
      [
        createBody(inlineAttrs(bytes, 1, f.lineage, { 'json-state-outputs': b64('[1]') })),
        '/data/attributes/json-state-outputs',
      ],
      [createBody(inlineAttrs(bytes, 1, f.lineage, { force: 'yes' })), '/data/attributes/force'],
      [createBody(inlineAttrs(bytes, 1, f.lineage, { lineage: 7 })), '/data/attributes/lineage'],
      [{ data: { type: 'workspaces', attributes: inlineAttrs(bytes, 1, f.lineage) } }, '/data/type'],
      [{ data: { attributes: inlineAttrs(bytes, 1, f.lineage) } }, '/data/type'],
      [{ data: { type: '', attributes: inlineAttrs(bytes, 1, f.lineage) } }, '/data/type'],
      [
        createBody(inlineAttrs(bytes, 1, f.lineage), {
          run: { data: { type: 'workspaces', id: 'run-AAAABBBBCCCCDDDD' } },
        }),
        '/data/relationships/run/data/type',
      ],
      [
        createBody(inlineAttrs(bytes, 1, f.lineage), { run: { data: { id: 'run-AAAABBBBCCCCDDDD' } } }),
        '/data/relationships/run/data/type',
      ],
      [
        createBody(inlineAttrs(bytes, 1, f.lineage), { run: { data: { type: 'runs', id: 'run-bogus' } } }),
        '/data/relationships/run/data/id',
      ],
      [
        createBody(inlineAttrs(bytes, 1, f.lineage), { run: { data: { type: 'runs', id: f.wsId } } }),
        '/data/relationships/run/data/id',
      ],
      [createBody(inlineAttrs(bytes, 1, f.lineage), { run: { data: { type: 'runs' } } }), '/data/relationships/run'],
      [{ data: [] }, '/data'],
      [{ nodata: true }, '/data'],
    ];
    for (const [body, pointer] of cases) {
      assertError(await call(srv, 'POST', path, { body }), 422, pointer);
    }
    // Unparseable JSON is a 400 (no document to point into), not a 422; see docs/state-versions.md.
    assertError(await call(srv, 'POST', path, { raw: '{"data":' }), 400, undefined, /malformed JSON/);
    assert.equal(await count(srv, f), 0);
    assertError(await call(srv, 'GET', `/api/v2/workspaces/${f.wsId}/current-state-version`), 404);
  });

  it('applies the serial, MD5 and lineage rules against the current version; force overrides', async () => {
    const f = await workspace(srv);
    await createInline(srv, f, 5);
    const path = `/api/v2/workspaces/${f.wsId}/state-versions`;
    assertError(
      await call(srv, 'POST', path, { body: createBody(inlineAttrs(stateFile(4, f.lineage), 4, f.lineage)) }),
      409,
      undefined,
      /serial/,
    );
    assertError(
      await call(srv, 'POST', path, {
        body: createBody(inlineAttrs(stateFile(5, f.lineage, 'changed'), 5, f.lineage)),
      }),
      409,
      undefined,
      /MD5/,
    );
    const other = 'a-different-lineage';
    assertError(
      await call(srv, 'POST', path, { body: createBody(inlineAttrs(stateFile(6, other), 6, other)) }),
      409,
      undefined,
      /lineage/,
    );
    assert.equal(await count(srv, f), 1);
    // An identical re-upload of the current serial is accepted.
    await createInline(srv, f, 5);
    // force accepts a lower serial and another lineage.
    const low = await call(srv, 'POST', path, {
      body: createBody(inlineAttrs(stateFile(2, other), 2, other, { force: true })),
    });
    assert.equal(low.status, 201, low.text);
    const cur = await call(srv, 'GET', `/api/v2/workspaces/${f.wsId}/current-state-version`);
    assert.equal(cur.json.data.attributes.serial, 2);
    assert.equal(await count(srv, f), 3);
  });

  it('requires the workspace to be locked by the caller', async () => {
    const f = await workspace(srv, { lock: false });
    const body = createBody(inlineAttrs(stateFile(1, f.lineage), 1, f.lineage));
    assertError(
      await call(srv, 'POST', `/api/v2/workspaces/${f.wsId}/state-versions`, { body }),
      409,
      undefined,
      /not locked/,
    );
    assert.equal(await count(srv, f), 0);
  });

  it('answers 404 for unknown workspaces, versions and missing current versions', async () => {
    const f = await workspace(srv);
    const body = createBody(inlineAttrs(stateFile(1, f.lineage), 1, f.lineage));
    assertError(await call(srv, 'POST', '/api/v2/workspaces/ws-doesnotexist0000/state-versions', { body }), 404);
    assertError(await call(srv, 'GET', '/api/v2/state-versions/sv-nonexisting'), 404);
    assertError(await call(srv, 'GET', '/api/v2/workspaces/ws-doesnotexist0000/current-state-version'), 404);
    assertError(await call(srv, 'GET', `/api/v2/workspaces/${f.wsId}/current-state-version`), 404);
    assertError(await call(srv, 'GET', '/api/v2/%21%20/%20nope'), 404);
    assertError(
      await call(srv, 'PATCH', '/api/v2/workspaces/ws-doesnotexist0000/state-versions', {
        body: {
          data: {
            type: 'state-versions',
            relationships: { 'rollback-state-version': { data: { type: 'state-versions', id: 'sv-x' } } },
          },
        },
      }),
      404,
    );
  });

  it('lists versions newest first with JSON:API pagination', async () => {
    const f = await workspace(srv);
    const ids: string[] = [];
    for (let s = 1; s <= 5; s++) ids.push((await createInline(srv, f, s)).data.id);
    const q = (extra: string) =>
      `/api/v2/state-versions?filter%5Bworkspace%5D%5Bname%5D=${f.wsName}` +
      `&filter%5Borganization%5D%5Bname%5D=${f.org}${extra}`;
    const r = await call(srv, 'GET', q('&page%5Bsize%5D=2&page%5Bnumber%5D=2'));
    assert.equal(r.status, 200);
    assert.deepEqual(
      r.json.data.map((d: { id: string }) => d.id),
      [ids[2], ids[1]],
    );
    assert.deepEqual(r.json.meta.pagination, {
      'current-page': 2,
      'page-size': 2,
      'prev-page': 1,
      'next-page': 3,
      'total-pages': 3,
      'total-count': 5,
    });
    const links = r.json.links;
    for (const k of ['self', 'first', 'prev', 'next', 'last'])
      assert.match(links[k], new RegExp(`^${srv.url}/api/v2/state-versions\\?`));
    assert.equal(new URL(links.next).searchParams.get('page[number]'), '3');
    assert.equal(new URL(links.first).searchParams.get('page[number]'), '1');
    assert.equal(new URL(links.last).searchParams.get('page[number]'), '3');
    assert.equal(new URL(links.self).searchParams.get('filter[workspace][name]'), f.wsName);
    const def = await call(srv, 'GET', q(''));
    assert.equal(def.json.meta.pagination['page-size'], 20);
    assert.equal(def.json.links.prev, null);
    assert.equal(def.json.links.next, null);
    assert.equal(def.json.data[0].id, ids[4]);
    assert.deepEqual(def.json.data[4], (await call(srv, 'GET', `/api/v2/state-versions/${ids[0]}`)).json.data);
    const big = await call(srv, 'GET', q('&page%5Bsize%5D=1000'));
    assert.equal(big.json.meta.pagination['page-size'], 100);
    const far = await call(srv, 'GET', q('&page%5Bnumber%5D=999&page%5Bsize%5D=100'));
    assert.deepEqual(far.json.data, []);
    assert.equal(far.json.meta.pagination['current-page'], 999);
    assert.equal(far.json.meta.pagination['total-count'], 5);
    const fin = await call(srv, 'GET', q('&filter%5Bstatus%5D=finalized'));
    assert.equal(fin.json.meta.pagination['total-count'], 5);
    const pend = await call(srv, 'GET', q('&filter%5Bstatus%5D=pending'));
    assert.equal(pend.json.meta.pagination['total-count'], 0);
    assertError(await call(srv, 'GET', q('&filter%5Bstatus%5D=bogus')), 422);
    assertError(await call(srv, 'GET', q('&page%5Bnumber%5D=0')), 422);
    assertError(
      await call(srv, 'GET', `/api/v2/state-versions?filter%5Bworkspace%5D%5Bname%5D=${f.wsName}`),
      422,
      '/query/filter[organization][name]',
    );
    assertError(
      await call(srv, 'GET', `/api/v2/state-versions?filter%5Borganization%5D%5Bname%5D=${f.org}`),
      422,
      '/query/filter[workspace][name]',
    );
    assertError(
      await call(
        srv,
        'GET',
        `/api/v2/state-versions?filter%5Bworkspace%5D%5Bname%5D=nope&filter%5Borganization%5D%5Bname%5D=${f.org}`,
      ),
      404,
    );
    assertError(
      await call(
        srv,
        'GET',
        `/api/v2/state-versions?filter%5Bworkspace%5D%5Bname%5D=${f.wsName}&filter%5Borganization%5D%5Bname%5D=nope`,
      ),
      404,
    );
  });

  it('extracts resources and outputs asynchronously and includes outputs and creator on request', async () => {
    const f = await workspace(srv);
    const { data } = await createInline(srv, f, 1);
    assert.equal(data.attributes['resources-processed'], false);
    await srv.deps.worker.runUntilIdle();
    const r = await call(srv, 'GET', `/api/v2/state-versions/${data.id}?include=outputs,created_by`);
    const a = r.json.data.attributes;
    assert.equal(a['resources-processed'], true);
    assert.equal(a['terraform-version'], '1.9.5');
    assert.equal(a['billable-rum-count'], 2);
    assert.deepEqual(a.modules, { root: { null_resource: 1, random_pet: 2 } });
    assert.equal(a.resources.length, 2);
    const outs = r.json.data.relationships.outputs.data;
    assert.equal(outs.length, 2);
    const included = r.json.included as Array<{ type: string; id: string; attributes: Record<string, unknown> }>;
    const greeting = included.find((i) => i.type === 'state-version-outputs' && i.attributes.name === 'greeting');
    assert.equal(greeting?.attributes.value, 'hello 1');
    assert.equal(included.find((i) => i.attributes.name === 'secret')?.attributes.sensitive, true);
    const creator = r.json.data.relationships['created-by'].data;
    assert.ok(included.some((i) => i.type === creator.type && i.id === creator.id));
    // No included array unless asked for; unknown include values are a 400.
    const plain = await call(srv, 'GET', `/api/v2/state-versions/${data.id}`);
    assert.equal(plain.json.included, undefined);
    const badInc = await call(srv, 'GET', `/api/v2/state-versions/${data.id}?include=bogus`);
    assertError(badInc, 400, undefined, /include parameter/);
    const cur = await call(srv, 'GET', `/api/v2/workspaces/${f.wsId}/current-state-version?include=outputs`);
    assert.equal(cur.json.included.length, 2);
  });

  it('populates outputs from json-state-outputs at creation', async () => {
    const f = await workspace(srv);
    const bytes = stateFile(1, f.lineage);
    const outputs = { vpc_id: { sensitive: false, value: 'vpc-1', type: 'string' } };
    const r = await call(srv, 'POST', `/api/v2/workspaces/${f.wsId}/state-versions`, {
      body: createBody(
        inlineAttrs(bytes, 1, f.lineage, {
          'json-state-outputs': b64(JSON.stringify(outputs)),
          'json-state': b64('{"values":{}}'),
        }),
      ),
    });
    assert.equal(r.status, 201, r.text);
    assert.equal(r.json.data.relationships.outputs.data.length, 1);
    const j = await download(srv, r.json.data.attributes['hosted-json-state-download-url']);
    assert.equal(j.body.toString(), '{"values":{}}');
    await srv.deps.worker.runUntilIdle();
    const again = await call(srv, 'GET', `/api/v2/state-versions/${r.json.data.id}?include=outputs`);
    assert.deepEqual(
      again.json.included.map((o: { attributes: { name: string } }) => o.attributes.name),
      ['vpc_id'],
    );
  });

  it('rolls back: a copy of an older version becomes current', async () => {
    const f = await workspace(srv);
    const { data: v1, bytes: b1 } = await createInline(srv, f, 1);
    await createInline(srv, f, 2);
    const path = `/api/v2/workspaces/${f.wsId}/state-versions`;
    const rb = (id: string, type = 'state-versions') => ({
      data: { type: 'state-versions', relationships: { 'rollback-state-version': { data: { type, id } } } },
    });
    const r = await call(srv, 'PATCH', path, { body: rb(v1.id) });
    assert.equal(r.status, 201, r.text);
    assert.notEqual(r.json.data.id, v1.id);
    assert.deepEqual(r.json.data.relationships['rollback-state-version'].data, { type: 'state-versions', id: v1.id });
    assert.equal(r.json.data.attributes.serial, 1);
    assert.equal(r.json.data.attributes.status, 'finalized');
    const cur = await call(srv, 'GET', `/api/v2/workspaces/${f.wsId}/current-state-version`);
    assert.equal(cur.json.data.id, r.json.data.id);
    assert.ok((await download(srv, r.json.data.attributes['hosted-state-download-url'])).body.equals(b1));
    assert.equal(await count(srv, f), 3);
    assertError(await call(srv, 'PATCH', path, { body: rb('sv-nonexisting') }), 404);
    assertError(
      await call(srv, 'PATCH', path, { body: { data: { type: 'state-versions' } } }),
      422,
      '/data/relationships/rollback-state-version',
    );
    const rbCases: Array<[unknown, string]> = [
      [rb(v1.id, 'workspaces'), '/data/relationships/rollback-state-version/data/type'],
      [rb(v1.id, ''), '/data/relationships/rollback-state-version/data/type'],
      [
        { data: { type: 'state-versions', relationships: { 'rollback-state-version': { data: { id: v1.id } } } } },
        '/data/relationships/rollback-state-version/data/type',
      ],
      [{ data: { relationships: rb(v1.id).data.relationships } }, '/data/type'],
      [{ data: { type: 'workspaces', relationships: rb(v1.id).data.relationships } }, '/data/type'],
    ];
    for (const [body, pointer] of rbCases) assertError(await call(srv, 'PATCH', path, { body }), 422, pointer);
    assertError(
      await call(srv, 'PATCH', path, { raw: '{"data":{"type":"state-versions",' }),
      400,
      undefined,
      /malformed JSON/,
    );
    assert.equal(await count(srv, f), 3);
    const pending = await createPending(srv, f, 9, stateFile(9, f.lineage));
    assertError(await call(srv, 'PATCH', path, { body: rb(pending.id) }), 409);
    const g = await workspace(srv);
    assertError(await call(srv, 'PATCH', `/api/v2/workspaces/${g.wsId}/state-versions`, { body: rb(v1.id) }), 404);
    const unlocked = await workspace(srv, { lock: false });
    assertError(
      await call(srv, 'PATCH', `/api/v2/workspaces/${unlocked.wsId}/state-versions`, { body: rb(v1.id) }),
      409,
    );
  });
});
