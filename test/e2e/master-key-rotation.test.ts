import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { dbKinds, createDatabaseUrl } from '../support/test-db.js';
import { runCli, spawnServer } from '../support/spawn-server.js';
import type { SpawnedServer } from '../support/spawn-server.js';
import { openDatabase } from '../../src/db/database.js';
import { SEALED_COLUMNS, sealedValues } from '../../src/db/sealed-columns.js';
import { SecretBox } from '../../src/secrets/secret-box.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- answers read field by field
type Json = any;

async function api(base: string, token: string, method: string, path: string, body?: unknown) {
  const v1 = !path.startsWith('/api/');
  const res = await fetch(`${base}${v1 ? '/v1/' : ''}${path}`, {
    method,
    headers: v1
      ? { 'x-vault-token': token }
      : { authorization: `Bearer ${token}`, 'content-type': 'application/vnd.api+json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: (text ? JSON.parse(text) : undefined) as Json };
}

const keysIn = (dataDir: string) =>
  readFileSync(join(dataDir, 'master.key'), 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => Buffer.from(l, 'base64'));

let last: unknown;
async function waitFor<T>(what: string, fn: () => Promise<T | undefined>, ms = 120_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

// The master key of a running server is rotated through the API; the server is killed
// (SIGKILL) in the middle of re-sealing, restarted, and finishes: then every sealed value
// of every column in the registry opens with the new key and none with the old one, and
// what those values protect (PKI keys, upload URLs, state content) still works.
for (const kind of dbKinds()) {
  describe(`master key rotation [${kind}]`, () => {
    it('re-seals every value under a new key, survives kill -9 midway, and the old key opens nothing', async () => {
      const db = await createDatabaseUrl(kind);
      const dataDir = join(db.dir, 'data');
      const args = ['--data-dir', dataDir, ...(kind === 'postgres' ? ['--database-url', db.url] : [])];
      const env = { STRONGROOM_JOB_POLL_INTERVAL: '50', STRONGROOM_MASTER_KEY_ROTATION_BATCH: '1' };
      let server: SpawnedServer = await spawnServer(args, env);
      try {
        const token = /^\s+(sr\.\S+)$/m.exec(server.output())?.[1] as string;
        assert.ok(token);
        const v = (method: string, path: string, body?: unknown) => api(server.url, token, method, path, body);
        assert.equal((await v('POST', 'sys/mounts/pki', { type: 'pki' })).status, 204);
        const root = await v('POST', 'pki/root/generate/internal', { common_name: 'Rotation Root', key_type: 'ec' });
        assert.equal(root.status, 200);
        const keyIds: string[] = [];
        for (let i = 0; i < 120; i++) {
          const k = await v('POST', 'pki/keys/generate/internal', { key_type: 'ec', key_name: `k${i}` });
          assert.equal(k.status, 200, JSON.stringify(k.json));
          keyIds.push(k.json.data.key_id);
        }
        // A state version with content (under a data key) and one waiting for its upload (sealed URL tokens).
        const org = await v('POST', '/api/v2/organizations', {
          data: { type: 'organizations', attributes: { name: 'rot', email: 'rot@example.com' } },
        });
        assert.equal(org.status, 201);
        const ws = await v('POST', '/api/v2/organizations/rot/workspaces', {
          data: { type: 'workspaces', attributes: { name: 'w' } },
        });
        const wsId = ws.json.data.id as string;
        await v('POST', `/api/v2/workspaces/${wsId}/actions/lock`, {});
        const state = Buffer.from(JSON.stringify({ version: 4, serial: 1, lineage: 'l', outputs: {}, resources: [] }));
        const md5 = (await import('node:crypto')).createHash('md5').update(state).digest('hex');
        const created = await v('POST', `/api/v2/workspaces/${wsId}/state-versions`, {
          data: {
            type: 'state-versions',
            attributes: { serial: 1, md5, lineage: 'l', state: state.toString('base64') },
          },
        });
        assert.equal(created.status, 201, JSON.stringify(created.json));
        const pending = await v('POST', `/api/v2/workspaces/${wsId}/state-versions`, {
          data: { type: 'state-versions', attributes: { serial: 2, md5, lineage: 'l' } },
        });
        assert.equal(pending.status, 201, JSON.stringify(pending.json));

        const [oldKey] = keysIn(dataDir) as [Buffer];
        assert.equal(keysIn(dataDir).length, 1);
        assert.equal((await v('PUT', 'sys/rotate')).status, 204);
        // Killed once some values are re-sealed and the rotation is still running: one value per batch, so
        // after the first few the rest (over a hundred commits) leaves the kill a wide margin.
        await waitFor('some progress', async () => {
          const s = (await v('GET', 'sys/key-status')).json.data;
          last = s;
          assert.equal(s.rotation.state, 'running', 'still running when some values are re-sealed');
          return s.rotation.resealed >= 3 ? true : undefined;
        });
        server.child.kill('SIGKILL');
        assert.equal(await server.exited, 'SIGKILL');
        const keys = keysIn(dataDir);
        assert.equal(keys.length, 2, 'the new key first, the old one still opening values');
        assert.deepEqual(keys[1], oldKey);
        const newKey = keys[0] as Buffer;

        server = await spawnServer(args, env);
        const done = await waitFor('the rotation to finish', async () => {
          const s = (await api(server.url, token, 'GET', 'sys/key-status')).json.data;
          return s.rotation.state === 'done' ? s : undefined;
        });
        assert.equal(done.key_id, new SecretBox(newKey).keyId);
        assert.deepEqual(done.key_ids, [done.key_id], 'the old key is forgotten');
        assert.deepEqual(keysIn(dataDir), [newKey], 'and gone from the key file');
        assert.ok(done.rotation.resealed >= 100, `${done.rotation.resealed} values re-sealed`);

        // Every sealed value opens with the new key alone, none with the old one.
        const sqlDb = openDatabase({ url: kind === 'sqlite' ? `sqlite:${join(dataDir, 'strongroom.db')}` : db.url });
        try {
          const oldBox = new SecretBox(oldKey);
          const newBox = new SecretBox(newKey);
          const seen = new Map<string, number>();
          for (const c of SEALED_COLUMNS) {
            for (const sv of await sealedValues(sqlDb.kysely, c, '', 100_000)) {
              seen.set(c.name, (seen.get(c.name) ?? 0) + 1);
              assert.throws(() => oldBox.open(sv.sealed, sv.context), /which this server does not have/);
              assert.ok(newBox.open(sv.sealed, sv.context).length > 0);
            }
          }
          assert.ok((seen.get('pki_keys.sealed_private_key') ?? 0) >= 121);
          assert.ok((seen.get('data_keys.sealed') ?? 0) >= 2);
          assert.equal(seen.get('tfe_state_versions.upload_token_sealed'), 1);
        } finally {
          await sqlDb.destroy();
        }

        // What the values protect still works: a key signs, the upload URL shows, the state reads back.
        const v2 = (method: string, path: string, body?: unknown) => api(server.url, token, method, path, body);
        const issuer = await v2('POST', 'pki/root/generate/existing', {
          common_name: 'Second Root',
          key_ref: keyIds[7],
        });
        assert.equal(issuer.status, 200, JSON.stringify(issuer.json));
        const shown = await v2('GET', `/api/v2/state-versions/${pending.json.data.id}`);
        assert.match(shown.json.data.attributes['hosted-state-upload-url'], /^http/);
        const cur = await v2('GET', `/api/v2/state-versions/${created.json.data.id}`);
        const dl = await fetch(cur.json.data.attributes['hosted-state-download-url'], {
          headers: { authorization: `Bearer ${token}` },
        });
        assert.ok(Buffer.from(await dl.arrayBuffer()).equals(state));

        // The CLI runs a whole rotation to its end.
        const cli = await runCli(['rotate-master-key', '--address', server.url, '--token', token]);
        assert.equal(cli.code, 0, cli.stderr);
        assert.match(cli.stdout, /Success! Every sealed value is under master key [0-9a-f]{16}/);
        assert.notDeepEqual(keysIn(dataDir)[0], newKey);
        assert.equal(keysIn(dataDir).length, 1);

        // Not for other tokens.
        const child = await v2('POST', 'auth/token/create', { policies: ['default'] });
        const denied = await api(server.url, child.json.auth.client_token, 'PUT', 'sys/rotate');
        assert.equal(denied.status, 403);
        assert.deepEqual(denied.json, { errors: ['permission denied'] });
      } finally {
        await server.stop();
        await db.drop();
      }
    });
  });
}
