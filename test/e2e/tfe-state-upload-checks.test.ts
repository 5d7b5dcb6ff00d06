import { it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describeWithServer } from '../support/test-server.js';
import type { TestServer } from '../support/test-server.js';
import {
  assertError,
  b64,
  call,
  createBody,
  createInline,
  md5,
  put,
  stateFile,
  workspace,
} from './tfe-state-versions-fixture.js';
import type { WorkspaceFixture } from './tfe-state-versions-fixture.js';

/**
 * What the upload URLs accept: the whole raw state is checked while it streams in (not
 * only its header), the JSON state must be JSON, and OpenTofu's encrypted envelopes are
 * accepted or refused by `state_allow_encrypted`. Refused content leaves the version
 * pending, its URL usable, and nothing stored.
 */

const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

function envelope(n: number): Buffer {
  return Buffer.from(
    JSON.stringify({
      meta: { 'key_provider.pbkdf2.k': 'eyJzYWx0Ijoi' },
      encrypted_data: Buffer.from(`ciphertext ${n}`).toString('base64'),
      encryption_version: 'v0',
    }),
  );
}

async function show(srv: TestServer, id: string) {
  const r = await call(srv, 'GET', `/api/v2/state-versions/${id}`);
  assert.equal(r.status, 200, r.text);
  return r.json.data;
}

async function currentId(srv: TestServer, f: WorkspaceFixture): Promise<string> {
  const r = await call(srv, 'GET', `/api/v2/workspaces/${f.wsId}/current-state-version`);
  assert.equal(r.status, 200, r.text);
  return r.json.data.id as string;
}

/** A pending version claiming `serial` and the MD5 of `claimed` (what the client says it will upload). */
async function pendingFor(srv: TestServer, f: WorkspaceFixture, serial: number, claimed: Buffer) {
  const r = await call(srv, 'POST', `/api/v2/workspaces/${f.wsId}/state-versions`, {
    body: createBody({ serial, md5: md5(claimed), lineage: f.lineage }),
  });
  assert.equal(r.status, 201, r.text);
  return r.json.data;
}

/** The refused content is handed to the collector: once jobs ran, the blob store no longer has it. */
async function assertNotKept(srv: TestServer, bytes: Buffer): Promise<void> {
  await srv.deps.worker.runUntilIdle();
  await assert.rejects(async () => {
    for await (const _ of await srv.deps.core.blobs.get(sha256(bytes))) void _;
  }, /not found/);
}

