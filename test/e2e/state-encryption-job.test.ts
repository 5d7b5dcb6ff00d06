import { it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describeWithServer } from '../support/test-server.js';
import { foundIn, secretState, storedBytes } from '../support/stored-bytes.js';
import {
  call,
  createBody,
  createPending,
  download,
  inlineAttrs,
  put,
  workspace,
} from './tfe-state-versions-fixture.js';
import { StateEncryption } from '../../src/tfe/state-versions/state-encryption-job.js';
import { StateEncryptionRepo } from '../../src/tfe/state-versions/state-encryption-repo.js';

// Content stored in plain text (by a server writing with state_encryption=false, as every
// server did before encryption existed) is sealed by the background job, one small batch
// per run, every version staying readable between runs; each run is a fresh instance, so
// all it knows is the progress row a crash would leave behind.

describeWithServer('state encryption job', { config: { stateInlineMaxSize: 4096, stateEncryption: false } }, (srv) => {
  it('seals older plain content in resumable batches, every version readable throughout', async () => {
    const secrets: string[] = [];
    const fresh = () => {
      const s = Array.from({ length: 4 }, () => `plain-secret-${randomBytes(10).toString('hex')}`);
      secrets.push(...s);
      return s;
    };
    const f = await workspace(srv);
    const versions: Array<{ id: string; bytes: Buffer }> = [];
    for (const [serial, pad] of [
      [1, 0],
      [2, 100_000],
      [3, 0],
    ] as const) {
      const bytes = secretState(serial, f.lineage, fresh(), pad);
      const r = await call(srv, 'POST', `/api/v2/workspaces/${f.wsId}/state-versions`, {
        body: createBody(inlineAttrs(bytes, serial, f.lineage)),
      });
      assert.equal(r.status, 201, r.text);
      versions.push({ id: r.json.data.id, bytes });
    }
    const uploaded = secretState(4, f.lineage, fresh(), 50_000);
    const pending = await createPending(srv, f, 4, uploaded);
    assert.equal((await put(pending.attributes['hosted-state-upload-url'], uploaded)).status, 200);
    versions.push({ id: pending.id, bytes: uploaded });
    await srv.deps.worker.runUntilIdle();
    assert.ok(foundIn(await storedBytes(srv), secrets).length > 0, 'the content starts in plain text');

    const readAll = async () => {
      for (const v of versions) {
        const shown = await call(srv, 'GET', `/api/v2/state-versions/${v.id}`);
        const d = await download(srv, shown.json.data.attributes['hosted-state-download-url']);
        assert.equal(d.status, 200);
        assert.ok(d.body.equals(v.bytes), `version ${v.id} reads back whole`);
        const outs = await call(srv, 'GET', `/api/v2/state-versions/${v.id}/outputs`);
        assert.equal(outs.status, 200, outs.text);
        assert.equal(outs.json.data.length, 2);
      }
    };
    const repo = new StateEncryptionRepo({ db: srv.deps.core.db.kysely });
    const job = () =>
      new StateEncryption({
        repo,
        blobs: srv.deps.core.blobs,
        jobs: srv.deps.core.jobs,
        db: srv.deps.core.db.kysely,
        sealing: { ...srv.deps.core.sealing, encrypt: true },
        clock: srv.deps.core.clock,
        logger: srv.deps.core.logger,
        metrics: srv.deps.core.metrics,
        ...(srv.deps.core.db.scrub ? { scrub: srv.deps.core.db.scrub } : {}),
        batch: 1,
        runMs: 0,
      });
    let runs = 0;
    for (;;) {
      await job().run();
      runs++;
      await readAll();
      const p = await repo.progress();
      if (p?.phase === 'done') {
        assert.deepEqual(p.sealed, p.totals, 'every plain record was sealed once');
        break;
      }
      assert.ok(runs < 100, 'the job finishes');
    }
    assert.ok(runs >= 8, `one record per run (${runs} runs)`);
    assert.deepEqual(foundIn(await storedBytes(srv), secrets), []);

    // Finished: another run changes nothing, and the metrics say so.
    await job().run();
    const metrics = await (await fetch(`${srv.url}/metrics`)).text();
    assert.match(metrics, /strongroom_state_encryption_remaining\{kind="blob"\} 0/);
    assert.match(metrics, /strongroom_state_encryption_sealed_total\{kind="output"\} 8/);
    await readAll();
  });
});
