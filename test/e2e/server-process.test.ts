import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { X509Certificate } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dbKinds, createDatabaseUrl } from '../support/test-db.js';
import { CLI, runCli, spawnServer } from '../support/spawn-server.js';
import type { SpawnedServer } from '../support/spawn-server.js';
import { until } from '../support/wait.js';

const TOKEN_LINE = /^\s+(sr\.[1-9A-Za-z]{40})$/m;
const SCHED_OTHER = 0;
const SCHED_BATCH = 3;

/** Thread id → scheduling policy (field 41 of /proc/<pid>/task/<tid>/stat), for every thread of a process. */
function threadPolicies(pid: number): Map<number, number> {
  const out = new Map<number, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // the thread ended meanwhile
    }
    // Fields after the command name (which may hold spaces) start at field 3.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    out.set(Number(tid), Number(fields[41 - 3]));
  }
  return out;
}

/** A self-signed P-256 certificate for 127.0.0.1 as DIR/NAME.pem and DIR/NAME.key; returns its SHA-256 fingerprint. */
function makeCert(dir: string, name: string, cn: string): string {
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      join(dir, `${name}.key`),
      '-out',
      join(dir, `${name}.pem`),
      '-days',
      '1',
      '-subj',
      `/CN=${cn}`,
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  return new X509Certificate(readFileSync(join(dir, `${name}.pem`))).fingerprint256;
}

