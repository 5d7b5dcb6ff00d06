import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { mintJwt, signingKey, startJwksServer } from '../support/jwt-fixtures.js';
import type { TestJwksServer } from '../support/jwt-fixtures.js';
import { describeWithServer, startSecondNode } from '../support/test-server.js';
import { vaultClient } from './vault-http.js';

/**
 * Two servers on one database, as behind a load balancer: auth configuration written on one
 * is used on the other, a one-use secret id logs in exactly once across both, and tokens
 * made on one work on the other. Also: a flood of failed logins leaves other requests served.
 */
const key = signingKey('ES256', 'k1');

describeWithServer('auth methods across nodes', (a) => {
  let b: Awaited<ReturnType<typeof startSecondNode>>;
  let idp: TestJwksServer;
  before(async () => {
    idp = await startJwksServer([key]);
    b = await startSecondNode(a);
  });
  after(async () => {
    await b?.close();
    await idp?.close();
  });

  it('shares auth configuration, secret-id uses and tokens between nodes', async () => {
    const rootA = vaultClient(a.url, a.rootToken);
    const rootB = vaultClient(b.url, b.rootToken);
    assert.equal((await rootA('POST', 'sys/auth/approle', { body: { type: 'approle' } })).status, 204);
    assert.equal((await rootA('POST', 'sys/auth/jwt', { body: { type: 'jwt' } })).status, 204);
    let r = await rootB('GET', 'sys/auth');
    assert.deepEqual(Object.keys(r.json.data).sort(), ['approle/', 'jwt/', 'token/']);

    assert.equal((await rootA('POST', 'auth/approle/role/once', { body: { secret_id_num_uses: 1 } })).status, 204);
    const roleId = (await rootB('GET', 'auth/approle/role/once/role-id')).json.data.role_id as string;
    // Twenty one-use secret ids, each raced by ten logins split over both nodes: exactly one login per secret id
    // wins.
    for (let round = 0; round < 20; round++) {
      const secret = (await (round % 2 ? rootA : rootB)('POST', 'auth/approle/role/once/secret-id')).json.data
        .secret_id as string;
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          vaultClient(i % 2 ? a.url : b.url)('POST', 'auth/approle/login', {
            body: { role_id: roleId, secret_id: secret },
          }),
        ),
      );
      const statuses = results.map((x) => x.status).sort();
      assert.deepEqual(statuses, [200, ...Array(9).fill(400)], `round ${round}`);
      for (const x of results.filter((y) => y.status === 400))
        assert.deepEqual(x.json, { errors: ['invalid role or secret ID'] });
    }

    // JWT config and role written on B, login on A; the token made on A works on B and is revoked from A.
    r = await rootB('POST', 'auth/jwt/config', { body: { jwks_url: `${idp.url}/jwks` } });
    assert.equal(r.status, 204);
    r = await rootB('POST', 'auth/jwt/role/ci', { body: { user_claim: 'sub', bound_audiences: 'strongroom' } });
    assert.equal(r.status, 204);
    const jwt = mintJwt(key, { sub: 'job-1', aud: 'strongroom', exp: Math.floor(Date.now() / 1000) + 60 });
    r = await vaultClient(a.url)('POST', 'auth/jwt/login', { body: { role: 'ci', jwt } });
    assert.equal(r.status, 200, r.text);
    const token = r.json.auth.client_token as string;
    r = await vaultClient(b.url, token)('GET', 'auth/token/lookup-self');
    assert.equal(r.json.data.path, 'auth/jwt/login');
    assert.equal((await vaultClient(a.url, token)('POST', 'auth/token/revoke-self')).status, 204);
    // B may remember a good check for up to a second (TokenService's cache); after that it is refused.
    const deadline = Date.now() + 10_000;
    while ((r = await vaultClient(b.url, token)('GET', 'auth/token/lookup-self')).status === 200) {
      assert.ok(Date.now() < deadline, 'the revoked token still works on the other node');
      await new Promise((done) => setTimeout(done, 100));
    }
    assert.equal(r.status, 403);
  });

  it('keeps serving other requests during a flood of failed logins', async (t) => {
    const root = vaultClient(a.url, a.rootToken);
    await root('POST', 'sys/auth/flood', { body: { type: 'approle' } });
    assert.equal((await root('POST', 'auth/flood/role/r', { body: {} })).status, 204);
    const roleId = (await root('GET', 'auth/flood/role/r/role-id')).json.data.role_id as string;
    const anon = vaultClient(a.url);
    const timed = async () => {
      const started = performance.now();
      const res = await root('GET', 'sys/policies/acl?list=true');
      return { status: res.status, ms: performance.now() - started };
    };
    const idle: number[] = [];
    for (let i = 0; i < 20; i++) idle.push((await timed()).ms);
    // 500 requests, 100 in flight at a time (more would overflow the listen backlog of the test's own socket).
    const flood = async (send: (i: number) => Promise<number>): Promise<number[]> => {
      const out: number[] = [];
      let next = 0;
      await Promise.all(
        Array.from({ length: 100 }, async () => {
          while (next < 500) out.push(await send(next++));
        }),
      );
      return out;
    };
    const measure = async (during: Promise<number[]>, expected: number) => {
      // Samples taken only while the flood is in flight, so both floods are compared alike.
      let done = false;
      void during.finally(() => (done = true));
      const times: Array<{ status: number; ms: number }> = [];
      while (!done || times.length < 3) times.push(await timed());
      const statuses = await during;
      assert.equal(statuses.length, 500);
      assert.ok(
        statuses.every((x) => x === expected),
        JSON.stringify(statuses.filter((x) => x !== expected)),
      );
      assert.ok(
        times.every((d) => d.status === 200),
        JSON.stringify(times),
      );
      return times.map((d) => d.ms);
    };
    const during = await measure(
      flood((i) =>
        anon('POST', 'auth/flood/login', {
          body: { role_id: i % 2 ? roleId : 'nope', secret_id: `guess-${i}` },
        }).then((x) => x.status),
      ),
      400,
    );
    // The same flood of the cheapest request there is, for comparison: a failed login costs no more.
    const beside = await measure(
      flood(() => fetch(`${a.url}/v1/sys/health`).then((x) => x.status)),
      200,
    );
    const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
    t.diagnostic(
      `policy list median ${median(idle).toFixed(1)} ms idle, ${median(during).toFixed(1)} ms during 500 failed ` +
        `logins (100 in flight), ${median(beside).toFixed(1)} ms during 500 sys/health`,
    );
  });
});
