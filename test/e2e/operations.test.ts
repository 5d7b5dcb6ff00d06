import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { sql } from 'kysely';
import { describeWithServer } from '../support/test-server.js';
import { runCli, spawnServer } from '../support/spawn-server.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const OPERATIONS = readFileSync(join(ROOT, 'docs/operations.md'), 'utf8');

describeWithServer('operations', { config: { metricsToken: 'scrape-secret', pgPoolSize: 2 } }, (server, kind) => {
  it('keeps /metrics behind the metrics token, and /healthz and /readyz open', async () => {
    for (const authorization of [undefined, 'Bearer wrong', 'scrape-secret', 'Bearer scrape-secret2']) {
      const r = await fetch(`${server.url}/metrics`, authorization ? { headers: { authorization } } : {});
      assert.equal(r.status, 401, String(authorization));
      assert.equal(r.headers.get('www-authenticate'), 'Bearer realm="metrics"');
      assert.deepEqual(await r.json(), { errors: ['/metrics needs Authorization: Bearer <metrics_token>'] });
    }
    const ok = await fetch(`${server.url}/metrics`, { headers: { authorization: 'Bearer scrape-secret' } });
    assert.equal(ok.status, 200);
    assert.match(await ok.text(), /^# HELP strongroom_http_requests_total/m);
    assert.equal((await fetch(`${server.url}/healthz`)).status, 200);
    assert.equal((await fetch(`${server.url}/readyz`)).status, 200);
  });

  it('documents every metric of its own with its type and labels, and no other', async () => {
    const documented = new Map<string, { type: string; labels: string[] }>();
    // One list item per metric: - `name` (type: counter; labels: `a`, `b`): meaning
    for (const m of OPERATIONS.matchAll(/^- `(strongroom_[a-z_]+)` \(type: (\w+)(?:; labels: ([^)]*))?\)/gm)) {
      const labels = [...(m[3] ?? '').matchAll(/`([a-z_]+)`/g)].map((l) => l[1] as string);
      documented.set(m[1] as string, { type: m[2] as string, labels });
    }
    const registry = server.deps.core.metrics.registry;
    const own = (await registry.getMetricsAsJSON())
      .map((m) => m.name)
      .filter((n) => !/^strongroom_(process|nodejs)_/.test(n));
    assert.deepEqual([...documented.keys()].sort(), own.sort());
    for (const name of own) {
      const metric = registry.getSingleMetric(name) as unknown as { labelNames: string[] };
      const json = (await registry.getMetricsAsJSON()).find((m) => m.name === name)!;
      assert.deepEqual(documented.get(name), { type: json.type, labels: [...metric.labelNames] }, name);
    }
  });

  it('keeps a running node serving while another process migrates, and a node of an older version out', async () => {
    const migrated = await runCli(['migrate', '--database-url', server.config.databaseUrl]);
    assert.equal(migrated.code, 0, migrated.stderr);
    assert.match(migrated.stdout, /database is up to date/);
    // A migration this version does not know, as a newer version would leave it.
    const newer = '9999-from-a-newer-version';
    await sql`insert into kysely_migration (name, timestamp) values (${newer}, ${new Date().toISOString()})`.execute(
      server.deps.core.db.kysely,
    );
    try {
      const ready = await fetch(`${server.url}/readyz`);
      assert.equal(ready.status, 200, 'the running node keeps serving');
      const older = await runCli([
        'server',
        '--listen',
        '127.0.0.1:0',
        '--data-dir',
        server.config.dataDir,
        '--database-url',
        server.config.databaseUrl,
      ]);
      assert.equal(older.code, 1);
      assert.match(older.stderr, /9999-from-a-newer-version/);
    } finally {
      await sql`delete from kysely_migration where name = ${'9999-from-a-newer-version'}`.execute(
        server.deps.core.db.kysely,
      );
    }
  });

  if (kind === 'postgres') {
    it('holds at most pg_pool_size PostgreSQL connections named strongroom, and one change listener', async () => {
      const admin = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
      await admin.connect();
      try {
        const dbName = new URL(server.config.databaseUrl).pathname.slice(1);
        const load = Array.from({ length: 40 }, (_, i) =>
          fetch(`${server.url}/api/v2/organizations/o${i}`, {
            headers: { authorization: `Bearer ${server.rootToken}` },
          }).then((r) => r.arrayBuffer()),
        );
        await Promise.all(load);
        const { rows } = await admin.query<{ application_name: string; n: number }>(
          'select application_name, count(*)::int as n from pg_stat_activity where datname = $1 group by 1',
          [dbName],
        );
        const count = Object.fromEntries(rows.map((r) => [r.application_name, r.n]));
        // The pool, and the connection that listens for other nodes' changes (decision 0048).
        assert.deepEqual(Object.keys(count).sort(), ['strongroom', 'strongroom-changes'], JSON.stringify(rows));
        assert.ok(count['strongroom']! >= 1 && count['strongroom']! <= 2, `connections: ${JSON.stringify(rows)}`);
        assert.equal(count['strongroom-changes'], 1);
      } finally {
        await admin.end();
      }
    });

    it('honours TLS settings in the database URL: a server asking for TLS it cannot have does not start', async () => {
      const url = new URL(server.config.databaseUrl);
      url.searchParams.set('sslmode', 'verify-full');
      const r = await runCli(['migrate', '--database-url', url.toString()]);
      assert.equal(r.code, 1);
      assert.match(r.stderr, /does not support SSL/);
      const s = await runCli(['server', '--listen', '127.0.0.1:0', '--database-url', url.toString()]);
      assert.equal(s.code, 1);
      assert.match(s.stderr, /does not support SSL/);
    });
  }
});

describe('operations on a real process', () => {
  it('names its own settings in the configuration reference', () => {
    const config = readFileSync(join(ROOT, 'docs/configuration.md'), 'utf8');
    assert.match(
      config,
      /\*\*metrics_token\*\* \(`--metrics-token`, `STRONGROOM_METRICS_TOKEN`, file key `metrics_token`\)/,
    );
  });

  it('serves /metrics with the token when started with --metrics-token', async () => {
    const s = await spawnServer(['--dev', '--metrics-token', 'abc']);
    try {
      assert.equal((await fetch(`${s.url}/metrics`)).status, 401);
      assert.equal((await fetch(`${s.url}/metrics`, { headers: { authorization: 'Bearer abc' } })).status, 200);
      assert.ok(!s.output().includes('abc"'), 'the token is not logged');
    } finally {
      await s.stop();
    }
  });
});
