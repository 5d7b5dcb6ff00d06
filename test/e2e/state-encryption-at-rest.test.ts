import { it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { foundIn, secretState, storedBytes } from '../support/stored-bytes.js';
import { describeWithServer } from '../support/test-server.js';
import {
  b64,
  call,
  createBody,
  createPending,
  download,
  inlineAttrs,
  put,
  workspace,
} from './tfe-state-versions-fixture.js';

// A copy of the database or the blob directory taken without the master key reveals no
// state content and no output value: every secret of a state, after inline creates,
// uploads through the upload URLs, a rollback and the extraction of outputs, is
// searched for in the SQLite file and its WAL, the blob files, and every PostgreSQL table.

describeWithServer('state encrypted at rest', { config: { stateInlineMaxSize: 4096 } }, (srv, kind) => {
  it('leaves no secret of a state in the database files, the WAL, the blobs or any table', async () => {
    const secrets: string[] = [];
    const fresh = () => {
      const s = Array.from({ length: 4 }, () => `secret-${randomBytes(12).toString('hex')}`);
      secrets.push(...s);
      return s;
    };
    const f = await workspace(srv);
    // 1: small, inline (with a JSON state); 2: large, inline (to the blob store);
    // 3: through the upload URLs (state and JSON state); then a rollback to 1.
    const small = secretState(1, f.lineage, fresh());
    const json1 = Buffer.from(JSON.stringify({ values: { outputs: { x: { value: fresh()[0] } } } }));
    let r = await call(srv, 'POST', `/api/v2/workspaces/${f.wsId}/state-versions`, {
      body: createBody(inlineAttrs(small, 1, f.lineage, { 'json-state': b64(json1) })),
    });
    assert.equal(r.status, 201, r.text);
    const v1 = r.json.data.id as string;
    const large = secretState(2, f.lineage, fresh(), 300_000);
    r = await call(srv, 'POST', `/api/v2/workspaces/${f.wsId}/state-versions`, {
      body: createBody(inlineAttrs(large, 2, f.lineage)),
    });
    assert.equal(r.status, 201, r.text);
    // Over two frames of 1 MiB, and over two 1 MiB chunks of the database store, neither aligned with the other.
    const uploaded = secretState(3, f.lineage, fresh(), 2_500_000);
    const pending = await createPending(srv, f, 3, uploaded);
    const json3 = Buffer.from(JSON.stringify({ values: { outputs: { y: { value: fresh()[0] } } } }));
    assert.equal((await put(pending.attributes['hosted-state-upload-url'], uploaded)).status, 200);
    assert.equal((await put(pending.attributes['hosted-json-state-upload-url'], json3)).status, 200);
    r = await call(srv, 'PATCH', `/api/v2/workspaces/${f.wsId}/state-versions`, {
      body: {
        data: {
          type: 'state-versions',
          relationships: { 'rollback-state-version': { data: { type: 'state-versions', id: v1 } } },
        },
      },
    });
    assert.equal(r.status, 201, r.text);
    await srv.deps.worker.runUntilIdle();

    // Everything reads back: downloads, and output values (sensitive ones included).
    const shown = await call(srv, 'GET', `/api/v2/state-versions/${pending.id}`);
    assert.ok((await download(srv, shown.json.data.attributes['hosted-state-download-url'])).body.equals(uploaded));
    assert.ok((await download(srv, shown.json.data.attributes['hosted-json-state-download-url'])).body.equals(json3));
    const outs = await call(srv, 'GET', `/api/v2/state-versions/${pending.id}/outputs`);
    assert.equal(outs.status, 200, outs.text);
    const values = JSON.stringify(outs.json.data.map((o: { attributes: { value: unknown } }) => o.attributes.value));
    assert.ok(values.includes(secrets[12] as string) && values.includes(secrets[13] as string), values);
    const cur = await call(srv, 'GET', `/api/v2/workspaces/${f.wsId}/current-state-version`);
    assert.ok((await download(srv, cur.json.data.attributes['hosted-state-download-url'])).body.equals(small));

    const stored = await storedBytes(srv);
    if (kind === 'sqlite') {
      assert.ok(
        stored.some(([p]) => p.endsWith('-wal')),
        'the WAL is searched',
      );
      assert.ok(stored.filter(([p]) => p.includes('/blobs/')).length >= 3, 'the blob files are searched');
    }
    assert.deepEqual(foundIn(stored, secrets), []);
    // The test would see them if they were there: the plain state does hold them.
    assert.ok(uploaded.includes(Buffer.from(secrets[12] as string)));
  });

  it('refuses to serve content that fails authentication, naming the problem', async () => {
    const f = await workspace(srv);
    const small = secretState(1, f.lineage, ['a', 'b', 'c', 'd']);
    const large = secretState(2, f.lineage, ['a', 'b', 'c', 'd'], 200_000);
    const urls: string[] = [];
    for (const [serial, bytes] of [
      [1, small],
      [2, large],
    ] as const) {
      const r = await call(srv, 'POST', `/api/v2/workspaces/${f.wsId}/state-versions`, {
        body: createBody(inlineAttrs(bytes, serial, f.lineage)),
      });
      assert.equal(r.status, 201, r.text);
      urls.push(r.json.data.attributes['hosted-state-download-url']);
    }
    const flip = (b: Buffer, at: number) => {
      const c = Buffer.from(b);
      c[at] = (c[at] as number) ^ 1;
      return c;
    };
    const db = srv.deps.core.db.kysely;
    const smallSha = createHash('sha256').update(small).digest('hex');
    const largeSha = createHash('sha256').update(large).digest('hex');
    const row = await db
      .selectFrom('tfe_state_blobs')
      .select('data')
      .where('sha256', '=', smallSha)
      .executeTakeFirstOrThrow();
    await db
      .updateTable('tfe_state_blobs')
      .set({ data: flip(Buffer.from(row.data as Buffer), 100) })
      .where('sha256', '=', smallSha)
      .execute();
    if (kind === 'sqlite') {
      const p = join(srv.config.dataDir, 'blobs', 'sha256', largeSha.slice(0, 2), largeSha);
      writeFileSync(p, flip(readFileSync(p), 60));
    } else {
      const { upload_id } = await db
        .selectFrom('blobs')
        .select('upload_id')
        .where('sha256', '=', largeSha)
        .executeTakeFirstOrThrow();
      const c = await db
        .selectFrom('blob_chunks')
        .select('data')
        .where('upload_id', '=', upload_id)
        .where('seq', '=', 0)
        .executeTakeFirstOrThrow();
      await db
        .updateTable('blob_chunks')
        .set({ data: flip(Buffer.from(c.data), 60) })
        .where('upload_id', '=', upload_id)
        .where('seq', '=', 0)
        .execute();
    }
    // The inline state is a record sealed whole, the large one a blob sealed in frames.
    for (const [i, what] of ['record', 'frame 0'].entries()) {
      const r = await fetch(urls[i] as string, { headers: { authorization: `Bearer ${srv.rootToken}` } });
      const body = await r.text();
      assert.equal(r.status, 503, body);
      assert.match(body, new RegExp(`cannot be authenticated \\(${what} failed authentication\\)`));
      assert.ok(!body.includes('"password"'));
    }
  });
});
