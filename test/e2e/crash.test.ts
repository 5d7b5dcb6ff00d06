import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { openDatabase } from '../../src/db/database.js';
import { JobQueue } from '../../src/jobs/job-queue.js';
import { HOUSEKEEPING_JOB } from '../../src/jobs/housekeeping.js';
import { systemClock } from '../../src/shared/clock.js';
import { dbKinds, createDatabaseUrl } from '../support/test-db.js';
import { spawnServer } from '../support/spawn-server.js';
import { apiAt as api } from './tfe-state-versions-fixture.js';

/** Starts a PUT of `totalMb` MiB, sends `sendMb` of it, then calls `atPause` and never finishes. */
function stalledUpload(url: string, totalMb: number, sendMb: number, atPause: () => void): Promise<string> {
  return new Promise((resolve) => {
    const u = new URL(url);
    const req = request({
      host: u.hostname,
      port: u.port,
      path: u.pathname,
      method: 'PUT',
      headers: { 'content-type': 'application/octet-stream', 'content-length': totalMb * 1024 * 1024 },
    });
    req.on('error', (e) => resolve(`error: ${e.message}`));
    req.on('response', (r) => resolve(`status ${r.statusCode}`));
    const chunk = Buffer.alloc(1024 * 1024, 0x20);
    let sent = 0;
    const pump = () => {
      while (sent < sendMb) {
        sent++;
        if (!req.write(chunk)) return req.once('drain', pump);
      }
      atPause();
    };
    pump();
  });
}

for (const kind of dbKinds()) {
  describe(`a crash during a 100 MB blob write [${kind}]`, () => {
    it('leaves no partial blob, a consistent database and the job queue intact', async () => {
      const db = await createDatabaseUrl(kind);
      const dataDir = join(db.dir, 'data');
      const dbArgs = kind === 'postgres' ? ['--database-url', db.url] : [];
      const token = 'crash-test-token';
      const args = ['--data-dir', dataDir, '--dev-root-token', token, ...dbArgs];
      // --dev would use a throwaway directory; keep the data directory across restarts instead.
      const serverArgs = args.filter((a) => a !== '--dev-root-token' && a !== token);
      // The first process runs no worker, so the job we mark as in progress stays ours.
      let server = await spawnServer(serverArgs, { STRONGROOM_JOB_WORKER: 'false' });
      const adminToken = /^\s+(sr\.\S+)$/m.exec(server.output())?.[1] as string;
      assert.ok(adminToken);
      const sqlDb = openDatabase({
        url: kind === 'sqlite' ? `sqlite:${join(dataDir, 'strongroom.db')}` : db.url,
        poolSize: 2,
      });
      const queue = new JobQueue({ db: sqlDb, clock: systemClock });
      try {
        // Jobs that must survive the crash: three due later, one in progress when the process dies.
        const later = new Date(Date.now() + 3600_000);
        const waiting = [];
        for (let i = 0; i < 3; i++)
          waiting.push(await queue.enqueue(sqlDb.kysely, { kind: HOUSEKEEPING_JOB, runAt: later }));
        const inFlightId = (await queue.enqueue(sqlDb.kysely, { kind: HOUSEKEEPING_JOB })) as string;
        const [claimed] = await queue.claim('node-that-will-die', 1, 2);
        assert.equal(claimed?.id, inFlightId);

        assert.equal(
          (
            await api(server.url, adminToken, 'POST', '/organizations', {
              data: { type: 'organizations', attributes: { name: 'crash', email: 'ops@example.com' } },
            })
          ).status,
          201,
        );
        const ws = await api(server.url, adminToken, 'POST', '/organizations/crash/workspaces', {
          data: { type: 'workspaces', attributes: { name: 'w' } },
        });
        assert.equal(ws.status, 201);
        const wsId = ws.body?.data.id as string;
        assert.equal((await api(server.url, adminToken, 'POST', `/workspaces/${wsId}/actions/lock`, {})).status, 200);
        const state = Buffer.from(
          JSON.stringify({
            version: 4,
            terraform_version: '1.9.0',
            serial: 1,
            lineage: 'crash-lineage',
            outputs: {},
            resources: [],
          }),
        );
        const md5 = createHash('md5').update(state).digest('hex');
        const sv = await api(server.url, adminToken, 'POST', `/workspaces/${wsId}/state-versions`, {
          data: { type: 'state-versions', attributes: { serial: 1, md5, lineage: 'crash-lineage' } },
        });
        assert.equal(sv.status, 201, JSON.stringify(sv.body));
        const uploadUrl = sv.body?.data.attributes['hosted-state-upload-url'] as string;
        assert.match(uploadUrl, /\/v1\/object\//);

        const outcome = await stalledUpload(uploadUrl, 100, 40, () => server.child.kill('SIGKILL'));
        assert.match(outcome, /^error/, 'the upload died with the server');
        assert.equal(await server.exited, 'SIGKILL');

        server = await spawnServer(serverArgs, { STRONGROOM_JOB_POLL_INTERVAL: '50' });
        try {
          assert.equal((await fetch(`${server.url}/readyz`)).status, 200);
          // No partial blob is visible.
          if (kind === 'sqlite') {
            assert.deepEqual(readdirSync(join(dataDir, 'blobs', 'tmp')), [], 'temporary files are cleared at start');
            const shards = existsSync(join(dataDir, 'blobs', 'sha256'))
              ? readdirSync(join(dataDir, 'blobs', 'sha256'))
              : [];
            assert.deepEqual(
              shards.flatMap((s) => readdirSync(join(dataDir, 'blobs', 'sha256', s))),
              [],
            );
          } else {
            const blobs = await sqlDb.kysely
              .selectFrom('blobs')
              .select((eb) => eb.fn.countAll<number>().as('n'))
              .executeTakeFirstOrThrow();
            const chunks = await sqlDb.kysely
              .selectFrom('blob_chunks')
              .select((eb) => eb.fn.countAll<number>().as('n'))
              .executeTakeFirstOrThrow();
            assert.equal(Number(blobs.n), 0);
            assert.equal(Number(chunks.n), 0, 'the interrupted transaction left no chunks');
          }
          // The version is still pending, and its one-time URL still takes the whole upload.
          const show = await api(server.url, adminToken, 'GET', `/state-versions/${sv.body?.data.id}`);
          assert.equal(show.body?.data.attributes.status, 'pending');
          const put = await fetch(uploadUrl.replace(/^http:\/\/[^/]+/, server.url), { method: 'PUT', body: state });
          assert.equal(put.status, 200);
          const after = await api(server.url, adminToken, 'GET', `/state-versions/${sv.body?.data.id}`);
          assert.equal(after.body?.data.attributes.status, 'finalized');

          // The job that was running when the process died runs again; the others wait intact.
          const deadline = Date.now() + 15_000;
          while ((await queue.find(inFlightId))?.status !== 'done' && Date.now() < deadline)
            await new Promise((r) => setTimeout(r, 100));
          assert.equal((await queue.find(inFlightId))?.status, 'done');
          for (const id of waiting) assert.equal((await queue.find(id as string))?.status, 'queued');
        } finally {
          assert.equal(await server.stop(), 0);
        }
        if (kind === 'sqlite') {
          const check = new Database(join(dataDir, 'strongroom.db'), { readonly: true });
          assert.equal(check.pragma('integrity_check', { simple: true }), 'ok');
          check.close();
        }
      } finally {
        await server.stop('SIGKILL');
        await sqlDb.destroy();
        await db.drop();
      }
    });
  });
}
