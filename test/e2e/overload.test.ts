import assert from 'node:assert/strict';
import { it } from 'node:test';
import { RawHttpConnection } from '../support/raw-http.js';
import { describeWithServer } from '../support/test-server.js';
import type { TestServer } from '../support/test-server.js';
import { until } from '../support/wait.js';

/** A metric's value from the Prometheus text of /metrics. */
async function metric(srv: TestServer, name: string): Promise<number> {
  const text = await (await fetch(`${srv.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  assert.ok(line, `${name} is not in /metrics`);
  return Number(line.slice(name.length + 1));
}

describeWithServer('overload: max_inflight_requests', { config: { maxInFlightRequests: 2 } }, (srv) => {
  /** Starts a request whose body never finishes arriving, so it stays in flight. */
  async function held(): Promise<RawHttpConnection> {
    const c = await RawHttpConnection.open(srv.url);
    const head =
      'POST /v1/sys/policies/acl/held HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n' +
      `X-Vault-Token: ${srv.rootToken}\r\nContent-Length: 40\r\n\r\n{"policy": `;
    await c.send([Buffer.from(head)]);
    return c;
  }

  it('refuses at once beyond the bound with 503 and Retry-After, in each API envelope; probes answer', async () => {
    const first = await held();
    const second = await held();
    await until('two requests in flight', async () => (await metric(srv, 'strongroom_http_requests_in_flight')) === 2);
    const refusedBefore = await metric(srv, 'strongroom_http_requests_refused_total');

    const vault = await fetch(`${srv.url}/v1/sys/mounts`, { headers: { 'x-vault-token': srv.rootToken } });
    assert.equal(vault.status, 503);
    assert.equal(vault.headers.get('retry-after'), '1');
    const vaultBody = (await vault.json()) as { errors: string[] };
    assert.match(vaultBody.errors[0] ?? '', /limit of 2 requests in flight \(max_inflight_requests\)/);

    const tfe = await fetch(`${srv.url}/api/v2/organizations`, {
      headers: { authorization: `Bearer ${srv.rootToken}` },
    });
    assert.equal(tfe.status, 503);
    assert.equal(tfe.headers.get('retry-after'), '1');
    assert.match(tfe.headers.get('content-type') ?? '', /^application\/vnd\.api\+json/);
    const tfeBody = (await tfe.json()) as { errors: { status: string; detail: string }[] };
    assert.equal(tfeBody.errors[0]?.status, '503');
    assert.match(tfeBody.errors[0]?.detail ?? '', /max_inflight_requests/);

    assert.equal((await fetch(`${srv.url}/healthz`)).status, 200);
    assert.equal((await fetch(`${srv.url}/readyz`)).status, 200);
    assert.equal(await metric(srv, 'strongroom_http_requests_refused_total'), refusedBefore + 2);

    // A client that gives up frees its place; one that finishes its body gets its answer.
    first.socket.destroy();
    await until('one request in flight', async () => (await metric(srv, 'strongroom_http_requests_in_flight')) === 1);
    await second.send([Buffer.from('"path \\"x\\" {}"}'.padEnd(29, ' '))]);
    const answer = await second.read();
    assert.equal(answer.status, 204, answer.body);
    second.socket.destroy();
    await until('nothing in flight', async () => (await metric(srv, 'strongroom_http_requests_in_flight')) === 0);

    const again = await fetch(`${srv.url}/v1/sys/policies/acl/held`, {
      headers: { 'x-vault-token': srv.rootToken },
    });
    assert.equal(again.status, 200, 'the held write was performed once its body arrived');
  });
});
