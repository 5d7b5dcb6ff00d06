import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { openDatabase } from '../../src/db/database.js';
import { HOUSEKEEPING_JOB } from '../../src/jobs/housekeeping.js';
import { dbKinds, createDatabaseUrl } from '../support/test-db.js';
import { spawnServer } from '../support/spawn-server.js';
import type { SpawnedServer } from '../support/spawn-server.js';
import { apiAt as api } from './tfe-state-versions-fixture.js';
import { until } from '../support/wait.js';

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const md5 = (b: Buffer) => createHash('md5').update(b).digest('hex');

function state(serial: number): Buffer {
  return Buffer.from(
    JSON.stringify({
      version: 4,
      terraform_version: '1.9.0',
      serial,
      lineage: 'orphan-lineage',
      outputs: { n: { value: `v${serial}`, type: 'string' } },
      resources: [],
    }),
  );
}

/**
 * A kill -9 between writing a state blob and committing the version that references it
 * leaves the blob stored with nothing referring to it. The housekeeping job, which every
 * start runs, removes such blobs once they are an hour old, and only those.
 */
for (const kind of dbKinds()) {
  describe(`a crash between storing a state blob and committing its version [${kind}]`, () => {
    it('leaves an orphan that housekeeping removes once an hour old, keeping everything referenced', async () => {
      const db = await createDatabaseUrl(kind);
      const dataDir = join(db.dir, 'data');
      const args = ['--data-dir', dataDir, ...(kind === 'postgres' ? ['--database-url', db.url] : [])];
      const sql = openDatabase({
        url: kind === 'sqlite' ? `sqlite:${join(dataDir, 'strongroom.db')}` : db.url,
        poolSize: 2,
      });
      let server: SpawnedServer = await spawnServer([...args, '--job-worker', 'false']);
      const token = /^\s+(sr\.\S+)$/m.exec(server.output())?.[1] as string;
      assert.ok(token);
      const blobPath = (sha: string) => join(dataDir, 'blobs', 'sha256', sha.slice(0, 2), sha);
      const stored = async (sha: string): Promise<boolean> => {
        if (kind === 'sqlite') return existsSync(blobPath(sha));
        const r = await sql.kysely.selectFrom('blobs').select('sha256').where('sha256', '=', sha).executeTakeFirst();
        return r !== undefined;
      };
      const liveRow = async (sha: string): Promise<boolean> =>
        (await sql.kysely
          .selectFrom('tfe_state_blobs')
          .select('sha256')
          .where('sha256', '=', sha)
          .where('deleting', '=', 0)
          .executeTakeFirst()) !== undefined;
      /** Moves a stored blob's write time two hours back (what an hour of waiting would do). */
      const age = async (sha: string): Promise<void> => {
        const then = new Date(Date.now() - 2 * 3600_000);
        if (kind === 'sqlite') utimesSync(blobPath(sha), then, then);
        else
          await sql.kysely
            .updateTable('blobs')
            .set({ created_at: then.toISOString() })
            .where('sha256', '=', sha)
            .execute();
      };
      const housekeepingRuns = async (): Promise<number> =>
        Number(
          (
            await sql.kysely
              .selectFrom('jobs')
              .select((eb) => eb.fn.countAll<number>().as('n'))
              .where('kind', '=', HOUSEKEEPING_JOB)
              .where('status', '=', 'done')
              .executeTakeFirstOrThrow()
          ).n,
        );
      const download = async (url: string) =>
        Buffer.from(
          await (
            await fetch(url.replace(/^http:\/\/[^/]+/, server.url), { headers: { authorization: `Bearer ${token}` } })
          ).arrayBuffer(),
        );
      try {
        const org = await api(server.url, token, 'POST', '/organizations', {
          data: { type: 'organizations', attributes: { name: 'orphans', email: 'ops@example.com' } },
        });
        assert.equal(org.status, 201);
        const ws = await api(server.url, token, 'POST', '/organizations/orphans/workspaces', {
          data: { type: 'workspaces', attributes: { name: 'w' } },
        });
        const wsId = ws.body?.data.id as string;
        assert.equal((await api(server.url, token, 'POST', `/workspaces/${wsId}/actions/lock`, {})).status, 200);
        const pending = async (serial: number, bytes: Buffer) => {
          const r = await api(server.url, token, 'POST', `/workspaces/${wsId}/state-versions`, {
            data: { type: 'state-versions', attributes: { serial, md5: md5(bytes), lineage: 'orphan-lineage' } },
          });
          assert.equal(r.status, 201);
          return { id: r.body?.data.id as string, url: r.body?.data.attributes['hosted-state-upload-url'] as string };
        };
        // v1 arrives whole: its blob is referenced and must survive every sweep, however old.
        const bytes1 = state(1);
        const v1 = await pending(1, bytes1);
        assert.equal((await fetch(v1.url, { method: 'PUT', body: bytes1 })).status, 200);

        // v2's upload stores its blob, then waits for the database, which another connection holds; the kill
        // lands between the two.
        const bytes2 = state(2);
        const v2 = await pending(2, bytes2);
        let release: () => Promise<void>;
        if (kind === 'sqlite') {
          const holder = new Database(join(dataDir, 'strongroom.db'));
          holder.prepare('begin immediate').run();
          release = async () => {
            holder.prepare('rollback').run();
            holder.close();
          };
        } else {
          const holder = new pg.Client({ connectionString: db.url });
          await holder.connect();
          await holder.query('begin');
          await holder.query('select 1 from tfe_state_heads where workspace_id = $1 for update', [wsId]);
          release = async () => {
            await holder.query('rollback');
            await holder.end();
          };
        }
        const upload = fetch(v2.url, { method: 'PUT', body: bytes2 }).then(
          (r) => `status ${r.status}`,
          (e: Error) => `error ${e.message}`,
        );
        await until('the blob to be stored', () => stored(sha256(bytes2)));
        server.child.kill('SIGKILL');
        assert.equal(await server.exited, 'SIGKILL');
        assert.match(await upload, /^error/, 'the upload died with the server');
        await release();
        assert.equal(await stored(sha256(bytes2)), true, 'the blob outlived its transaction');
        assert.equal(await liveRow(sha256(bytes2)), false, 'nothing refers to it');

        // The start-up housekeeping run leaves a blob younger than an hour alone.
        server = await spawnServer(args, { STRONGROOM_JOB_POLL_INTERVAL: '50' });
        await until('the start-up housekeeping run', async () => (await housekeepingRuns()) >= 1);
        assert.equal(await stored(sha256(bytes2)), true, 'a young orphan is kept');
        assert.equal(await server.stop(), 0);

        // An hour later (both blobs aged), the next start removes the orphan and keeps v1's blob.
        await age(sha256(bytes2));
        await age(sha256(bytes1));
        server = await spawnServer(args, { STRONGROOM_JOB_POLL_INTERVAL: '50' });
        await until('the second start-up housekeeping run', async () => (await housekeepingRuns()) >= 2);
        assert.equal(await stored(sha256(bytes2)), false, 'the orphan is gone');
        assert.equal(await stored(sha256(bytes1)), true, 'the referenced blob stays');
        const shown = await api(server.url, token, 'GET', `/state-versions/${v1.id}`);
        assert.ok(
          (await download(shown.body?.data.attributes['hosted-state-download-url'] as string)).equals(bytes1),
          'v1 downloads byte for byte',
        );
        // v2 is still pending and its URL takes the upload again, which stores the content anew.
        assert.equal(
          (await fetch(v2.url.replace(/^http:\/\/[^/]+/, server.url), { method: 'PUT', body: bytes2 })).status,
          200,
        );
        const cur = await api(server.url, token, 'GET', `/workspaces/${wsId}/current-state-version`);
        assert.equal(cur.body?.data.id, v2.id);
        assert.ok((await download(cur.body?.data.attributes['hosted-state-download-url'] as string)).equals(bytes2));
      } finally {
        await server.stop('SIGKILL');
        await sql.destroy();
        await db.drop();
      }
    });
  });
}
