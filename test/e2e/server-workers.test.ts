import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, request } from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import { usableCores } from '../../src/shared/usable-cores.js';
import { createDatabaseUrl } from '../support/test-db.js';
import { dbKinds } from '../support/test-db.js';
import { runCli, spawnServer } from '../support/spawn-server.js';
import type { SpawnedServer } from '../support/spawn-server.js';
import { createBody, inlineAttrs, stateFile } from './tfe-state-versions-fixture.js';
import { generateAccountKey, jws } from '../../bench/lib/acme-client.js';

/**
 * `strongroom server --workers 2` (decision 0047): a primary process and two workers on one
 * listen address. Each connection is served by one worker (the primary hands connections
 * out in turn), so a client pinned to one keep-alive connection talks to one worker, and
 * /healthz says which.
 */

/** Waited beyond a bound before checking that it held (timers and scheduling on a loaded machine). */
const MARGIN_MS = 500;
/** The rate-limit quotas' bounds between nodes, which hold between workers too (src/pki/quotas/quota-service.ts). */
const QUOTA_RELOAD_MS = 1000;
const QUOTA_EXCHANGE_MS = 250;

interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
}

/** An HTTP client on one keep-alive connection, so every request reaches the same worker. */
class Pinned {
  readonly agent = new Agent({ keepAlive: true, maxSockets: 1 });
  worker = 0;
  constructor(private readonly base: string) {}

