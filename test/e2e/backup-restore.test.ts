import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate, createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createDatabaseUrl, dbKinds } from '../support/test-db.js';
import { startTestServer } from '../support/test-server.js';
import type { TestServer } from '../support/test-server.js';
import { runCli } from '../support/spawn-server.js';
import { call, createInline, download, workspace } from './tfe-state-versions-fixture.js';
import type { WorkspaceFixture } from './tfe-state-versions-fixture.js';
import { makeServerClient, mountWithRoot, role } from './pki-issue-helpers.js';
import type { Vault } from './pki-issue-helpers.js';

/**
 * Online backup and restore. A writer creates state versions (inline and in the blob store)
 * and issues certificates while `strongroom backup` runs; the backup is restored onto fresh
 * storage and served: every record acknowledged before the backup began is there and
 * identical, every record begun after it ended is absent, and those in between are whole
 * or absent. Damaged, truncated and misdirected restores are refused and change nothing.
 */

const MASTER_KEY = randomBytes(32).toString('base64');

interface Rec {
  kind: 'state' | 'cert';
  id: string;
  started: number;
  acked: number;
  md5?: string;
  pem?: string;
}

function storageArgs(s: { databaseUrl: string; dataDir: string }): string[] {
  return ['--data-dir', s.dataDir, '--database-url', s.databaseUrl];
}

