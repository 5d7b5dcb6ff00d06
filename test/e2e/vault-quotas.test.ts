import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { describeWithServer, startSecondNode } from '../support/test-server.js';
import { until } from '../support/wait.js';

interface Answer {
  status: number;
  headers: Headers;
  json: { errors?: string[]; data?: Record<string, unknown> } | undefined;
}

async function call(url: string, token: string, method: string, path: string, body?: unknown): Promise<Answer> {
  const res = await fetch(`${url}/v1/${path}`, {
    method,
    headers: { 'x-vault-token': token, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, json: text ? JSON.parse(text) : undefined };
}

describeWithServer('vault rate-limit quotas', (srv, kind) => {
  const v = (method: string, path: string, body?: unknown) => call(srv.url, srv.rootToken, method, path, body);
  before(async () => {
    for (const m of ['pki', 'pki2']) assert.equal((await v('POST', `sys/mounts/${m}`, { type: 'pki' })).status, 204);
  });

  it('writes, reads, lists and deletes quotas with Vault’s fields; refuses bad ones', async () => {
    let r = await v('POST', 'sys/quotas/rate-limit/pki-limit', { path: 'pki/', rate: 3, interval: '1m' });
    assert.equal(r.status, 204, JSON.stringify(r.json));
    r = await v('GET', 'sys/quotas/rate-limit/pki-limit');
    assert.equal(r.status, 200);
    assert.deepEqual(r.json?.data, {
      name: 'pki-limit',
      path: 'pki/',
      type: 'rate-limit',
      rate: 3,
      interval: 60,
      block_interval: 0,
      role: '',
      inheritable: false,
    });
    r = await v('GET', 'sys/quotas/rate-limit?list=true');
    assert.deepEqual(r.json?.data?.['keys'], ['pki-limit']);

    for (const [body, message] of [
      [{ path: 'pki2', rate: 0 }, /rate must be positive/],
      [{ path: 'nowhere', rate: 1 }, /invalid mount path "nowhere"/],
      [{ path: 'pki2', rate: 1, role: 'r' }, /role-based rate-limit quotas are not supported/],
      [{ path: 'pki/', rate: 1 }, /quota "pki-limit" already covers path "pki"/],
      [{ path: 'pki2', rate: 'fast' }, /field "rate"/],
    ] as const) {
      r = await v('POST', 'sys/quotas/rate-limit/bad', body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.match(r.json?.errors?.[0] ?? '', message);
    }
    assert.equal((await v('GET', 'sys/quotas/rate-limit/bad')).status, 404, 'nothing written by a refusal');
  });

  it('answers 429 with Retry-After in Vault’s envelope beyond the rate; other mounts are not limited', async () => {
    const results: Answer[] = [];
    for (let i = 0; i < 4; i++) results.push(await v('GET', 'pki/roles?list=true'));
    assert.deepEqual(
      results.map((r) => r.status === 429),
      [false, false, false, true],
    );
    const refused = results[3] as Answer;
    assert.deepEqual(refused.json, { errors: ['request path "pki/roles": rate limit quota exceeded'] });
    const retry = Number(refused.headers.get('retry-after'));
    assert.ok(retry >= 1 && retry <= 60, `Retry-After ${retry}`);
    assert.notEqual((await v('GET', 'pki2/roles?list=true')).status, 429);
    assert.equal((await v('GET', 'sys/mounts')).status, 200);
  });

  it('block_interval, response headers and exempt paths through sys/quotas/config', async () => {
    let r = await v('POST', 'sys/quotas/config', { enable_rate_limit_response_headers: true });
    assert.equal(r.status, 204);
    r = await v('GET', 'sys/quotas/config');
    assert.equal(r.json?.data?.['enable_rate_limit_response_headers'], true);
    assert.ok((r.json?.data?.['rate_limit_exempt_paths'] as string[]).includes('sys/health'));

    r = await v('POST', 'sys/quotas/rate-limit/pki2-block', {
      path: 'pki2',
      rate: 1,
      interval: 60,
      block_interval: 300,
    });
    assert.equal(r.status, 204);
    const first = await v('GET', 'pki2/roles?list=true');
    assert.notEqual(first.status, 429);
    assert.equal(first.headers.get('x-ratelimit-limit'), '1');
    assert.equal(first.headers.get('x-ratelimit-remaining'), '0');
    const second = await v('GET', 'pki2/roles?list=true');
    assert.equal(second.status, 429);
    assert.equal(second.headers.get('retry-after'), '300', 'blocked for block_interval');

    // A global quota of one request a minute: sys/health stays exempt, and so does a prefix (`*`) added to the list.
    assert.equal(
      (await v('POST', 'sys/quotas/config', { rate_limit_exempt_paths: ['sys/health', 'sys/quotas/*'] })).status,
      204,
    );
    assert.equal((await v('POST', 'sys/quotas/rate-limit/global', { rate: 1, interval: 60 })).status, 204);
    for (let i = 0; i < 3; i++) {
      assert.equal((await fetch(`${srv.url}/v1/sys/health`)).status, 200);
      assert.notEqual((await v('GET', 'sys/quotas/rate-limit/global')).status, 429);
    }
    assert.notEqual((await v('GET', 'sys/mounts')).status, 429);
    assert.equal((await v('GET', 'sys/mounts')).status, 429, 'the global quota limits the rest');

    for (const name of ['global', 'pki2-block', 'pki-limit'])
      assert.equal((await v('DELETE', `sys/quotas/rate-limit/${name}`)).status, 204);
    assert.equal((await v('GET', 'pki2/roles?list=true')).status, 404, 'no longer limited (no roles: 404)');
    assert.equal((await v('GET', 'sys/mounts')).status, 200);
  });

  if (kind === 'postgres') {
    it('two nodes on one database hold one limit between them', async () => {
      const b = await startSecondNode(srv);
      try {
        assert.equal(
          (await v('POST', 'sys/quotas/rate-limit/shared', { path: 'pki', rate: 5, interval: '1h' })).status,
          204,
        );
        // Node b re-reads quotas written elsewhere every second.
        await waitForQuotaOnB();
        for (let i = 0; i < 5; i++)
          assert.notEqual((await v('GET', 'pki/roles?list=true')).status, 429, `request ${i + 1}`);
        assert.equal((await v('GET', 'pki/roles?list=true')).status, 429);
        // Once node a has reported its five (every 250 ms), node b admits none for this client in this window.
        await until('node a reported its count', async () => {
          const row = await srv.deps.core.db.kysely
            .selectFrom('vault_quota_usage')
            .select((eb) => eb.fn.sum<number>('count').as('n'))
            .where('quota_name', '=', 'shared')
            .executeTakeFirst();
          return Number(row?.n ?? 0) >= 5;
        });
        assert.equal((await call(b.url, srv.rootToken, 'GET', 'pki/roles?list=true')).status, 429);
      } finally {
        await b.close();
      }

      async function waitForQuotaOnB(): Promise<void> {
        await until('node b loaded the quota', async () => {
          const list = await call(b.url, srv.rootToken, 'GET', 'sys/quotas/rate-limit?list=true');
          return ((list.json?.data?.['keys'] as string[] | undefined) ?? []).includes('shared');
        });
      }
    });
  }
});