  send(
    method: string,
    path: string,
    opts: { token?: string; body?: unknown; tfe?: boolean; contentType?: string } = {},
  ): Promise<Reply> {
    const u = new URL(path, this.base);
    const body = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    const headers: Record<string, string | number> = {};
    if (opts.token)
      headers[opts.tfe ? 'authorization' : 'x-vault-token'] = opts.tfe ? `Bearer ${opts.token}` : opts.token;
    if (body !== undefined) {
      headers['content-type'] = opts.contentType ?? (opts.tfe ? 'application/vnd.api+json' : 'application/json');
      headers['content-length'] = Buffer.byteLength(body);
    }
    return new Promise((resolve, reject) => {
      const req = request(
        { host: u.hostname, port: u.port, method, path: u.pathname + u.search, headers, agent: this.agent },
        (res) => {
          let text = '';
          res.on('data', (d: Buffer) => (text += d.toString()));
          res.on('end', () => {
            let json: unknown;
            try {
              json = text ? JSON.parse(text) : undefined;
            } catch {
              json = undefined;
            }
            resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
          });
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }

  async whoAmI(): Promise<number> {
    const r = await this.send('GET', '/healthz');
    assert.equal(r.status, 200, r.text);
    this.worker = r.json.worker as number;
    return this.worker;
  }

  close(): void {
    this.agent.destroy();
  }
}

/** One pinned client per worker (new connections go to the workers in turn). */
async function clientsOnEachWorker(url: string, workers: number): Promise<Map<number, Pinned>> {
  const found = new Map<number, Pinned>();
  for (let i = 0; i < 20 * workers && found.size < workers; i++) {
    const c = new Pinned(url);
    const w = await c.whoAmI();
    if (found.has(w)) c.close();
    else found.set(w, c);
  }
  assert.equal(found.size, workers, 'every worker answers connections');
  return found;
}

function initialToken(output: string): string {
  const m = /^\s+(sr\.[A-Za-z0-9]+)\s*$/m.exec(output);
  assert.ok(m, `no initial admin token in:\n${output}`);
  return m[1] as string;
}

/** The pid of each worker as the primary last reported it serving. */
function workerPids(output: string): Map<number, number> {
  const pids = new Map<number, number>();
  for (const line of output.split('\n')) {
    if (!line.includes('"worker serving"')) continue;
    const e = JSON.parse(line) as { worker: number; workerPid: number };
    pids.set(e.worker, e.workerPid);
  }
  return pids;
}

async function until(what: string, check: () => boolean | Promise<boolean>, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) assert.fail(`gave up waiting: ${what}`);
    await sleep(50);
  }
}

for (const kind of dbKinds()) {
  describe(`several worker processes on one address [${kind}]`, () => {
    let server: SpawnedServer;
    let drop: () => Promise<void>;
    let root: string;
    let clients: Map<number, Pinned>;
    let a: Pinned;
    let b: Pinned;

    before(async () => {
      const db = await createDatabaseUrl(kind);
      drop = db.drop;
      const dbArgs = kind === 'postgres' ? ['--database-url', db.url] : [];
      server = await spawnServer([
        '--data-dir',
        join(db.dir, 'data'),
        '--workers',
        '2',
        '--shutdown-timeout',
        '10s',
        ...dbArgs,
      ]);
      root = initialToken(server.output());
      clients = await clientsOnEachWorker(server.url, 2);
      a = clients.get(1)!;
      b = clients.get(2)!;
    });
    after(async () => {
      for (const c of clients?.values() ?? []) c.close();
      await server?.stop('SIGKILL');
      await drop?.();
    });

    it('prepares once: one initial admin token, printed once, valid on every worker', async () => {
      const out = server.output();
      assert.match(out, /Worker processes: 2/);
      assert.equal(out.split(root).length - 1, 1, 'printed exactly once');
      assert.equal(out.match(/Initial admin token/g)?.length, 1);
      assert.equal(
        out.match(/"applied database migrations"/g)?.length ?? 0,
        1,
        'migrations applied by the primary alone',
      );
      for (const c of [a, b]) {
        const r = await c.send('GET', '/v1/auth/token/lookup-self', { token: root });
        assert.equal(r.status, 200, r.text);
        assert.deepEqual(r.json.data.policies, ['root']);
      }
    });

    it("shares the server's upload bound out among the workers", async () => {
      for (const c of [a, b]) {
        const r = await c.send('GET', '/readyz');
        assert.equal(r.status, 200, r.text);
        assert.equal(r.json.storage.max_concurrent_uploads, 16, 'the default 32, half each');
      }
    });

    it('takes an ACME nonce handed out by one worker on the other', async () => {
      const mount = 'acme-workers';
      const v = { token: root };
      const setup: [string, unknown][] = [
        [`/v1/sys/mounts/${mount}`, { type: 'pki' }],
        [`/v1/${mount}/root/generate/internal`, { common_name: 'Workers Root', key_type: 'ec' }],
        [`/v1/${mount}/config/cluster`, { path: `${server.url}/v1/${mount}` }],
        [`/v1/${mount}/roles/web`, { allowed_domains: 'acme.test', allow_subdomains: true }],
        [`/v1/${mount}/config/acme`, { enabled: true }],
      ];
      for (const [path, body] of setup) {
        const r = await a.send('POST', path, { ...v, body });
        assert.ok(r.status === 200 || r.status === 204, `${path}: ${r.text}`);
      }
      const newAccount = `${server.url}/v1/${mount}/acme/new-account`;
      for (let i = 0; i < 4; i++) {
        // Each nonce comes from one worker and is spent on the other.
        const [giver, taker] = i % 2 ? [a, b] : [b, a];
        const n = await giver.send('HEAD', `/v1/${mount}/acme/new-nonce`);
        const nonce = n.headers['replay-nonce'] as string;
        assert.ok(nonce, `a nonce from worker ${giver.worker}`);
        const key = generateAccountKey();
        const body = jws(key, { nonce, url: newAccount, jwk: key.jwk }, { termsOfServiceAgreed: true });
        const r = await taker.send('POST', `/v1/${mount}/acme/new-account`, {
          body,
          contentType: 'application/jose+json',
        });
        assert.equal(r.status, 201, `worker ${taker.worker}: ${r.text}`);
        // Spent once, on any worker.
        const again = await giver.send('POST', `/v1/${mount}/acme/new-account`, {
          body: jws(key, { nonce, url: newAccount, jwk: key.jwk }, { termsOfServiceAgreed: true }),
          contentType: 'application/jose+json',
        });
        assert.equal(again.status, 400, again.text);
        assert.match(again.text, /badNonce/);
      }
    });

    it('shows through one worker at once the current state version written through the other', async () => {
      const org = `org-${randomUUID().slice(0, 8)}`;
      const tfe = { token: root, tfe: true };
      let r = await a.send('POST', '/api/v2/organizations', {
        ...tfe,
        body: { data: { type: 'organizations', attributes: { name: org, email: `${org}@example.com` } } },
      });
      assert.equal(r.status, 201, r.text);
      r = await b.send('POST', `/api/v2/organizations/${org}/workspaces`, {
        ...tfe,
        body: { data: { type: 'workspaces', attributes: { name: 'ws' } } },
      });
      assert.equal(r.status, 201, r.text);
      const wsId = r.json.data.id as string;
      r = await a.send('POST', `/api/v2/workspaces/${wsId}/actions/lock`, { ...tfe, body: { reason: 'test' } });
      assert.equal(r.status, 200, r.text);
      const lineage = randomUUID();
      for (let serial = 1; serial <= 6; serial++) {
        // Written through one worker, read through the other at once (and twice, as a cache would answer).
        const [writer, reader] = serial % 2 ? [a, b] : [b, a];
        const bytes = stateFile(serial, lineage);
        r = await writer.send('POST', `/api/v2/workspaces/${wsId}/state-versions`, {
          ...tfe,
          body: createBody(inlineAttrs(bytes, serial, lineage)),
        });
        assert.equal(r.status, 201, r.text);
        const id = r.json.data.id as string;
        for (let i = 0; i < 2; i++) {
          const c = await reader.send('GET', `/api/v2/workspaces/${wsId}/current-state-version`, tfe);
          assert.equal(c.status, 200, c.text);
          assert.equal(c.json.data.id, id, `serial ${serial}, read ${i + 1} through worker ${reader.worker}`);
          assert.equal(c.json.data.attributes.serial, serial);
        }
      }
    });

    it('sees issuers, roles, policies and token revocations changed on one worker on another at once', async () => {
      const v = (c: Pinned, method: string, path: string, body?: unknown, token = root) =>
        c.send(method, `/v1/${path}`, { token, body });
      assert.equal((await v(a, 'POST', 'sys/mounts/pki', { type: 'pki' })).status, 204);
      let r = await v(a, 'POST', 'pki/root/generate/internal', { common_name: 'Workers Root 1', key_type: 'ec' });
      assert.equal(r.status, 200, r.text);
      const firstIssuer = (r.json.data.certificate as string).trim();
      const role = { allow_subdomains: true, ttl: '1h', key_type: 'ec', key_bits: 256 };
      r = await v(a, 'POST', 'pki/roles/web', { ...role, allowed_domains: 'example.com' });
      assert.equal(r.status, 200, r.text);
      r = await v(a, 'POST', 'sys/policies/acl/issuer', {
        policy: 'path "pki/issue/web" { capabilities = ["update"] }',
      });
      assert.equal(r.status, 204, r.text);
      r = await v(a, 'POST', 'auth/token/create', { policies: ['issuer'], ttl: '1h' });
      assert.equal(r.status, 200, r.text);
      const token = r.json.auth.client_token as string;

      // Worker B issues under what A made; its caches now hold the role, the issuer, the policy and the token.
      // Every change below is read through B with no wait (decision 0056): A answers once B took it.
      const issue = (token2 = token) => v(b, 'POST', 'pki/issue/web', { common_name: 'a.example.com' }, token2);
      r = await issue();
      assert.equal(r.status, 200, r.text);
      assert.equal((r.json.data.issuing_ca as string).trim(), firstIssuer);

      // A new default issuer and a changed role, through A.
      r = await v(a, 'POST', 'pki/root/generate/internal', { common_name: 'Workers Root 2', key_type: 'ec' });
      assert.equal(r.status, 200, r.text);
      const secondIssuer = (r.json.data.certificate as string).trim();
      r = await v(a, 'POST', 'pki/config/issuers', { default: r.json.data.issuer_id });
      assert.equal(r.status, 200, r.text);
      r = await v(a, 'POST', 'pki/roles/web', { ...role, allowed_domains: 'example.org' });
      assert.equal(r.status, 200, r.text);
      r = await v(b, 'POST', 'pki/issue/web', { common_name: 'a.example.org' }, token);
      assert.equal(r.status, 200, r.text);
      assert.equal((r.json.data.issuing_ca as string).trim(), secondIssuer, 'the new default issuer signs');
      r = await issue();
      assert.equal(r.status, 400, 'the old domain is no longer allowed by the role');

      // The policy taken away through A.
      r = await v(a, 'POST', 'sys/policies/acl/issuer', { policy: 'path "pki/issue/web" { capabilities = ["deny"] }' });
      assert.equal(r.status, 204, r.text);
      r = await v(b, 'POST', 'pki/issue/web', { common_name: 'a.example.org' }, token);
      assert.equal(r.status, 403, r.text);
      assert.equal(r.json.errors[0], 'permission denied');

      // A token revoked through A.
      r = await v(b, 'GET', 'auth/token/lookup-self', undefined, token);
      assert.equal(r.status, 200, r.text);
      r = await v(a, 'POST', 'auth/token/revoke', { token });
      assert.equal(r.status, 204, r.text);
      r = await v(b, 'GET', 'auth/token/lookup-self', undefined, token);
      assert.equal(r.status, 403, r.text);
    });

    it('refuses on one worker at once a state-service token deleted through the other', async () => {
      const tfe = { token: root, tfe: true };
      let r = await a.send('GET', '/api/v2/account/details', tfe);
      assert.equal(r.status, 200, r.text);
      const userId = r.json.data.id as string;
      r = await a.send('POST', `/api/v2/users/${userId}/authentication-tokens`, {
        ...tfe,
        body: { data: { type: 'authentication-tokens', attributes: { description: 'workers' } } },
      });
      assert.equal(r.status, 201, r.text);
      const tokenId = r.json.data.id as string;
      const userToken = { token: r.json.data.attributes.token as string, tfe: true };
      // B now remembers the token's actor.
      for (let i = 0; i < 2; i++) assert.equal((await b.send('GET', '/api/v2/account/details', userToken)).status, 200);
      r = await a.send('DELETE', `/api/v2/authentication-tokens/${tokenId}`, tfe);
      assert.equal(r.status, 204, r.text);
      r = await b.send('GET', '/api/v2/account/details', userToken);
      assert.equal(r.status, 401, r.text);
    });

    it('seals with the new master key on every worker once a rotation through one is answered', async () => {
      const v = (c: Pinned, method: string, path: string, body?: unknown) =>
        c.send(method, `/v1/${path}`, { token: root, body });
      const before = (await v(b, 'GET', 'sys/key-status')).json.data.key_id as string;
      let r = await v(a, 'PUT', 'sys/rotate');
      assert.equal(r.status, 204, r.text);
      const onA = (await v(a, 'GET', 'sys/key-status')).json.data;
      const onB = (await v(b, 'GET', 'sys/key-status')).json.data;
      assert.notEqual(onA.key_id, before);
      assert.equal(onB.key_id, onA.key_id, 'the other worker took the new key at once');
      assert.ok((onB.key_ids as string[]).includes(before), 'and still opens what the old one sealed');
      // A key sealed through A under the new master key is opened through B.
      assert.equal((await v(a, 'POST', 'sys/mounts/pki-rotated', { type: 'pki' })).status, 204);
      r = await v(a, 'POST', 'pki-rotated/root/generate/internal', { common_name: 'Rotated Root', key_type: 'ec' });
      assert.equal(r.status, 200, r.text);
      r = await v(b, 'POST', 'pki-rotated/roles/any', {
        allow_any_name: true,
        ttl: '1h',
        key_type: 'ec',
        key_bits: 256,
      });
      assert.equal(r.status, 200, r.text);
      r = await v(b, 'POST', 'pki-rotated/issue/any', { common_name: 'after.example.com' });
      assert.equal(r.status, 200, r.text);
      await until('the rotation to finish', async () => {
        const s = (await v(b, 'GET', 'sys/key-status')).json.data;
        return s.rotation?.state === 'done';
      });
    });

    it('loses no acknowledged write when a worker is killed mid-load, serves on, and restarts it', async () => {
      const before = workerPids(server.output());
      const victim = before.get(1)!;
      // Certificates go through the writer thread's group commit, state versions through the
      // event-loop commit with its WAL fsync after it (decisions 0010 and 0016): both paths are under load.
      const tfe = { token: root, tfe: true };
      const setup = new Pinned(server.url);
      const org = `load-${randomUUID().slice(0, 8)}`;
      let r = await setup.send('POST', '/api/v2/organizations', {
        ...tfe,
        body: { data: { type: 'organizations', attributes: { name: org, email: `${org}@example.com` } } },
      });
      assert.equal(r.status, 201, r.text);
      const workspaces: string[] = [];
      for (let i = 0; i < 2; i++) {
        r = await setup.send('POST', `/api/v2/organizations/${org}/workspaces`, {
          ...tfe,
          body: { data: { type: 'workspaces', attributes: { name: `ws-${i}` } } },
        });
        assert.equal(r.status, 201, r.text);
        workspaces.push(r.json.data.id as string);
        const locked = await setup.send('POST', `/api/v2/workspaces/${r.json.data.id}/actions/lock`, {
          ...tfe,
          body: {},
        });
        assert.equal(locked.status, 200, locked.text);
      }
      setup.close();
      const acknowledged: string[] = [];
      const versions: string[] = [];
      const refused: string[] = [];
      let stop = false;
      // Four clients issue certificates and two create state versions, each request on a fresh
      // connection (spread over both workers), until told to stop.
      const issuing = Array.from({ length: 4 }, async (_, i) => {
        for (let n = 0; !stop; n++) {
          const c = new Pinned(server.url);
          try {
            const res = await c.send('POST', '/v1/pki/issue/web', {
              token: root,
              body: { common_name: `load-${i}-${n}.example.org` },
            });
            if (res.status === 200) acknowledged.push(res.json.data.serial_number as string);
            else refused.push(`${res.status}: ${res.text}`);
          } catch {
            // The killed worker's connections break; such a request was never acknowledged.
          } finally {
            c.close();
          }
        }
      });
      const writing = workspaces.map(async (wsId) => {
        const lineage = randomUUID();
        for (let serial = 1; !stop; serial++) {
          const c = new Pinned(server.url);
          try {
            const bytes = stateFile(serial, lineage);
            const res = await c.send('POST', `/api/v2/workspaces/${wsId}/state-versions`, {
              ...tfe,
              body: createBody(inlineAttrs(bytes, serial, lineage)),
            });
            if (res.status === 201) versions.push(res.json.data.id as string);
            else refused.push(`${res.status}: ${res.text}`);
          } catch {
            // As above: not acknowledged. The next serial is higher, whether or not this one was stored.
          } finally {
            c.close();
          }
        }
      });
      const load = [...issuing, ...writing];
      const noRefusal = () => assert.deepEqual(refused, [], 'every request answered was a success');
      try {
        await until(
          'some writes acknowledged',
          () => (noRefusal(), acknowledged.length >= 20 && versions.length >= 10),
        );
        process.kill(victim, 'SIGKILL');
        const atKill = [acknowledged.length, versions.length] as const;
        await until(
          'writes acknowledged after the kill',
          () => (noRefusal(), acknowledged.length >= atKill[0] + 40 && versions.length >= atKill[1] + 20),
        );
        await until('worker 1 restarted', () => {
          const pid = workerPids(server.output()).get(1);
          return pid !== undefined && pid !== victim;
        });
      } finally {
        stop = true;
        await Promise.all(load);
      }
      noRefusal();
      assert.match(server.output(), /"worker died; starting it again/);

      // Every acknowledged certificate is stored, read back through both workers; both workers serve.
      const fresh = await clientsOnEachWorker(server.url, 2);
      try {
        for (const [w, c] of fresh) {
          for (const serial of acknowledged) {
            const got = await c.send('GET', `/v1/pki/cert/${serial}`);
            assert.equal(got.status, 200, `certificate ${serial} through worker ${w}: ${got.text}`);
          }
          for (const id of versions) {
            const got = await c.send('GET', `/api/v2/state-versions/${id}`, tfe);
            assert.equal(got.status, 200, `state version ${id} through worker ${w}: ${got.text}`);
          }
        }
      } finally {
        for (const c of fresh.values()) c.close();
      }
    });

    it('holds one rate-limit quota across the workers', async () => {
      const [qa, qb] = [...(await clientsOnEachWorker(server.url, 2)).values()];
      try {
        const v = (c: Pinned, method: string, path: string, body?: unknown) =>
          c.send(method, `/v1/${path}`, { token: root, body });
        let r = await v(qa!, 'POST', 'sys/quotas/rate-limit/shared', { path: 'pki', rate: 5, interval: '1h' });
        assert.equal(r.status, 204, r.text);
        // Quotas written through one worker are read again by the others every second (as by nodes).
        await sleep(QUOTA_RELOAD_MS + MARGIN_MS);
        for (let i = 0; i < 5; i++) {
          r = await v(qa!, 'GET', 'pki/roles?list=true');
          assert.equal(r.status, 200, `request ${i + 1}: ${r.text}`);
        }
        r = await v(qa!, 'GET', 'pki/roles?list=true');
        assert.equal(r.status, 429, r.text);
        // Once the first worker has added its five to the shared count (every 250 ms), the other admits none.
        await sleep(QUOTA_EXCHANGE_MS * 2 + MARGIN_MS);
        r = await v(qb!, 'GET', 'pki/roles?list=true');
        assert.equal(r.status, 429, r.text);
        assert.equal((await v(qa!, 'DELETE', 'sys/quotas/rate-limit/shared')).status, 204);
        await sleep(QUOTA_RELOAD_MS + MARGIN_MS);
        assert.equal((await v(qb!, 'GET', 'pki/roles?list=true')).status, 200, 'the quota is gone on both');
      } finally {
        qa?.close();
        qb?.close();
      }
    });

    it('answers /metrics for every worker: counters added up, figures of the shared storage once', async () => {
      const [qa, qb] = [...(await clientsOnEachWorker(server.url, 2)).values()];
      try {
        const series = 'strongroom_http_requests_total{method="GET",route="unmatched",status="404"}';
        const scrape = async () => {
          const r = await qa!.send('GET', '/metrics');
          assert.equal(r.status, 200, r.text);
          const value = (name: string) => {
            const line = r.text.split('\n').find((l) => l.startsWith(`${name} `));
            return line === undefined ? 0 : Number(line.slice(name.length + 1));
          };
          return { unmatched: value(series), floor: value('strongroom_data_dir_min_free_bytes') };
        };
        const before = await scrape();
        // Requests answered by the other worker only.
        for (let i = 0; i < 5; i++) assert.equal((await qb!.send('GET', '/no-such-path')).status, 404);
        const after = await scrape();
        assert.equal(after.unmatched, before.unmatched + 5, "the other worker's requests are counted");
        const ready = await qa!.send('GET', '/readyz');
        assert.equal(
          after.floor,
          ready.json.storage.min_free_bytes,
          'a figure of the data directory, not one per worker',
        );
      } finally {
        qa?.close();
        qb?.close();
      }
    });

    it('passes SIGHUP on to every worker', async () => {
      const count = () => server.output().match(/"SIGHUP: reopened the audit device files"/g)?.length ?? 0;
      const seen = count();
      server.child.kill('SIGHUP');
      await until('both workers reopened their audit files', () => count() === seen + 2);
      assert.equal((await fetch(`${server.url}/healthz`)).status, 200, 'the primary still serves through its workers');
    });

    it('drains every worker on SIGTERM: requests in flight are answered, then everything exits 0', async () => {
      // A request in flight on each worker: the body is sent in two parts, the second after the signal.
      const pinned = await clientsOnEachWorker(server.url, 2);
      const inFlight = [...pinned.values()].map((c) => {
        const body = JSON.stringify({ common_name: `drain-${c.worker}.example.org` });
        return new Promise<number>((resolve, reject) => {
          const u = new URL('/v1/pki/issue/web', server.url);
          const req = request(
            {
              host: u.hostname,
              port: u.port,
              method: 'POST',
              path: u.pathname,
              agent: c.agent,
              headers: {
                'x-vault-token': root,
                'content-type': 'application/json',
                'content-length': Buffer.byteLength(body),
              },
            },
            (res) => {
              res.resume();
              res.on('end', () => resolve(res.statusCode ?? 0));
            },
          );
          req.on('error', reject);
          req.write(body.slice(0, 5));
          setTimeout(() => req.end(body.slice(5)), 700);
        });
      });
      await sleep(200);
      server.child.kill('SIGTERM');
      assert.deepEqual(await Promise.all(inFlight), [200, 200]);
      for (const c of pinned.values()) c.close();
      assert.equal(await server.exited, 0);
      const out = server.output();
      assert.equal(out.match(/"asked by the primary"/g)?.length, 2, 'both workers were asked to drain');
      assert.equal(out.match(/"msg":"stopped"/g)?.length, 3, 'both workers and the primary stopped');
    });
  });
}

describe('the workers setting', () => {
  it('refuses 0 and more workers than cores, naming the cores', async () => {
    const cores = usableCores();
    for (const n of ['0', String(cores + 1), 'two']) {
      const r = await runCli(['server', '--dev', '--workers', n]);
      assert.equal(r.code, 1, r.stderr);
      assert.match(
        r.stderr,
        new RegExp(
          `workers: expected auto or an integer from 1 to ${cores} \\(the cores this process may use\\), got "${n}"`,
        ),
      );
    }
  });

  it('stops the whole group with exit 1 when a worker cannot start, printing its reason and no token', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as AddressInfo).port;
    const db = await createDatabaseUrl('sqlite');
    try {
      const r = await runCli([
        'server',
        '--workers',
        '2',
        '--listen',
        `127.0.0.1:${port}`,
        '--data-dir',
        join(db.dir, 'd'),
      ]);
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, new RegExp(`cannot listen on 127\\.0\\.0\\.1:${port}: the address is already in use`));
      assert.match(r.stderr, /error: worker \d stopped before serving/);
      assert.doesNotMatch(r.stdout + r.stderr, /sr\.[1-9A-Za-z]{40}/, 'no token made on a start that failed');
    } finally {
      await new Promise<void>((resolve) => blocker.close(() => resolve()));
      await db.drop();
    }
  });

  it('starts one worker per core the process may use when the setting is left out', async () => {
    const s = await spawnServer(['--dev'], { STRONGROOM_WORKERS: undefined });
    try {
      const cores = usableCores();
      const health = (await (await fetch(`${s.url}/healthz`)).json()) as { worker?: number };
      if (cores === 1) assert.equal(health.worker, undefined, 'one core: one process, no primary');
      else {
        assert.ok(health.worker !== undefined && health.worker >= 1 && health.worker <= cores, JSON.stringify(health));
        assert.equal(workerPids(s.output()).size, cores, s.output());
      }
    } finally {
      await s.stop();
    }
  });

  it('serves from one process without a primary with --workers 1', async () => {
    const s = await spawnServer(['--dev', '--workers', '1']);
    try {
      const r = await fetch(`${s.url}/healthz`);
      assert.deepEqual(await r.json(), { status: 'ok' });
      assert.doesNotMatch(s.output(), /Worker processes/);
    } finally {
      await s.stop();
    }
  });
});
