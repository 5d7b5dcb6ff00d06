import { it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describeWithServer } from '../support/test-server.js';
import type { TestServer } from '../support/test-server.js';
import { stateRepos } from '../../src/tfe/state-versions/state-repos.js';
import { enqueueMissingExtractions } from '../../src/tfe/state-versions/extraction-backfill.js';
import {
  assertError,
  b64,
  call,
  createBody,
  inlineAttrs,
  md5,
  put,
  stateFile,
  workspace,
} from './tfe-state-versions-fixture.js';
import type { WorkspaceFixture } from './tfe-state-versions-fixture.js';

/**
 * Extraction and the outputs API over HTTP: real-shaped states (modules, counts,
 * for_each keys, data sources, sensitive outputs, v3 nested module outputs), the
 * not-ready 503, pagination, permissions, every endpoint's errors, and unreadable content.
 */

const FIXTURES = new URL('../../../src/tfe/state-versions/fixtures/', import.meta.url);
const fixture = (name: string): Buffer => readFileSync(new URL(name, FIXTURES));

interface ExpectedOutput {
  name: string;
  sensitive: boolean;
  type: string;
  value: unknown;
  detailedType: unknown;
}

async function createFromBytes(
  srv: TestServer,
  f: WorkspaceFixture,
  bytes: Buffer,
  extra: Record<string, unknown> = {},
) {
  const doc = JSON.parse(bytes.toString('utf8')) as { serial: number; lineage: string };
  const r = await call(srv, 'POST', `/api/v2/workspaces/${f.wsId}/state-versions`, {
    body: createBody(inlineAttrs(bytes, doc.serial, doc.lineage, extra)),
  });
  assert.equal(r.status, 201, r.text);
  return r.json.data;
}

async function teamToken(srv: TestServer, f: WorkspaceFixture, grant: Record<string, unknown>): Promise<string> {
  const t = await call(srv, 'POST', `/api/v2/organizations/${f.org}/teams`, {
    body: { data: { type: 'teams', attributes: { name: `t-${randomUUID().slice(0, 8)}` } } },
  });
  assert.equal(t.status, 201, t.text);
  const g = await call(srv, 'POST', '/api/v2/team-workspaces', {
    body: {
      data: {
        type: 'team-workspaces',
        attributes: grant,
        relationships: {
          team: { data: { type: 'teams', id: t.json.data.id } },
          workspace: { data: { type: 'workspaces', id: f.wsId } },
        },
      },
    },
  });
  assert.equal(g.status, 200, g.text);
  const tok = await call(srv, 'POST', `/api/v2/teams/${t.json.data.id}/authentication-token`, {
    body: { data: { type: 'authentication-tokens', attributes: {} } },
  });
  assert.equal(tok.status, 201, tok.text);
  return tok.json.data.attributes.token as string;
}

/** A v4 state with a good header whose body breaks off. */
function truncatedState(serial: number, lineage: string): Buffer {
  return Buffer.from(
    `{"version":4,"terraform_version":"1.9.5","serial":${serial},"lineage":"${lineage}",` +
      '"outputs":{},"resources":[{"mode":"managed","type":"x',
  );
}

