/**
 * ACME across nodes and over time: two servers on one PostgreSQL database share nonces
 * (single use everywhere) and answer each other's validations; orders expire; tidy_acme removes
 * expired orders and revokes, then deletes, accounts left without orders.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { AcmeAccountClient, AcmeHttp, jws } from '../../bench/lib/acme-client.js';
import type { Loose } from '../../bench/lib/acme-client.js';
import { ManualClock } from '../../src/shared/clock.js';
import { describeWithServer, startSecondNode } from '../support/test-server.js';
import { acmeMount, loopbackFor, startDnsServer, startHttp01 } from '../support/acme-fixtures.js';
import type { TestDns } from '../support/acme-fixtures.js';
import { vaultClient } from './vault-http.js';

const FILE_TAG = 35;
const ERR = 'urn:ietf:params:acme:error:';

describeWithServer('pki ACME across nodes', (a, kind) => {
  let b: Awaited<ReturnType<typeof startSecondNode>>;
  let dns: TestDns;

  before(async () => {
    b = await startSecondNode(a);
    dns = await startDnsServer();
  });
  after(async () => {
    await dns.close();
    await b.close();
  });

  it('a nonce is good once (on any PostgreSQL node); a validation begun on one is polled on another', async () => {
    const v = vaultClient(a.url, a.rootToken);
    const m = await acmeMount(v, a.url, { acme: { dns_resolver: dns.address } });
    const dirUrl = `${m.cluster}/roles/web/acme/directory`;
    const onA = new AcmeHttp(dirUrl);
    const onB = new AcmeHttp(dirUrl, { rewrite: (u) => u.replace(a.url, b.url) });
    const c = new AcmeAccountClient(onA);
    await c.register();
    const cb = new AcmeAccountClient(onB, c.key);
    cb.kid = c.kid;

    const nonce = await onA.nonce();
    const body = JSON.stringify(jws(c.key, { nonce, url: c.kid, kid: c.kid }, undefined));
    let r = await onB.request('POST', c.kid, body);
    if (kind === 'postgres') {
      // Nodes sharing PostgreSQL share used nonces: good once, on either node.
      assert.equal(r.status, 200, r.text);
      r = await onA.request('POST', c.kid, body);
      assert.equal(r.json?.type, `${ERR}badNonce`);
    } else {
      // A SQLite file serves one server at a time, which keeps its nonces in memory: any
      // other server (a restarted one) refuses them, and clients retry with a fresh one.
      assert.equal(r.json?.type, `${ERR}badNonce`, r.text);
      r = await onA.request('POST', c.kid, body);
      assert.equal(r.status, 200, r.text);
      r = await onA.request('POST', c.kid, body);
      assert.equal(r.json?.type, `${ERR}badNonce`);
    }

    const name = 'nodes.acme.test';
    const ip = loopbackFor(FILE_TAG, kind, 1);
    dns.mapHost(name, ip);
    const o = await c.newOrder([{ type: 'dns', value: name }]);
    const authz = await cb.post(o.json.authorizations[0]);
    const ch = authz.json.challenges.find((x: Loose) => x.type === 'http-01');
    const responder = await startHttp01(ip);
    responder.tokens.set(ch.token, c.keyAuthorization(ch.token));
    try {
      r = await c.post(ch.url, {});
      assert.equal(r.status, 200, r.text);
      const done = await cb.poll(o.json.authorizations[0], (x) => x.json?.status !== 'pending');
      assert.equal(done.json.status, 'valid', done.text);
    } finally {
      await responder.close();
    }
    const ready = await cb.post(String(o.headers.location));
    assert.equal(ready.json.status, 'ready');
    onA.close();
    onB.close();
  });
});

describeWithServer('pki ACME lifecycle and tidy_acme', (server) => {
  const clock = new ManualClock(new Date());

  it('orders expire; tidy_acme deletes expired orders, revokes then deletes idle accounts', async () => {
    const v = vaultClient(server.url, server.rootToken);
    const m = await acmeMount(v, server.url);
    const http = new AcmeHttp(`${m.cluster}/roles/web/acme/directory`);
    const busy = new AcmeAccountClient(http);
    await busy.register();
    const idle = new AcmeAccountClient(http);
    await idle.register();
    const o = await busy.newOrder([{ type: 'dns', value: 'old.acme.test' }]);
    const orderUrl = String(o.headers.location);
    clock.advance(25 * 3600);
    let r = await busy.post(orderUrl);
    assert.equal(r.json.status, 'invalid');
    r = await busy.post(o.json.authorizations[0]);
    assert.equal(r.json.status, 'expired');

    // Past the order's expiry plus safety_buffer, and the idle account past acme_account_safety_buffer;
    // the busy account has a current order.
    clock.advance(4 * 24 * 3600);
    const fresh = await busy.newOrder([{ type: 'dns', value: 'fresh.acme.test' }]);
    assert.equal(fresh.status, 201, fresh.text);
    const tidy = async () => {
      const t = await v('POST', `${m.mount}/tidy`, {
        body: { tidy_acme: true, safety_buffer: '72h', acme_account_safety_buffer: '96h' },
      });
      assert.equal(t.status, 202, t.text);
      await server.deps.worker.runUntilIdle();
      const s = await v('GET', `${m.mount}/tidy-status`);
      assert.equal(s.json.data.state, 'Finished', s.text);
      return s.json.data;
    };
    let status = await tidy();
    assert.equal(status.acme_orders_deleted_count, 1);
    assert.equal(status.acme_account_revoked_count, 1);
    assert.equal(status.total_acme_account_count, 2);
    r = await busy.post(orderUrl);
    assert.equal(r.status, 404);
    const idleId = idle.kid.split('/').pop();
    const read = await v('GET', `${m.mount}/acme/mgmt/account/keyid/${idleId}`);
    assert.equal(read.json.data.status, 'revoked');
    r = await idle.post(idle.kid);
    assert.equal(r.json.type, `${ERR}unauthorized`);
    r = await busy.post(String(fresh.headers.location));
    assert.equal(r.json.status, 'pending');
    // Later the fresh order has expired too: it goes, its account is revoked, the revoked one deleted.
    clock.advance(5 * 24 * 3600);
    status = await tidy();
    assert.equal(status.acme_orders_deleted_count, 1);
    assert.equal(status.acme_account_deleted_count, 1);
    assert.equal(status.acme_account_revoked_count, 1);
    const gone = await v('GET', `${m.mount}/acme/mgmt/account/keyid/${idleId}`);
    assert.equal(gone.status, 404);
    http.close();
  });

  return { clock };
});