for (const kind of dbKinds()) {
  describe(`backup and restore [${kind}]`, () => {
    let srv: TestServer;
    let v: Vault;
    let mount: string;
    let rootPem: string;
    let f: WorkspaceFixture;
    let serial = 0;
    let backupFile: string;
    const records: Rec[] = [];
    const cleanups: (() => Promise<void>)[] = [];

    before(async () => {
      // Inline up to 2 KB: the writer's small states stay in the database, its large ones go to the blob store.
      srv = await startTestServer(kind, { config: { masterKey: MASTER_KEY, stateInlineMaxSize: 2048 } });
      v = makeServerClient(srv);
      ({ mount, rootPem } = await mountWithRoot(v));
      await role(v, mount, 'any', { allow_any_name: true, ttl: '1h' });
      f = await workspace(srv);
      backupFile = join(srv.config.dataDir, '..', `backup-${kind}.tar`);
    });
    after(async () => {
      for (const c of cleanups) await c();
      await srv.close();
    });

    async function writeOne(): Promise<void> {
      const started = Date.now();
      if (records.length % 2 === 0) {
        const n = ++serial;
        // Every third state is large enough for the blob store.
        const extra = n % 3 === 0 ? `"pad":"${randomBytes(6000).toString('hex')}",` : '';
        const { data, bytes } = await createInline(srv, f, n, { extra });
        records.push({
          kind: 'state',
          id: data.id,
          started,
          acked: Date.now(),
          md5: createHash('md5').update(bytes).digest('hex'),
        });
      } else {
        const r = await v('POST', `${mount}/issue/any`, { body: { common_name: `n${records.length}.example.com` } });
        assert.equal(r.status, 200, r.text);
        records.push({
          kind: 'cert',
          id: r.json.data.serial_number,
          started,
          acked: Date.now(),
          pem: r.json.data.certificate,
        });
      }
    }

    it('takes a backup while a writer runs, and a restore serves exactly what was acknowledged before it', async () => {
      // One state of 3 MB: several blob chunks on PostgreSQL, and rows larger than a part of the export.
      const bigSerial = ++serial;
      const big = await createInline(srv, f, bigSerial, {
        extra: `"pad":"${randomBytes(1536 * 1024).toString('hex')}",`,
      });
      records.push({
        kind: 'state',
        id: big.data.id,
        started: 0,
        acked: 0,
        md5: createHash('md5').update(big.bytes).digest('hex'),
      });
      for (let i = 0; i < 12; i++) await writeOne();
      const token = await v('POST', 'auth/token/create', { body: { policies: ['default'], ttl: '1h' } });
      assert.equal(token.status, 200, token.text);
      const clientToken = token.json.auth.client_token as string;

      let writing = true;
      let endedAt = Infinity;
      const writer = (async () => {
        while (writing) {
          await writeOne();
          if (records.filter((r) => r.started > endedAt).length >= 4) writing = false;
        }
      })();
      await new Promise((r) => setTimeout(r, 50));
      const startedAt = Date.now();
      const made = await runCli(['backup', '--out', backupFile, ...storageArgs(srv.config)]);
      endedAt = Date.now();
      await writer;
      assert.equal(made.code, 0, made.stderr);
      assert.match(made.stdout, /does not include the master key/);
      assert.equal(statSync(backupFile).mode & 0o777, 0o600);
      assert.ok(!readFileSync(backupFile).includes(Buffer.from(MASTER_KEY)), 'no master key in the backup');
      assert.ok(
        !existsSync(join(srv.config.dataDir, 'backups')) ||
          readdirSync(join(srv.config.dataDir, 'backups')).length === 0,
        'no staging left',
      );

      const before = records.filter((r) => r.acked < startedAt);
      const afterEnd = records.filter((r) => r.started > endedAt);
      assert.ok(before.length >= 12 && afterEnd.length >= 4, `${before.length} before, ${afterEnd.length} after`);

      const target = await createDatabaseUrl(kind);
      const dataDir = join(target.dir, 'restored');
      const restoredUrl = kind === 'sqlite' ? `sqlite:${join(dataDir, 'strongroom.db')}` : target.url;
      const restored = await runCli([
        'restore',
        '--from',
        backupFile,
        ...storageArgs({ dataDir, databaseUrl: restoredUrl }),
      ]);
      assert.equal(restored.code, 0, restored.stderr);
      assert.match(restored.stdout, /restored/);
      const copy = await startTestServer(kind, {
        existing: { databaseUrl: restoredUrl, dataDir },
        config: { masterKey: MASTER_KEY },
      });
      cleanups.push(async () => {
        await copy.close();
        await target.drop();
      });
      const cv = makeServerClient(copy);

      let between = 0;
      for (const r of records) {
        const isBefore = r.acked < startedAt;
        const isAfter = r.started > endedAt;
        if (r.kind === 'state') {
          const got = await call(copy, 'GET', `/api/v2/state-versions/${r.id}`);
          if (isAfter) assert.equal(got.status, 404, `${r.id} was created after the backup`);
          if (isBefore) assert.equal(got.status, 200, `${r.id} was acknowledged before the backup`);
          if (got.status !== 200) continue;
          if (!isBefore && !isAfter) between++;
          const body = await download(copy, got.json.data.attributes['hosted-state-download-url'] as string);
          assert.equal(body.status, 200);
          assert.equal(createHash('md5').update(body.body).digest('hex'), r.md5, `content of ${r.id}`);
        } else {
          const got = await cv('GET', `${mount}/cert/${r.id}`);
          if (isAfter) assert.equal(got.status, 404, `${r.id} was issued after the backup`);
          if (isBefore) assert.equal(got.status, 200, `${r.id} was issued before the backup`);
          if (got.status !== 200) continue;
          assert.equal(got.json.data.certificate.trim(), (r.pem as string).trim(), `certificate ${r.id}`);
        }
      }
      void between;
      // The restored CA key still signs, under the same root.
      const issued = await cv('POST', `${mount}/issue/any`, { body: { common_name: 'after-restore.example.com' } });
      assert.equal(issued.status, 200, issued.text);
      const leaf = new X509Certificate(issued.json.data.certificate as string);
      assert.ok(leaf.verify(new X509Certificate(rootPem).publicKey), 'signed by the restored root key');
      // Tokens made before the backup still authenticate.
      const self = await cv('GET', 'auth/token/lookup-self', { token: clientToken });
      assert.equal(self.status, 200, self.text);
      if (kind === 'sqlite') {
        for (const p of [dataDir, join(dataDir, 'strongroom.db'), join(dataDir, 'blobs')])
          assert.equal(statSync(p).mode & 0o077, 0, `${p} is private`);
      }
    });

    it('streams the same archive from GET /v1/sys/storage/raft/snapshot, to root or sudo only', async () => {
      const denied = await v('POST', 'auth/token/create', { body: { policies: ['default'], ttl: '1h' } });
      const r = await fetch(`${srv.url}/v1/sys/storage/raft/snapshot`, {
        headers: { 'x-vault-token': denied.json.auth.client_token as string },
      });
      assert.equal(r.status, 403);
      assert.deepEqual(await r.json(), { errors: ['permission denied'] });

      // `read` alone is not enough; `sudo` on the path is.
      for (const [name, caps, status] of [
        ['snapshot-read', '["read"]', 403],
        ['snapshot-sudo', '["read", "sudo"]', 200],
      ] as const) {
        const p = await v('PUT', `sys/policies/acl/${name}`, {
          body: { policy: `path "sys/storage/raft/snapshot" { capabilities = ${caps} }` },
        });
        assert.equal(p.status, 204, p.text);
        const t = await v('POST', 'auth/token/create', { body: { policies: [name], ttl: '1h' } });
        const got = await fetch(`${srv.url}/v1/sys/storage/raft/snapshot`, {
          headers: { 'x-vault-token': t.json.auth.client_token as string },
        });
        assert.equal(got.status, status, name);
        await got.arrayBuffer();
      }
      const ok = await fetch(`${srv.url}/v1/sys/storage/raft/snapshot`, {
        headers: { 'x-vault-token': srv.rootToken },
      });
      assert.equal(ok.status, 200);
      assert.equal(ok.headers.get('content-type'), 'application/octet-stream');
      assert.match(ok.headers.get('content-disposition') ?? '', /attachment; filename="strongroom-\d{8}T\d{6}Z\.tar"/);
      const file = join(srv.config.dataDir, '..', `api-${kind}.tar`);
      writeFileSync(file, Buffer.from(await ok.arrayBuffer()));
      const target = await createDatabaseUrl(kind);
      cleanups.push(target.drop);
      const dataDir = join(target.dir, 'from-api');
      const url = kind === 'sqlite' ? `sqlite:${join(dataDir, 'strongroom.db')}` : target.url;
      const restored = await runCli(['restore', '--from', file, ...storageArgs({ dataDir, databaseUrl: url })]);
      assert.equal(restored.code, 0, restored.stderr);
    });

    it('refuses a truncated or damaged backup, and a target that is not empty, changing nothing', async () => {
      const whole = readFileSync(backupFile);
      const target = await createDatabaseUrl(kind);
      cleanups.push(target.drop);
      const dataDir = join(target.dir, 'target');
      const url = kind === 'sqlite' ? `sqlite:${join(dataDir, 'strongroom.db')}` : target.url;
      const args = storageArgs({ dataDir, databaseUrl: url });
      const untouched = async () => {
        assert.ok(!existsSync(dataDir), 'no data directory was made');
        if (kind === 'postgres') {
          const pg = (await import('pg')).default;
          const c = new pg.Client({ connectionString: target.url });
          await c.connect();
          const n = await c.query('select count(*)::int as n from pg_tables where schemaname = current_schema()');
          await c.end();
          assert.equal(n.rows[0].n, 0, 'no table was made');
        }
      };

      const truncated = `${backupFile}.truncated`;
      writeFileSync(truncated, whole);
      truncateSync(truncated, Math.floor(whole.length / 2));
      let r = await runCli(['restore', '--from', truncated, ...args]);
      assert.equal(r.code, 1);
      assert.match(r.stderr, /restore refused: .*is truncated/);
      assert.match(r.stderr, /nothing was restored/);
      await untouched();

      const damaged = `${backupFile}.damaged`;
      const bad = Buffer.from(whole);
      bad[2048] = (bad[2048] as number) ^ 0xff; // inside the first entry's bytes
      writeFileSync(damaged, bad);
      r = await runCli(['restore', '--from', damaged, ...args]);
      assert.equal(r.code, 1);
      assert.match(
        r.stderr,
        /restore refused: .*is damaged: the SHA-256 of (sqlite|postgres)\/\S+ does not match its manifest/,
      );
      await untouched();

      // A non-empty target: the server's own storage.
      r = await runCli(['restore', '--from', backupFile, ...storageArgs(srv.config)]);
      assert.equal(r.code, 1);
      assert.match(
        r.stderr,
        kind === 'sqlite'
          ? /restore refused: the data directory \S+ is not empty/
          : /restore refused: the database is not empty: it holds \d+ tables/,
      );
      if (kind === 'sqlite') {
        mkdirSync(dataDir);
        writeFileSync(join(dataDir, 'notes.txt'), 'mine');
        r = await runCli(['restore', '--from', backupFile, ...args]);
        assert.match(r.stderr, /is not empty \(it holds notes\.txt\)/);
        assert.deepEqual(readdirSync(dataDir), ['notes.txt']);
      }
      // The server is undisturbed.
      assert.equal((await call(srv, 'GET', `/api/v2/workspaces/${f.wsId}/current-state-version`)).status, 200);
    });
  });
}
