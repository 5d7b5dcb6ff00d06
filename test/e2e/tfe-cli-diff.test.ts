import { it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { describeWithServer } from '../support/test-server.js';
import type { TestServer } from '../support/test-server.js';
import { assertError, call, createBody, inlineAttrs, md5, put, workspace } from './tfe-state-versions-fixture.js';
import type { WorkspaceFixture } from './tfe-state-versions-fixture.js';
import { TerraformCli, defaultResources, tfState } from './tfe-cli-client.js';

/**
 * The state diff endpoint over HTTP, extraction latency with the worker running, and a
 * gigabyte of whitespace streamed through an upload URL.
 */

const P_AWS = 'provider["registry.terraform.io/hashicorp/aws"]';

function v4(serial: number, lineage: string, resources: unknown[], outputs: Record<string, unknown>): Buffer {
  return Buffer.from(JSON.stringify({ version: 4, terraform_version: '1.9.5', serial, lineage, outputs, resources }));
}

function bucket(name: string, attrs: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return {
    mode: 'managed',
    type: 'aws_s3_bucket',
    name,
    provider: P_AWS,
    instances: [{ schema_version: 0, attributes: attrs, sensitive_attributes: [] }],
    ...extra,
  };
}

async function create(srv: TestServer, f: WorkspaceFixture, bytes: Buffer, serial: number): Promise<string> {
  const r = await call(srv, 'POST', `/api/v2/workspaces/${f.wsId}/state-versions`, {
    body: createBody(inlineAttrs(bytes, serial, f.lineage)),
  });
  assert.equal(r.status, 201, r.text);
  return r.json.data.id as string;
}

// A poll interval far beyond the test's run: only the nudge after a finalize can start extraction.
describeWithServer('state diff and large states', { config: { jobPollIntervalMs: 60_000 } }, (srv, kind) => {
  it('diffs two versions of a workspace by address, with changed attribute names and no values', async () => {
    const f = await workspace(srv);
    const v1 = await create(
      srv,
      f,
      v4(
        1,
        f.lineage,
        [
          bucket('logs', { id: 'logs', acl: 'private', tags: { env: 'a' } }),
          bucket('old', { id: 'old' }),
          bucket('db', { id: 'db', password: 'first-secret' }, { module: 'module.data' }),
        ],
        {
          url: { value: 'https://a', type: 'string' },
          token: { value: 'tok-1', type: 'string', sensitive: true },
          gone: { value: 1, type: 'number' },
        },
      ),
      1,
    );
    const v2 = await create(
      srv,
      f,
      v4(
        2,
        f.lineage,
        [
          bucket('logs', { id: 'logs', acl: 'public-read', tags: { env: 'b' } }),
          bucket('db', { id: 'db', password: 'second-secret' }, { module: 'module.data' }),
          bucket('new', { id: 'new' }),
        ],
        {
          url: { value: 'https://a', type: 'string' },
          token: { value: 'tok-2', type: 'string', sensitive: true },
          fresh: { value: true, type: 'bool' },
        },
      ),
      2,
    );

    const r = await call(srv, 'GET', `/api/v2/state-versions/${v2}/diff?against=${v1}`);
    assert.equal(r.status, 200, r.text);
    assert.match(r.headers.get('content-type') ?? '', /application\/vnd\.api\+json/);
    const d = r.json.data;
    assert.equal(d.type, 'state-version-diffs');
    assert.deepEqual(d.relationships['state-version'].data, { type: 'state-versions', id: v2 });
    assert.deepEqual(d.relationships.against.data, { type: 'state-versions', id: v1 });
    const a = d.attributes;
    assert.deepEqual(a['resources-added'], [
      { address: 'aws_s3_bucket.new', module: 'root', mode: 'managed', type: 'aws_s3_bucket', name: 'new' },
    ]);
    assert.deepEqual(
      a['resources-removed'].map((x: { address: string }) => x.address),
      ['aws_s3_bucket.old'],
    );
    assert.deepEqual(
      a['resources-changed'].map((x: { address: string; 'changed-attributes': string[] }) => [
        x.address,
        x['changed-attributes'],
      ]),
      [
        ['aws_s3_bucket.logs', ['acl', 'tags']],
        ['module.data.aws_s3_bucket.db', ['password']],
      ],
    );
    assert.deepEqual(a['outputs-added'], [{ name: 'fresh', sensitive: false }]);
    assert.deepEqual(a['outputs-removed'], [{ name: 'gone', sensitive: false }]);
    assert.deepEqual(a['outputs-changed'], [{ name: 'token', sensitive: true }]);
    assert.deepEqual(a.summary, {
      added: 1,
      removed: 1,
      changed: 2,
      'outputs-added': 1,
      'outputs-removed': 1,
      'outputs-changed': 1,
    });
    assert.doesNotMatch(r.text, /secret|tok-|public-read|https:\/\/a/);

    // The other direction swaps added and removed.
    const back = (await call(srv, 'GET', `/api/v2/state-versions/${v1}/diff?against=${v2}`)).json.data.attributes;
    assert.deepEqual(
      back['resources-added'].map((x: { address: string }) => x.address),
      ['aws_s3_bucket.old'],
    );
    // A version against itself: nothing.
    const same = (await call(srv, 'GET', `/api/v2/state-versions/${v1}/diff?against=${v1}`)).json.data.attributes
      .summary;
    assert.deepEqual(same, {
      added: 0,
      removed: 0,
      changed: 0,
      'outputs-added': 0,
      'outputs-removed': 0,
      'outputs-changed': 0,
    });
  });

  it("answers the diff endpoint's errors as JSON:API documents", async () => {
    const f = await workspace(srv);
    const v1 = await create(srv, f, tfState(1, f.lineage), 1);
    assertError(await call(srv, 'GET', `/api/v2/state-versions/${v1}/diff`), 422, '/query/against');
    assertError(await call(srv, 'GET', `/api/v2/state-versions/${v1}/diff?against=sv-doesnotexist12345`), 404);
    assertError(await call(srv, 'GET', `/api/v2/state-versions/sv-doesnotexist12345/diff?against=${v1}`), 404);
    assertError(await call(srv, 'GET', `/api/v2/state-versions/${v1}/diff?against=${v1}`, { token: null }), 401);
    const g = await workspace(srv);
    const other = await create(srv, g, tfState(1, g.lineage), 1);
    assertError(
      await call(srv, 'GET', `/api/v2/state-versions/${v1}/diff?against=${other}`),
      422,
      '/query/against',
      /another workspace/,
    );
    // A pending version has nothing to compare yet.
    const bytes = tfState(2, f.lineage);
    const pending = await call(srv, 'POST', `/api/v2/workspaces/${f.wsId}/state-versions`, {
      body: createBody({ serial: 2, md5: md5(bytes), lineage: f.lineage }),
    });
    assertError(
      await call(srv, 'GET', `/api/v2/state-versions/${pending.json.data.id}/diff?against=${v1}`),
      409,
      undefined,
      /pending/,
    );
    // Content that cannot be read (a broken body after a good header) is refused at upload,
    // so the version stays pending and has nothing to compare.
    const broken = Buffer.from(
      `{"version":4,"terraform_version":"1.9.5","serial":3,"lineage":"${f.lineage}","resources":[{`,
    );
    const p3 = await call(srv, 'POST', `/api/v2/workspaces/${f.wsId}/state-versions`, {
      body: createBody({ serial: 3, md5: md5(broken), lineage: f.lineage }),
    });
    assertError(
      await put(p3.json.data.attributes['hosted-state-upload-url'], broken),
      422,
      '/data/attributes/state',
      /state is truncated/,
    );
    assertError(
      await call(srv, 'GET', `/api/v2/state-versions/${p3.json.data.id}/diff?against=${v1}`),
      409,
      undefined,
      /pending/,
    );
  });

  it('starts extraction right after finalize with the worker running (nudged, not polled)', async (t) => {
    srv.deps.worker.start();
    const cli = new TerraformCli(srv, srv.rootToken);
    const f = await workspace(srv);
    const times: number[] = [];
    for (let serial = 1; serial <= 5; serial++) {
      const state = tfState(
        serial,
        f.lineage,
        { o: { value: serial, type: 'number' } },
        defaultResources(String(serial)),
      );
      const created = await cli.send('POST', `workspaces/${f.wsId}/state-versions`, {
        data: { type: 'state-versions', attributes: { serial, md5: md5(state), lineage: f.lineage } },
      });
      assert.equal(created.status, 201, created.text);
      const up = await cli.upload(created.json.data.attributes['hosted-state-upload-url'], state);
      assert.equal(up.status, 200);
      const t0 = performance.now();
      for (;;) {
        const r = await cli.get(`state-versions/${created.json.data.id}`);
        if (r.json.data.attributes['resources-processed'] === true) break;
        // The worker polls once a minute here: only a nudge at finalize gets the job done well before that.
        assert.ok(performance.now() - t0 < 30_000, 'extraction did not finish within 30 s: the worker was not woken');
        await new Promise((res) => setTimeout(res, 5));
      }
      times.push(performance.now() - t0);
    }
    t.diagnostic(`finalize → resources-processed (ms): ${times.map(Math.round).join(', ')}`);
  });

  if (kind === 'sqlite') {
    it(
      'a gigabyte of whitespace streamed through an upload URL gets a clear error without being held in memory',
      { timeout: 240_000 },
      async () => {
        const f = await workspace(srv);
        const chunk = Buffer.alloc(1024 * 1024, 0x20);
        const total = 1024;
        const hash = createHash('md5');
        for (let i = 0; i < total; i++) hash.update(chunk);
        const digest = hash.digest('hex');
        const pending = await call(srv, 'POST', `/api/v2/workspaces/${f.wsId}/state-versions`, {
          body: createBody({ serial: 1, md5: digest, lineage: f.lineage }),
        });
        assert.equal(pending.status, 201, pending.text);
        const rssBefore = process.memoryUsage().rss;
        let peak = rssBefore;
        const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 50);
        let sent = 0;
        const body = new ReadableStream<Uint8Array>({
          pull(controller) {
            if (sent >= total) return controller.close();
            sent++;
            controller.enqueue(chunk);
          },
        });
        const r = await fetch(pending.json.data.attributes['hosted-state-upload-url'], {
          method: 'PUT',
          headers: { 'content-type': 'application/octet-stream' },
          body,
          duplex: 'half',
        } as RequestInit);
        clearInterval(sampler);
        const text = await r.text();
        assert.equal(r.status, 422, text);
        assert.match(JSON.parse(text).errors[0].detail, /not a valid Terraform state: .*whitespace/);
        assert.ok(
          peak - rssBefore < 300 * 1024 * 1024,
          `memory grew by ${Math.round((peak - rssBefore) / 2 ** 20)} MB while streaming 1 GB`,
        );
        // The server is still up and the version still pending.
        const sv = await call(srv, 'GET', `/api/v2/state-versions/${pending.json.data.id}`);
        assert.equal(sv.status, 200);
        assert.equal(sv.json.data.attributes.status, 'pending');
        assert.equal(randomUUID().length, 36);
      },
    );
  }
});