for (const kind of dbKinds()) {
  describe(`the server process [${kind}]`, () => {
    let dataDir: string;
    let dbArgs: string[];
    let drop: () => Promise<void>;
    let server: SpawnedServer;
    let firstToken: string;

    before(async () => {
      const db = await createDatabaseUrl(kind);
      drop = db.drop;
      dataDir = join(db.dir, 'data');
      dbArgs = kind === 'postgres' ? ['--database-url', db.url] : [];
      server = await spawnServer([
        '--data-dir',
        dataDir,
        '--body-limit',
        '4KB',
        '--shutdown-timeout',
        '10s',
        ...dbArgs,
      ]);
    });
    after(async () => {
      await server?.stop('SIGKILL');
      await drop();
    });

    it('creates the data directory, the master key (0600) and an initial admin token, printed once', async () => {
      const m = TOKEN_LINE.exec(server.output());
      assert.ok(m, `no admin token in:\n${server.output()}`);
      firstToken = m[1] as string;
      assert.equal(statSync(join(dataDir, 'master.key')).mode & 0o777, 0o600);
      if (kind === 'sqlite') {
        const dbBytes = readFileSync(join(dataDir, 'strongroom.db'));
        assert.ok(!dbBytes.includes(Buffer.from(firstToken)), 'the token itself is not stored');
      }
      assert.equal(server.output().split(firstToken).length - 1, 1, 'printed exactly once');
    });

    it('answers liveness, readiness and Prometheus metrics', async () => {
      assert.deepEqual(await (await fetch(`${server.url}/healthz`)).json(), { status: 'ok' });
      const ready = await fetch(`${server.url}/readyz`);
      assert.equal(ready.status, 200);
      const readiness = (await ready.json()) as Record<string, unknown>;
      assert.deepEqual(
        { ...readiness, storage: undefined },
        {
          status: 'ok',
          database: 'ok',
          migrations: 'applied',
          storage: undefined,
        },
      );
      assert.equal((readiness.storage as { uploads: string }).uploads, 'accepted');
      const metrics = await (await fetch(`${server.url}/metrics`)).text();
      assert.match(metrics, /strongroom_http_requests_total\{method="GET",route="\/readyz",status="200"\} 1/);
      assert.match(metrics, /strongroom_http_request_duration_seconds_bucket\{/);
      assert.match(metrics, /strongroom_job_queue_depth\{status="queued"\} \d+/);
      assert.match(metrics, /strongroom_jobs_failed_total/);
    });

    it('renders unknown routes, oversized and malformed bodies in each product envelope', async () => {
      const tfe404 = await fetch(`${server.url}/api/v2/no-such-thing`);
      assert.equal(tfe404.status, 404);
      assert.match(tfe404.headers.get('content-type') ?? '', /application\/vnd\.api\+json/);
      assert.deepEqual(await tfe404.json(), {
        errors: [{ status: '404', title: 'not found', detail: 'no route for GET /api/v2/no-such-thing' }],
      });

      const vault404 = await fetch(`${server.url}/v1/no/such/path`, { headers: { 'x-vault-token': firstToken } });
      assert.equal(vault404.status, 404);
      assert.deepEqual(await vault404.json(), {
        errors: ['no handler for route "no/such/path". route entry not found.'],
      });

      const big = JSON.stringify({ data: { type: 'organizations', attributes: { name: 'x'.repeat(5000) } } });
      const tfe413 = await fetch(`${server.url}/api/v2/organizations`, {
        method: 'POST',
        headers: { 'content-type': 'application/vnd.api+json', authorization: `Bearer ${firstToken}` },
        body: big,
      });
      assert.equal(tfe413.status, 413);
      const limitText =
        'request body is larger than the limit of 4096 bytes; raise it with --body-limit ' +
        '(STRONGROOM_BODY_LIMIT, config key body_limit)';
      assert.deepEqual(await tfe413.json(), {
        errors: [{ status: '413', title: 'payload too large', detail: limitText }],
      });

      const vault413 = await fetch(`${server.url}/v1/sys/policies/acl/big`, {
        method: 'POST',
        headers: { 'x-vault-token': firstToken },
        body: JSON.stringify({ policy: 'x'.repeat(5000) }),
      });
      assert.equal(vault413.status, 413);
      assert.deepEqual(await vault413.json(), { errors: [limitText] });

      const tfeBad = await fetch(`${server.url}/api/v2/organizations`, {
        method: 'POST',
        headers: { 'content-type': 'application/vnd.api+json', authorization: `Bearer ${firstToken}` },
        body: '{"data": ',
      });
      assert.equal(tfeBad.status, 400);
      assert.deepEqual(await tfeBad.json(), {
        errors: [
          {
            status: '400',
            title: 'bad request',
            detail:
              'malformed JSON body: sent as application/vnd.api+json, the body breaks at position 9 ' +
              '(line 1, column 10): it ends before the JSON value does',
          },
        ],
      });
      const tfeBadJson = await fetch(`${server.url}/api/v2/organizations`, {
        method: 'POST',
        headers: { 'content-type': 'application/json; charset=utf-8', authorization: `Bearer ${firstToken}` },
        body: '{"data": {"type": "organizations",}}',
      });
      assert.equal(tfeBadJson.status, 400);
      assert.match(
        ((await tfeBadJson.json()) as { errors: Array<{ detail: string }> }).errors[0]!.detail,
        new RegExp(
          String.raw`sent as application\/json; charset=utf-8, the body breaks at position 34 \(line 1, column 35\):` +
            String.raw` unexpected '}'`,
        ),
      );
      for (const [contentType, got] of [
        [undefined, 'none'],
        ['application/x-www-form-urlencoded', '"application/x-www-form-urlencoded" (curl -d sends that'],
      ] as const) {
        const headers: Record<string, string> = { authorization: `Bearer ${firstToken}` };
        const body = new Blob(['{"data":{}}'], contentType ? { type: contentType } : {});
        if (contentType) headers['content-type'] = contentType;
        const r415 = await fetch(`${server.url}/api/v2/organizations`, { method: 'POST', headers, body });
        assert.equal(r415.status, 415);
        assert.match(r415.headers.get('content-type') ?? '', /application\/vnd\.api\+json/);
        const detail = ((await r415.json()) as { errors: Array<{ detail: string }> }).errors[0]!.detail;
        assert.ok(detail.startsWith(`expected Content-Type: application/vnd.api+json, got ${got}`), detail);
      }

      const vaultBad = await fetch(`${server.url}/v1/sys/policies/acl/bad`, {
        method: 'POST',
        headers: { 'x-vault-token': firstToken },
        body: '{"policy": ',
      });
      assert.equal(vaultBad.status, 400);
      const vaultBadBody = (await vaultBad.json()) as { errors: string[] };
      assert.equal(vaultBadBody.errors.length, 1);
      assert.match(vaultBadBody.errors[0] as string, /malformed JSON/);
    });

    it('makes the initial admin token a Vault root token: root policy, no expiry, sudo paths', async () => {
      const call = (method: string, path: string, body?: unknown) =>
        fetch(`${server.url}/v1/${path}`, {
          method,
          headers: { 'x-vault-token': firstToken },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
      const self = (await (await call('GET', 'auth/token/lookup-self')).json()) as {
        data: { policies: string[]; ttl: number; expire_time: unknown };
      };
      assert.deepEqual(self.data.policies, ['root']);
      assert.equal(self.data.ttl, 0);
      assert.equal(self.data.expire_time, null);
      const caps = (await (
        await call('POST', 'sys/capabilities-self', { paths: ['pki-admin-check/root'] })
      ).json()) as { capabilities: string[] };
      assert.deepEqual(caps.capabilities, ['root']);
      assert.equal((await call('POST', 'sys/mounts/pki-admin-check', { type: 'pki' })).status, 204);
      assert.equal(
        (await call('POST', 'pki-admin-check/root/generate/internal', { common_name: 'admin check', key_type: 'ec' }))
          .status,
        200,
      );
      // DELETE root needs sudo, which only a root token has without a policy granting it.
      assert.equal((await call('DELETE', 'pki-admin-check/root')).status, 204);
      assert.equal((await call('DELETE', 'sys/mounts/pki-admin-check')).status, 204);
    });

    it('keeps tokens and request ids out of trouble: ids echoed, credentials never logged', async () => {
      const res = await fetch(`${server.url}/healthz`, {
        headers: { authorization: 'Bearer sekrit-value-123', 'x-vault-token': 'sekrit-value-456' },
      });
      assert.match(res.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
      await new Promise((r) => setTimeout(r, 100));
      assert.ok(!server.output().includes('sekrit-value'), 'credentials appear in the log');
      const lines = server
        .output()
        .split('\n')
        .filter((l) => l.startsWith('{'));
      assert.ok(
        lines.some((l) => (JSON.parse(l) as { reqId?: string }).reqId),
        'structured JSON log lines with request ids',
      );
    });

    it(
      'runs every thread but the event loop under SCHED_BATCH',
      { skip: process.platform !== 'linux' && 'Linux only: SCHED_BATCH is a Linux policy' },
      async () => {
        const policies = threadPolicies(server.child.pid as number);
        assert.equal(policies.get(server.child.pid as number), SCHED_OTHER, 'the event loop keeps the normal policy');
        const others = [...policies].filter(([tid]) => tid !== server.child.pid);
        assert.ok(others.length >= 4, `threads: ${JSON.stringify([...policies])}`);
        assert.deepEqual(
          others.filter(([, p]) => p !== SCHED_BATCH),
          [],
          'threads not under SCHED_BATCH',
        );
        assert.match(server.output(), /background threads run under SCHED_BATCH/);
      },
    );

    it('on SIGTERM finishes the request in flight, then exits 0', async () => {
      const body = JSON.stringify({ data: { type: 'x' } });
      const res = new Promise<{ status: number; body: string }>((resolve, reject) => {
        const u = new URL(`${server.url}/api/v2/slow-request`);
        const req = httpRequest(
          {
            host: u.hostname,
            port: u.port,
            method: 'POST',
            path: u.pathname,
            headers: { 'content-type': 'application/vnd.api+json', 'content-length': Buffer.byteLength(body) },
          },
          (r) => {
            let b = '';
            r.on('data', (d: Buffer) => (b += d.toString()));
            r.on('end', () => resolve({ status: r.statusCode ?? 0, body: b }));
          },
        );
        req.on('error', reject);
        req.write(body.slice(0, 5));
        setTimeout(() => {
          server.child.kill('SIGTERM');
          setTimeout(() => req.end(body.slice(5)), 500);
        }, 200);
      });
      const answer = await res;
      assert.equal(answer.status, 404, 'the request in flight was answered');
      assert.match(answer.body, /no route for POST/);
      assert.equal(await server.exited, 0);
      assert.match(server.output(), /shutting down/);
    });

    it('never prints the token again on the next start', async () => {
      const again = await spawnServer(['--data-dir', dataDir, ...dbArgs]);
      try {
        assert.doesNotMatch(again.output(), TOKEN_LINE);
        assert.ok(!again.output().includes(firstToken));
      } finally {
        assert.equal(await again.stop('SIGINT'), 0);
      }
    });
  });
}

describe('the CLI', () => {
  it('prints help listing every setting', async () => {
    const r = await runCli(['--help']);
    assert.equal(r.code, 0);
    for (const s of [
      'server',
      'migrate',
      '--listen',
      '--data-dir',
      '--database-url',
      '--tls-cert',
      '--tls-key',
      '--body-limit',
      '--log-level',
      '--dev',
      '--dev-root-token',
      'STRONGROOM_MASTER_KEY',
    ]) {
      assert.ok(r.stdout.includes(s), `help lacks ${s}`);
    }
  });

  it("prints each command's own help for <command> --help", async () => {
    const expected: Record<string, RegExp> = {
      server: /^Usage: strongroom server \[settings\][\s\S]*SIGHUP reloads the TLS\s+certificate/,
      migrate: /^Usage: strongroom migrate \[settings\]/,
      tfe: /^Usage: strongroom tfe <command>[\s\S]*state push ORG NAME FILE/,
      token: /^Usage: strongroom token <create\|lookup\|revoke>/,
      policy: /^Usage: strongroom policy <write\|read\|list\|delete>/,
      'policy-service': /^Usage: strongroom policy-service --rules FILE/,
      'admin-token': /^Usage: strongroom admin-token <create\|list\|revoke>/,
      backup: /^Usage: strongroom backup --out FILE/,
      restore: /^Usage: strongroom restore --from FILE/,
      'rotate-master-key': /^Usage: strongroom rotate-master-key/,
    };
    for (const [command, usage] of Object.entries(expected)) {
      for (const flag of ['--help', '-h']) {
        const r = await runCli([command, flag]);
        assert.equal(r.code, 0, `${command} ${flag}: ${r.stderr}`);
        assert.match(r.stdout, usage, `${command} ${flag}`);
      }
    }
    // Every command the main help lists (but help itself) is covered above.
    const listed = /\nCommands:\n([\s\S]*?)\n\n/.exec((await runCli(['--help'])).stdout)![1]!;
    const commands = [...listed.matchAll(/^ {2}([a-z-]+)/gm)].map((m) => m[1]!).filter((c) => c !== 'help');
    assert.deepEqual(commands.sort(), Object.keys(expected).sort());
    const tfeSub = await runCli(['tfe', 'state', 'push', '--help']);
    assert.match(tfeSub.stdout, /^Usage: strongroom tfe/);
  });

  it('names every setting by the config-file key that the config file takes', async () => {
    const help = (await runCli(['server', '--help'])).stdout;
    assert.match(help, /--tls-cert <value> +STRONGROOM_TLS_CERT {2}config key: tls_cert_file/);
    assert.match(help, /--listen <value> +STRONGROOM_LISTEN {2}config key: listen/);
    // The key the help names is the key the file takes.
    const dir = mkdtempSync(join(tmpdir(), 'config-key-'));
    makeCert(dir, 'cert', '127.0.0.1');
    const configFile = join(dir, 'strongroom.json');
    writeFileSync(
      configFile,
      JSON.stringify({ tls_cert_file: join(dir, 'cert.pem'), tls_key_file: join(dir, 'cert.key'), log_level: 'warn' }),
    );
    const s = await spawnServer(['--dev', '--config', configFile]);
    try {
      assert.match(s.url, /^https:/);
    } finally {
      await s.stop();
    }
    writeFileSync(configFile, JSON.stringify({ tls_cert: 'x' }));
    const bad = await runCli(['server', '--dev', '--config', configFile]);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /unknown setting "tls_cert"/);
  });

  it('reports bad settings together and exits 1', async () => {
    const r = await runCli(['server', '--listen', 'nowhere', '--log-level', 'chatty']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /listen: expected host:port/);
    assert.match(r.stderr, /log_level/);
  });

  it('rejects unknown flags and commands', async () => {
    assert.equal((await runCli(['server', '--no-such-flag'])).code, 1);
    const stray = await runCli(['server', '--dev', '--log-level', 'warn', 'extra']);
    assert.equal(stray.code, 1);
    assert.match(stray.stderr, /unexpected argument: extra/);
    assert.equal((await runCli(['frobnicate'])).code, 2);
  });

  it('migrates a fresh database from the command line', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'migrate-'));
    const r = await runCli(['migrate', '--data-dir', dir]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /applied: 0001-core/);
    const again = await runCli(['migrate', '--data-dir', dir]);
    assert.match(again.stdout, /up to date/);
  });

  it('serves throwaway storage with a fixed root token in --dev mode', async () => {
    const s = await spawnServer(['--dev', '--dev-root-token', 'my-dev-token']);
    const m = /storage in (\S+) is thrown away/.exec(s.output());
    assert.ok(m);
    assert.match(s.output(), /Root token: my-dev-token/);
    const dir = m[1] as string;
    assert.ok(existsSync(dir));
    assert.equal(await s.stop(), 0);
    assert.equal(existsSync(dir), false, 'dev storage removed at exit');
  });

  it(
    'leaves every thread under the normal policy with --batch-background-threads false',
    { skip: process.platform !== 'linux' && 'Linux only: SCHED_BATCH is a Linux policy' },
    async () => {
      const s = await spawnServer(['--dev', '--batch-background-threads', 'false']);
      try {
        const policies = threadPolicies(s.child.pid as number);
        assert.ok(policies.size >= 5);
        assert.deepEqual(
          [...policies].filter(([, p]) => p !== SCHED_OTHER),
          [],
        );
        assert.doesNotMatch(s.output(), /SCHED_BATCH/);
      } finally {
        assert.equal(await s.stop(), 0);
      }
    },
  );

  it('serves HTTPS when given a certificate and key', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tls-'));
    makeCert(dir, 'cert', '127.0.0.1');
    const s = await spawnServer(['--dev', '--tls-cert', join(dir, 'cert.pem'), '--tls-key', join(dir, 'cert.key')]);
    try {
      assert.match(s.url, /^https:/);
      const u = new URL(`${s.url}/healthz`);
      const body = await new Promise<string>((resolve, reject) => {
        const req = httpsRequest(
          { host: u.hostname, port: u.port, path: u.pathname, ca: readFileSync(join(dir, 'cert.pem')) },
          (r) => {
            let b = '';
            r.on('data', (d: Buffer) => (b += d.toString()));
            r.on('end', () => resolve(b));
          },
        );
        req.on('error', reject);
        req.end();
      });
      assert.deepEqual(JSON.parse(body), { status: 'ok' });
    } finally {
      await s.stop();
    }
    assert.deepEqual(readdirSync(dir).sort(), ['cert.key', 'cert.pem']);
  });
});

