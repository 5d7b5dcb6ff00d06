import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, closeSync, mkdirSync, openSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createDatabaseUrl, dbKinds } from '../support/test-db.js';
import { spawnServer } from '../support/spawn-server.js';
import type { SpawnedServer } from '../support/spawn-server.js';

/**
 * What the server keeps in its data directory is the server user's alone: every file it
 * creates (database, WAL, shared memory, blobs, master key, lock) is 0600 and every
 * directory 0700, and a database left 0644 by an older version is tightened at start.
 */

const TOKEN_LINE = /^\s+(sr\.[1-9A-Za-z]{40})$/m;

function walk(dir: string, out: { path: string; mode: number; dir: boolean }[] = []) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, e.name);
    out.push({ path, mode: statSync(path).mode & 0o777, dir: e.isDirectory() });
    if (e.isDirectory()) walk(path, out);
  }
  return out;
}

for (const kind of dbKinds()) {
  describe(`modes of the data directory [${kind}]`, () => {
    let server: SpawnedServer;
    let dataDir: string;
    let drop: () => Promise<void>;
    before(async () => {
      const db = await createDatabaseUrl(kind);
      drop = db.drop;
      dataDir = join(db.dir, 'data');
      // As an older version left it: a world-readable directory and database.
      mkdirSync(dataDir, { mode: 0o755 });
      chmodSync(dataDir, 0o755);
      if (kind === 'sqlite') {
        closeSync(openSync(join(dataDir, 'strongroom.db'), 'w', 0o644));
        chmodSync(join(dataDir, 'strongroom.db'), 0o644);
      }
      const dbArgs = kind === 'postgres' ? ['--database-url', db.url] : [];
      server = await spawnServer(['--data-dir', dataDir, '--state-inline-max-size', '0', ...dbArgs]);
    });
    after(async () => {
      await server?.stop('SIGKILL');
      await drop();
    });

    it('keeps files 0600 and directories 0700, blobs included', async () => {
      const token = TOKEN_LINE.exec(server.output())?.[1] as string;
      const api = (method: string, path: string, body?: unknown) =>
        fetch(`${server.url}${path}`, {
          method,
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/vnd.api+json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
      const o = await api('POST', '/api/v2/organizations', {
        data: { type: 'organizations', attributes: { name: 'modes', email: 'modes@example.com' } },
      });
      assert.equal(o.status, 201);
      const w = await api('POST', '/api/v2/organizations/modes/workspaces', {
        data: { type: 'workspaces', attributes: { name: 'w' } },
      });
      const wsId = ((await w.json()) as { data: { id: string } }).data.id;
      assert.equal((await api('POST', `/api/v2/workspaces/${wsId}/actions/lock`, {})).status, 200);
      const state = Buffer.from(JSON.stringify({ version: 4, serial: 1, lineage: 'l', outputs: {}, resources: [] }));
      const { createHash } = await import('node:crypto');
      const sv = await api('POST', `/api/v2/workspaces/${wsId}/state-versions`, {
        data: {
          type: 'state-versions',
          attributes: {
            serial: 1,
            lineage: 'l',
            md5: createHash('md5').update(state).digest('hex'),
            state: state.toString('base64'),
          },
        },
      });
      assert.equal(sv.status, 201, await sv.text());

      const entries = walk(dataDir);
      const names = entries.map((e) => e.path.slice(dataDir.length + 1));
      assert.ok(names.includes('master.key'), names.join(' '));
      if (kind === 'sqlite') {
        for (const n of ['server.lock', 'strongroom.db', 'strongroom.db-wal', 'strongroom.db-shm'])
          assert.ok(names.includes(n), `${n} in ${names.join(' ')}`);
        assert.ok(
          names.some((n) => /^blobs\/sha256\/[0-9a-f]{2}\/[0-9a-f]{64}$/.test(n)),
          `a blob file in ${names.join(' ')}`,
        );
      }
      assert.equal(statSync(dataDir).mode & 0o777, 0o700, 'the data directory');
      for (const e of entries) assert.equal(e.mode, e.dir ? 0o700 : 0o600, `${e.path} is ${e.mode.toString(8)}`);
    });
  });
}