describeWithServer('upload URLs check the whole content', { config: { stateAllowSerialMismatch: false } }, (srv) => {
  const broken: [string, (good: Buffer) => Buffer, RegExp][] = [
    [
      'truncated JSON after a good header',
      (good) => good.subarray(0, good.length - 20),
      /not a valid Terraform state: state is truncated/,
    ],
    [
      'trailing garbage after the document',
      (good) => Buffer.concat([good, Buffer.from('\n{"serial":99}')]),
      /not a valid Terraform state: state is not valid JSON: unexpected '\{', expected the end of the document/,
    ],
    [
      'a broken value deep inside the resources',
      (good) => Buffer.from(good.toString().replace('"resources": [', '"resources": [tru')),
      /not a valid Terraform state: state is not valid JSON: invalid literal/,
    ],
  ];
  for (const [name, breakIt, detail] of broken) {
    it(`refuses ${name} with 422; the version stays pending and the same URL then takes the good state`, async () => {
      const f = await workspace(srv);
      const first = await createInline(srv, f, 1);
      const good = stateFile(2, f.lineage);
      const bad = breakIt(good);
      assert.notEqual(bad.toString(), good.toString());
      // The client claims the MD5 of what it sends, so only the content check can refuse it.
      const pending = await pendingFor(srv, f, 2, bad);
      const url = pending.attributes['hosted-state-upload-url'] as string;
      const up = await put(url, bad);
      assertError(up, 422, '/data/attributes/state', detail);
      const after = await show(srv, pending.id);
      assert.equal(after.attributes.status, 'pending');
      assert.equal(after.attributes['hosted-state-upload-url'], url, 'the URL is still usable');
      assert.equal(after.attributes['hosted-state-download-url'], null);
      assert.equal(await currentId(srv, f), first.data.id, 'the last finalized version stays current');
      assert.equal((await show(srv, first.data.id)).attributes.status, 'finalized');
      await assertNotKept(srv, bad);

      // The pending version keeps its claims (a good state under the same serial conflicts
      // with them); the client's next version, with the next serial, goes through.
      const next = stateFile(3, f.lineage);
      const retry = await pendingFor(srv, f, 3, next);
      assert.equal((await show(srv, pending.id)).attributes.status, 'discarded');
      const ok = await put(retry.attributes['hosted-state-upload-url'], next);
      assert.equal(ok.status, 200, ok.text);
      const done = await show(srv, retry.id);
      assert.equal(done.attributes.status, 'finalized');
      assert.equal(await currentId(srv, f), retry.id);
    });
  }

  it('after a refused upload the same URL accepts the good content the version was created for', async () => {
    const f = await workspace(srv);
    const good = stateFile(1, f.lineage);
    const pending = await pendingFor(srv, f, 1, good);
    const url = pending.attributes['hosted-state-upload-url'] as string;
    // Same length, MD5 mismatch: refused before anything else.
    const wrong = Buffer.from(good.toString().replace('"serial": 1', '"serial": 2'));
    assertError(await put(url, wrong), 422, '/data/attributes/md5');
    assertError(await put(url, good.subarray(0, 30)), 422, '/data/attributes/md5');
    assert.equal((await show(srv, pending.id)).attributes.status, 'pending');
    const ok = await put(url, good);
    assert.equal(ok.status, 200, ok.text);
    assert.equal((await show(srv, pending.id)).attributes.status, 'finalized');
  });

  it('refuses a JSON state upload that is not valid JSON with 422; the URL then takes valid JSON', async () => {
    const f = await workspace(srv);
    const state = stateFile(1, f.lineage);
    const pending = await pendingFor(srv, f, 1, state);
    const jsonUrl = pending.attributes['hosted-json-state-upload-url'] as string;
    const okState = await put(pending.attributes['hosted-state-upload-url'], state);
    assert.equal(okState.status, 200, okState.text);
    for (const [bad, detail] of [
      ['{"format_version":"1.0","values":{"root_module":{', /JSON state is truncated/],
      ['{"format_version":"1.0"} trailing', /JSON state is not valid JSON/],
      ['', /JSON state is empty/],
      ['not json', /JSON state is not valid JSON/],
    ] as const) {
      const r = await put(jsonUrl, bad);
      assertError(r, 422, '/data/attributes/json-state', detail);
    }
    const shown = await show(srv, pending.id);
    assert.equal(shown.attributes.status, 'finalized', 'the raw state upload stands');
    assert.equal(shown.attributes['hosted-json-state-download-url'], null, 'no JSON state was kept');
    assert.equal(shown.attributes['hosted-json-state-upload-url'], jsonUrl);
    await assertNotKept(srv, Buffer.from('{"format_version":"1.0"} trailing'));
    const json = Buffer.from('{"format_version":"1.0","terraform_version":"1.9.5","values":{"root_module":{}}}');
    const ok = await put(jsonUrl, json);
    assert.equal(ok.status, 200, ok.text);
    const dl = (await show(srv, pending.id)).attributes['hosted-json-state-download-url'] as string;
    const got = await fetch(dl, { headers: { authorization: `Bearer ${srv.rootToken}` } });
    assert.equal(Buffer.from(await got.arrayBuffer()).toString(), json.toString());
  });

  it('checks a large upload (in a worker thread) the same way', async () => {
    const f = await workspace(srv);
    const provider = String.raw`"provider[\"registry.terraform.io/hashicorp/null\"]"`;
    const resource = (i: number) =>
      `{"mode":"managed","type":"null_resource","name":"r${i}","provider":${provider},` +
      `"instances":[{"attributes":{"id":"${'x'.repeat(100)}"}}]}`;
    const filler = `,"resources": [${Array.from({ length: 30_000 }, (_, i) => resource(i)).join(',')}]`;
    const good = stateFile(1, f.lineage, filler);
    assert.ok(good.length > 4 * 1024 * 1024, `${good.length} bytes`);
    const bad = good.subarray(0, good.length - 3);
    const pending = await pendingFor(srv, f, 1, bad);
    assertError(
      await put(pending.attributes['hosted-state-upload-url'], bad),
      422,
      '/data/attributes/state',
      /state is truncated/,
    );
    assert.equal((await show(srv, pending.id)).attributes.status, 'pending');
    const next = stateFile(2, f.lineage, filler);
    const retry = await pendingFor(srv, f, 2, next);
    const ok = await put(retry.attributes['hosted-state-upload-url'], next);
    assert.equal(ok.status, 200, ok.text);
    assert.equal((await show(srv, retry.id)).attributes.status, 'finalized');
  });
});