/** A TCP port held by this test process until `close`. */
async function holdPort(): Promise<{ port: number; close(): Promise<void> }> {
  const blocker = createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  return {
    port: (blocker.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => blocker.close(() => resolve())),
  };
}

for (const kind of dbKinds()) {
  describe(`the first start [${kind}]`, () => {
    it('fails at once on a busy port, naming address, holder and --listen; a clean start prints a token', async () => {
      const db = await createDatabaseUrl(kind);
      const dataDir = join(db.dir, 'data');
      const dbArgs = kind === 'postgres' ? ['--database-url', db.url] : [];
      const busy = await holdPort();
      try {
        const failed = await runCli(['server', '--listen', `127.0.0.1:${busy.port}`, '--data-dir', dataDir, ...dbArgs]);
        assert.equal(failed.code, 1, failed.stderr);
        assert.match(
          failed.stderr,
          new RegExp(`cannot listen on 127\\.0\\.0\\.1:${busy.port}: the address is already in use`),
        );
        assert.match(failed.stderr, new RegExp(`by pid ${process.pid} \\(`), 'names the process holding the port');
        assert.match(failed.stderr, /--listen HOST:PORT/);
        assert.doesNotMatch(
          failed.stdout + failed.stderr,
          /sr\.[1-9A-Za-z]{40}/,
          'no token made on a start that failed',
        );
        await busy.close();
        const clean = await spawnServer(['--data-dir', dataDir, ...dbArgs]);
        try {
          const m = TOKEN_LINE.exec(clean.output());
          assert.ok(m, `the next start prints the initial admin token:\n${clean.output()}`);
          assert.match(clean.output(), /Lost it\? `strongroom admin-token create`/);
          const self = await fetch(`${clean.url}/v1/auth/token/lookup-self`, { headers: { 'x-vault-token': m[1]! } });
          assert.equal(self.status, 200);
        } finally {
          assert.equal(await clean.stop(), 0);
        }
      } finally {
        await busy.close().catch(() => {});
        await db.drop();
      }
    });

    it('makes, lists and revokes admin tokens from the command line while the server runs', async () => {
      const db = await createDatabaseUrl(kind);
      const dataDir = join(db.dir, 'data');
      const dbArgs = kind === 'postgres' ? ['--database-url', db.url] : [];
      const server = await spawnServer(['--data-dir', dataDir, ...dbArgs]);
      try {
        const made = await runCli(['admin-token', 'create', '--data-dir', dataDir, ...dbArgs]);
        assert.equal(made.code, 0, made.stderr);
        const token = made.stdout.trim();
        assert.match(token, /^sr\.[1-9A-Za-z]{40}$/);
        assert.match(made.stderr, /shown only this once/);
        const lookup = () => fetch(`${server.url}/v1/auth/token/lookup-self`, { headers: { 'x-vault-token': token } });
        const self = (await (await lookup()).json()) as { data: { policies: string[] } };
        assert.deepEqual(self.data.policies, ['root']);
        const account = await fetch(`${server.url}/api/v2/account/details`, {
          headers: { authorization: `Bearer ${token}` },
        });
        assert.equal(account.status, 200, 'a site admin under /api/v2 too');

        const listed = await runCli(['admin-token', 'list', '--data-dir', dataDir, ...dbArgs]);
        assert.equal(listed.stdout.trim().split('\n').length, 2, 'the initial token and the new one');
        assert.ok(!listed.stdout.includes(token), 'list never shows a token');

        const revoked = await runCli(['admin-token', 'revoke', token, '--data-dir', dataDir, ...dbArgs]);
        assert.equal(revoked.code, 0, revoked.stderr);
        await until('the revoked token to be refused', async () => (await lookup()).status === 403, 20_000);
        const again = await runCli(['admin-token', 'revoke', token, '--data-dir', dataDir, ...dbArgs]);
        assert.equal(again.code, 1);
        assert.match(again.stderr, /no such admin token/);
      } finally {
        await server.stop();
        await db.drop();
      }
    });

    it(
      kind === 'sqlite'
        ? 'refuses a second server on the same data directory, and lets one start once the first is gone'
        : 'lets two servers share one PostgreSQL database',
      async () => {
        const db = await createDatabaseUrl(kind);
        const dataDir = join(db.dir, 'data');
        const dbArgs = kind === 'postgres' ? ['--database-url', db.url] : [];
        const first = await spawnServer(['--data-dir', dataDir, ...dbArgs]);
        try {
          if (kind === 'postgres') {
            const second = await spawnServer(['--data-dir', join(db.dir, 'data2'), ...dbArgs]);
            assert.equal((await fetch(`${second.url}/readyz`)).status, 200);
            assert.equal(await second.stop(), 0);
            return;
          }
          const second = await runCli(['server', '--listen', '127.0.0.1:0', '--data-dir', dataDir]);
          assert.equal(second.code, 1);
          assert.match(second.stderr, new RegExp(`another Strongroom server \\(pid ${first.child.pid}, started `));
          assert.match(
            second.stderr,
            /is using the data directory .*data\. Stop it first, or give this server its own --data-dir/,
          );
          assert.equal((await fetch(`${first.url}/readyz`)).status, 200, 'the first server is undisturbed');
          // However the first one ends, the lock goes with it.
          await first.stop('SIGKILL');
          const third = await spawnServer(['--data-dir', dataDir]);
          assert.equal((await fetch(`${third.url}/readyz`)).status, 200);
          assert.equal(await third.stop(), 0);
        } finally {
          await first.stop('SIGKILL');
          await db.drop();
        }
      },
    );
  });
}