describeWithServer('state extraction and outputs over HTTP', { config: { stateAllowSerialMismatch: false } }, (srv) => {
  for (const name of ['worked-example', 'v4-modules', 'v4-empty', 'v3-nested']) {
    it(`extracts ${name}: resources, modules, providers, RUM, versions and outputs`, async () => {
      const f = await workspace(srv);
      const bytes = fixture(`${name}.tfstate`);
      const expected = JSON.parse(fixture(`${name}.expected.json`).toString('utf8')) as {
        stateVersion: number;
        terraformVersion: string | null;
        resources: unknown;
        modules: unknown;
        providers: unknown;
        billableRumCount: number;
        outputs: ExpectedOutput[];
      };
      const sv = await createFromBytes(srv, f, bytes);
      assert.equal(sv.attributes['resources-processed'], false);
      await srv.deps.worker.runUntilIdle();

      const a = (await call(srv, 'GET', `/api/v2/state-versions/${sv.id}`)).json.data.attributes;
      assert.equal(a['resources-processed'], true);
      assert.equal(a['resources-processing-error'], null);
      assert.equal(a['state-version'], expected.stateVersion);
      assert.equal(a['terraform-version'], expected.terraformVersion);
      assert.equal(a.size, bytes.length);
      assert.deepEqual(a.resources, expected.resources);
      assert.deepEqual(a.modules, expected.modules);
      assert.deepEqual(a.providers, expected.providers);
      assert.equal(a['billable-rum-count'], expected.billableRumCount);

      const list = await call(srv, 'GET', `/api/v2/state-versions/${sv.id}/outputs?page%5Bsize%5D=100`);
      assert.equal(list.status, 200);
      assert.deepEqual(
        list.json.data.map((o: { attributes: Record<string, unknown> }) => ({
          name: o.attributes.name,
          sensitive: o.attributes.sensitive,
          type: o.attributes.type,
          value: o.attributes.value,
          detailedType: o.attributes['detailed-type'],
        })),
        expected.outputs,
        'the version list shows every value, sensitive ones included',
      );
      assert.equal(list.json.meta.pagination['total-count'], expected.outputs.length);
      const current = await call(srv, 'GET', `/api/v2/workspaces/${f.wsId}/current-state-version-outputs`);
      assert.equal(current.status, 200);
      assert.deepEqual(
        current.json.data.map((o: { attributes: Record<string, unknown> }) => [o.attributes.name, o.attributes.value]),
        expected.outputs.map((o) => [o.name, o.sensitive ? null : o.value]),
        'current outputs hide sensitive values',
      );
      // include=outputs carries the same objects as the show endpoint.
      const inc = await call(srv, 'GET', `/api/v2/state-versions/${sv.id}?include=outputs`);
      for (const o of inc.json.included ?? []) {
        const one = await call(srv, 'GET', `/api/v2/state-version-outputs/${o.id}`);
        assert.deepEqual(one.json.data, o);
      }
      assert.equal((inc.json.included ?? []).length, expected.outputs.length);
    });
  }

  it('v3 states drop nested module outputs; only root outputs are listed', async () => {
    const f = await workspace(srv);
    const bytes = fixture('v3-nested.tfstate');
    const doc = JSON.parse(bytes.toString('utf8')) as {
      modules: Array<{ path: string[]; outputs: Record<string, unknown> }>;
    };
    const nested = doc.modules.filter((m) => m.path.length > 1).flatMap((m) => Object.keys(m.outputs ?? {}));
    assert.ok(nested.length > 0, 'the fixture has nested module outputs');
    const sv = await createFromBytes(srv, f, bytes);
    await srv.deps.worker.runUntilIdle();
    const names = (await call(srv, 'GET', `/api/v2/state-versions/${sv.id}/outputs`)).json.data.map(
      (o: { attributes: { name: string } }) => o.attributes.name,
    );
    assert.deepEqual(names.sort(), Object.keys(doc.modules.find((m) => m.path.length === 1)?.outputs ?? {}).sort());
    const rootOnly = nested.filter(
      (n) => !Object.keys(doc.modules.find((m) => m.path.length === 1)?.outputs ?? {}).includes(n),
    );
    for (const n of rootOnly) assert.ok(!names.includes(n), `nested output ${n} must not be listed`);
  });

  it('current outputs answer 503 "service unavailable" until extraction ran, then 200', async () => {
    const f = await workspace(srv);
    await createFromBytes(srv, f, stateFile(1, f.lineage));
    const r = await call(srv, 'GET', `/api/v2/workspaces/${f.wsId}/current-state-version-outputs`);
    assertError(r, 503);
    // Terraform retries only when the lower-case words appear in the title or detail.
    assert.match(`${r.json.errors[0].title} ${r.json.errors[0].detail}`, /service unavailable/);
    await srv.deps.worker.runUntilIdle();
    const ok = await call(srv, 'GET', `/api/v2/workspaces/${f.wsId}/current-state-version-outputs`);
    assert.equal(ok.status, 200);
    assert.deepEqual(
      ok.json.data.map((o: { attributes: { name: string } }) => o.attributes.name),
      ['greeting', 'secret'],
    );
  });

  it('json-state-outputs fill the outputs at once, with the client types kept after extraction', async () => {
    const f = await workspace(srv);
    const outs = {
      greeting: { sensitive: false, value: 'hello 1', type: 'string' },
      secret: { sensitive: true, value: 's3cr3t', type: 'string' },
    };
    const sv = await createFromBytes(srv, f, stateFile(1, f.lineage), {
      'json-state-outputs': b64(JSON.stringify(outs)),
    });
    assert.equal(sv.relationships.outputs.data.length, 2);
    const before = await call(srv, 'GET', `/api/v2/workspaces/${f.wsId}/current-state-version-outputs`);
    assert.equal(before.status, 200, 'no 503: the outputs are already known');
    await srv.deps.worker.runUntilIdle();
    const afterDoc = await call(srv, 'GET', `/api/v2/workspaces/${f.wsId}/current-state-version-outputs`);
    assert.deepEqual(
      afterDoc.json.data.map((o: { id: string }) => o.id),
      before.json.data.map((o: { id: string }) => o.id),
    );
  });

  it("pages a version's outputs and echoes a page past the end", async () => {
    const f = await workspace(srv);
    const sv = await createFromBytes(srv, f, fixture('v4-modules.tfstate'));
    await srv.deps.worker.runUntilIdle();
    const p1 = await call(srv, 'GET', `/api/v2/state-versions/${sv.id}/outputs?page%5Bnumber%5D=1&page%5Bsize%5D=3`);
    assert.equal(p1.status, 200);
    assert.equal(p1.json.data.length, 3);
    assert.deepEqual(p1.json.meta.pagination, {
      'current-page': 1,
      'page-size': 3,
      'prev-page': null,
      'next-page': 2,
      'total-pages': 3,
      'total-count': 8,
    });
    assert.match(p1.json.links.next, /page%5Bnumber%5D=2/);
    const p3 = await call(srv, 'GET', `/api/v2/state-versions/${sv.id}/outputs?page%5Bnumber%5D=3&page%5Bsize%5D=3`);
    assert.equal(p3.json.data.length, 2);
    const far = await call(
      srv,
      'GET',
      `/api/v2/state-versions/${sv.id}/outputs?page%5Bnumber%5D=999&page%5Bsize%5D=100`,
    );
    assert.equal(far.json.data.length, 0);
    assert.equal(far.json.meta.pagination['current-page'], 999);
    assert.equal(far.json.meta.pagination['total-count'], 8);
    const ids = [
      ...p1.json.data,
      ...(await call(srv, 'GET', `/api/v2/state-versions/${sv.id}/outputs?page%5Bnumber%5D=2&page%5Bsize%5D=3`)).json
        .data,
      ...p3.json.data,
    ].map((o: { id: string }) => o.id);
    assert.equal(new Set(ids).size, 8);
    assertError(await call(srv, 'GET', `/api/v2/state-versions/${sv.id}/outputs?page%5Bsize%5D=zero`), 422);
  });

  it("answers each outputs endpoint's errors as JSON:API documents", async () => {
    const f = await workspace(srv);
    assertError(await call(srv, 'GET', '/api/v2/state-version-outputs/wsout-doesnotexist1234'), 404);
    assertError(await call(srv, 'GET', '/api/v2/state-versions/sv-doesnotexist12345/outputs'), 404);
    assertError(await call(srv, 'GET', '/api/v2/workspaces/ws-doesnotexist12345/current-state-version-outputs'), 404);
    assertError(await call(srv, 'GET', `/api/v2/workspaces/${f.wsId}/current-state-version-outputs`), 404);
    assertError(
      await call(srv, 'GET', `/api/v2/workspaces/${f.wsId}/current-state-version-outputs`, { token: null }),
      401,
    );
    assertError(
      await call(srv, 'GET', '/api/v2/state-version-outputs/wsout-doesnotexist1234', { token: 'not-a-token' }),
      401,
    );
  });

  it('read-outputs access sees current outputs only; read access sees everything', async () => {
    const f = await workspace(srv);
    const sv = await createFromBytes(srv, f, stateFile(1, f.lineage));
    await srv.deps.worker.runUntilIdle();
    const outputsOnly = await teamToken(srv, f, { access: 'custom', 'state-versions': 'read-outputs' });
    const cur = await call(srv, 'GET', `/api/v2/workspaces/${f.wsId}/current-state-version-outputs`, {
      token: outputsOnly,
    });
    assert.equal(cur.status, 200, cur.text);
    const secret = cur.json.data.find((o: { attributes: { name: string } }) => o.attributes.name === 'secret');
    assert.equal(secret.attributes.value, null);
    assertError(await call(srv, 'GET', `/api/v2/state-version-outputs/${secret.id}`, { token: outputsOnly }), 404);
    assertError(await call(srv, 'GET', `/api/v2/state-versions/${sv.id}/outputs`, { token: outputsOnly }), 404);
    const reader = await teamToken(srv, f, { access: 'read' });
    const one = await call(srv, 'GET', `/api/v2/state-version-outputs/${secret.id}`, { token: reader });
    assert.equal(one.status, 200);
    assert.equal(one.json.data.attributes.value, 's3cr3t');
    const none = await teamToken(srv, f, { access: 'custom', 'state-versions': 'none' });
    assertError(
      await call(srv, 'GET', `/api/v2/workspaces/${f.wsId}/current-state-version-outputs`, { token: none }),
      404,
    );
  });

  it('a state broken after a good header is refused with 422, nothing is finalized; the server stays up', async () => {
    const f = await workspace(srv);
    const bytes = truncatedState(1, f.lineage);
    const pending = await call(srv, 'POST', `/api/v2/workspaces/${f.wsId}/state-versions`, {
      body: createBody({ serial: 1, md5: md5(bytes), lineage: f.lineage }),
    });
    assert.equal(pending.status, 201, pending.text);
    const up = await put(pending.json.data.attributes['hosted-state-upload-url'], bytes);
    assertError(up, 422);
    assert.match(up.json.errors[0].detail, /not a valid Terraform state: state is truncated/);
    assert.equal(
      (await srv.deps.worker.runUntilIdle()) <= 1,
      true,
      'no extraction, at most the collection of the refused content',
    );
    const a = (await call(srv, 'GET', `/api/v2/state-versions/${pending.json.data.id}`)).json.data.attributes;
    assert.equal(a.status, 'pending');
    assert.equal(a['hosted-state-download-url'], null);
    // Nothing was ever finalized in this workspace, so it still has no current version.
    const current = await call(srv, 'GET', `/api/v2/workspaces/${f.wsId}/current-state-version`);
    assertError(current, 404);
    assert.equal((await call(srv, 'GET', '/api/v2/ping')).status < 300, true);
  });

  it('refuses broken, truncated and non-JSON content with a clear 422', async () => {
    const f = await workspace(srv);
    for (const [text, pattern] of [
      ['{"version":4,,}', /not valid JSON/],
      ['{"version":4,"serial":1', /truncated|no "lineage"/],
      ['', /empty|base64|state/],
      ['hello', /not valid JSON/],
    ] as const) {
      const bytes = Buffer.from(text);
      const r = await call(srv, 'POST', `/api/v2/workspaces/${f.wsId}/state-versions`, {
        body: createBody({ serial: 1, md5: md5(bytes), lineage: f.lineage, state: b64(bytes) }),
      });
      assertError(r, 422);
      assert.match(r.json.errors[0].detail, pattern);
    }
    const bytes = Buffer.from('not json at all');
    const pending = await call(srv, 'POST', `/api/v2/workspaces/${f.wsId}/state-versions`, {
      body: createBody({ serial: 1, md5: md5(bytes), lineage: f.lineage }),
    });
    const up = await put(pending.json.data.attributes['hosted-state-upload-url'], bytes);
    assertError(up, 422);
    assert.match(up.json.errors[0].detail, /not a valid Terraform state/);
  });

  it('the start-up backfill enqueues versions finalized without extraction, once', async () => {
    const f = await workspace(srv);
    const sv = await createFromBytes(srv, f, fixture('worked-example.tfstate'));
    await srv.deps.worker.runUntilIdle();
    const db = srv.deps.core.db.kysely;
    // As if stored by a release without extraction.
    await db
      .updateTable('tfe_state_versions')
      .set({ resources_processed: 0, resources: null, modules: null, providers: null, billable_rum_count: null })
      .where('id', '=', sv.id)
      .execute();
    const repos = stateRepos(srv.deps.core.db);
    assert.equal(await enqueueMissingExtractions({ repos, jobs: srv.deps.core.jobs }), 1);
    assert.equal(await enqueueMissingExtractions({ repos, jobs: srv.deps.core.jobs }), 0, 'deduplicated while queued');
    assert.equal(await srv.deps.worker.runUntilIdle(), 1);
    const a = (await call(srv, 'GET', `/api/v2/state-versions/${sv.id}`)).json.data.attributes;
    assert.equal(a['resources-processed'], true);
    assert.equal(a['billable-rum-count'], 3);
    assert.equal(await enqueueMissingExtractions({ repos, jobs: srv.deps.core.jobs }), 0);
  });
});