for (const allowEncrypted of [true, false]) {
  describeWithServer(
    `OpenTofu encrypted states with state_allow_encrypted=${allowEncrypted}`,
    { config: { stateAllowSerialMismatch: false, stateAllowEncrypted: allowEncrypted } },
    (srv) => {
      it(
        allowEncrypted
          ? 'accepts an envelope inline and by upload; only its MD5 is checked'
          : 'refuses an envelope inline and by upload with 422 naming it',
        async () => {
          const f = await workspace(srv);
          // The serial claimed cannot be compared with the content: an envelope is opaque.
          const e1 = envelope(1);
          const inline = await call(srv, 'POST', `/api/v2/workspaces/${f.wsId}/state-versions`, {
            body: createBody({ serial: 7, md5: md5(e1), lineage: f.lineage, state: b64(e1) }),
          });
          const e2 = envelope(2);
          const pending = await pendingFor(srv, f, 8, e2);
          const url = pending.attributes['hosted-state-upload-url'] as string;
          const up = await put(url, e2);
          if (allowEncrypted) {
            assert.equal(inline.status, 201, inline.text);
            assert.equal(inline.json.data.attributes.status, 'finalized');
            assert.equal(up.status, 200, up.text);
            assert.equal((await show(srv, pending.id)).attributes.status, 'finalized');
            // The MD5 is still checked.
            const p3 = await pendingFor(srv, f, 9, envelope(3));
            assertError(await put(p3.attributes['hosted-state-upload-url'], envelope(4)), 422, '/data/attributes/md5');
          } else {
            assertError(inline, 422, '/data/attributes/state', /encrypted state .*state_allow_encrypted is false/);
            assertError(up, 422, '/data/attributes/state', /encrypted state .*state_allow_encrypted is false/);
            assert.equal((await show(srv, pending.id)).attributes.status, 'pending');
            await assertNotKept(srv, e2);
            // Ordinary states are unaffected.
            const good = stateFile(9, f.lineage);
            const retry = await pendingFor(srv, f, 9, good);
            assert.equal((await put(retry.attributes['hosted-state-upload-url'], good)).status, 200);
          }
          // Something envelope-like that is not one (no encryption_version) is refused either way.
          const junk = Buffer.from('{"encrypted_data":"x"}');
          const refused = await call(srv, 'POST', `/api/v2/workspaces/${f.wsId}/state-versions`, {
            body: createBody({ serial: 20, md5: md5(junk), lineage: f.lineage, state: b64(junk) }),
          });
          assertError(refused, 422, '/data/attributes/state', /not a valid Terraform state/);
        },
      );
    },
  );
}