describe('the CLI on a terminal', () => {
  it('shows each migration as it runs', { skip: process.platform !== 'linux' }, () => {
    const dir = mkdtempSync(join(tmpdir(), 'migrate-tty-'));
    // script(1) runs the command on a pseudo-terminal.
    const out = execFileSync('script', ['-qec', `${process.execPath} ${CLI} migrate --data-dir ${dir}`, '/dev/null'], {
      encoding: 'utf8',
    });
    assert.match(out, /applying \[1\/\d+\] 0001-core \.\.\. done \(\d+ ms\)/);
    assert.match(out, /applied: 0001-core/);
  });

  it('shows a backup and a restore as they run', { skip: process.platform !== 'linux' }, () => {
    const dir = mkdtempSync(join(tmpdir(), 'backup-tty-'));
    const onTerminal = (args: string) =>
      execFileSync('script', ['-qec', `${process.execPath} ${CLI} ${args}`, '/dev/null'], { encoding: 'utf8' });
    execFileSync(process.execPath, [CLI, 'migrate', '--data-dir', join(dir, 'from')]);
    const file = join(dir, 'backup.srbk');
    const taken = onTerminal(`backup --out ${file} --data-dir ${join(dir, 'from')}`);
    assert.match(taken, /\rbackup \[#{30}\] 100% [\d.]+ MB \/ [\d.]+ MB/);
    const restored = onTerminal(`restore --from ${file} --data-dir ${join(dir, 'to')}`);
    assert.match(restored, /\rverify {2}\[#{30}\] 100% /);
    assert.match(restored, /\rrestore \[#{30}\] 100% /);
    assert.match(restored, /restored the SQLite database/);
  });
});

describe('TLS certificate reload', () => {
  const servedFingerprint = (url: string) =>
    new Promise<string>((resolve, reject) => {
      const u = new URL(url);
      const socket = tlsConnect({ host: u.hostname, port: Number(u.port), rejectUnauthorized: false }, () => {
        const fp = socket.getPeerX509Certificate()?.fingerprint256 ?? '';
        socket.end();
        resolve(fp);
      });
      socket.on('error', reject);
    });

  it('serves a renewed certificate after SIGHUP, and keeps the old one when the new pair is broken', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tls-reload-'));
    const first = makeCert(dir, 'live', 'first');
    const s = await spawnServer(['--dev', '--tls-cert', join(dir, 'live.pem'), '--tls-key', join(dir, 'live.key')]);
    try {
      assert.equal(await servedFingerprint(s.url), first);
      const renewed = makeCert(dir, 'next', 'renewed');
      execFileSync('mv', [join(dir, 'next.pem'), join(dir, 'live.pem')]);
      execFileSync('mv', [join(dir, 'next.key'), join(dir, 'live.key')]);
      s.child.kill('SIGHUP');
      await until('the renewed certificate', async () => (await servedFingerprint(s.url)) === renewed, 20_000);
      assert.match(s.output(), /reloaded the TLS certificate and key/);

      // A key that does not match the certificate is refused; the renewed pair stays.
      makeCert(dir, 'other', 'other');
      execFileSync('mv', [join(dir, 'other.key'), join(dir, 'live.key')]);
      s.child.kill('SIGHUP');
      await until(
        'the failed reload to be logged',
        async () => /TLS reload failed; still serving the old certificate/.test(s.output()),
        20_000,
      );
      assert.equal(await servedFingerprint(s.url), renewed);
    } finally {
      assert.equal(await s.stop(), 0);
    }
  });
});
