import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { ManualClock } from '../../src/shared/clock.js';
import { dbKinds } from '../support/test-db.js';
import { describeWithServer, startTestServer } from '../support/test-server.js';
import type { TestServer } from '../support/test-server.js';
import { makeServerClient, mountWithRoot, role } from './pki-issue-helpers.js';
import type { Vault } from './pki-issue-helpers.js';
import { defaultCrl, fetchRaw, issue, opensslSerial, verifiedCrl } from './pki-revocation-helpers.js';

describeWithServer('pki CRL rebuild schedule and sharing', (server) => {
  let v: Vault;
  const clock = new ManualClock(new Date());
  before(async () => {
    v = makeServerClient(server);
  });

  it('auto_rebuild with delta CRLs: revocations reach the delta in the interval, the full CRL in grace', async () => {
    const { mount, rootPem } = await mountWithRoot(v);
    await role(v, mount, 'web', { allow_any_name: true, key_type: 'ec', ttl: '720h' });
    let r = await v('POST', `${mount}/config/crl`, {
      body: {
        auto_rebuild: true,
        enable_delta: true,
        delta_rebuild_interval: '15m',
        auto_rebuild_grace_period: '12h',
        expiry: '72h',
      },
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.data.enable_delta, true);
    const c0 = await defaultCrl(server.url, mount, rootPem);
    const d0 = await defaultCrl(server.url, mount, rootPem, 'crl/delta');
    assert.equal(d0.deltaBase, c0.crlNumber);
    assert.ok(d0.crlNumber > c0.crlNumber);
    assert.deepEqual(d0.serials, []);
    assert.match(d0.text, /X509v3 Delta CRL Indicator: critical/);
    const d0pem = await defaultCrl(server.url, mount, rootPem, 'crl/delta/pem');
    assert.equal(d0pem.crlNumber, d0.crlNumber);
    const deltaJson = await v('GET', `${mount}/cert/delta-crl`, { token: undefined });
    assert.equal(verifiedCrl(deltaJson.json.data.certificate, rootPem).crlNumber, d0.crlNumber);

    const a = await issue(v, mount, 'web', 'a.example.com');
    r = await v('POST', `${mount}/revoke`, { body: { serial_number: a.serial } });
    assert.equal(r.status, 200, r.text);
    const complete0 = (await fetchRaw(server.url, `${mount}/crl`)).body;
    // Nothing is due yet: the CRLs stay as they were.
    await server.deps.worker.runUntilIdle();
    assert.ok((await fetchRaw(server.url, `${mount}/crl`)).body.equals(complete0));
    assert.deepEqual((await defaultCrl(server.url, mount, rootPem, 'crl/delta')).serials, []);

    // After the delta interval the delta CRL lists the revocation, over the same base.
    clock.advance(15 * 60 + 1);
    await server.deps.worker.runUntilIdle();
    const d1 = await defaultCrl(server.url, mount, rootPem, 'crl/delta');
    assert.deepEqual(d1.serials, [opensslSerial(a.serial)]);
    assert.equal(d1.deltaBase, c0.crlNumber);
    assert.ok(d1.crlNumber > d0.crlNumber);
    assert.ok((await fetchRaw(server.url, `${mount}/crl`)).body.equals(complete0));
    const perIssuer = await fetchRaw(server.url, `${mount}/issuer/default/crl/delta/der`);
    assert.equal(perIssuer.contentType, 'application/pkix-crl');
    assert.equal(verifiedCrl(perIssuer.body, rootPem).crlNumber, d1.crlNumber);
    // The issuer's delta as JSON (`data.crl`) and as PEM: the same delta CRL, verified against the issuer.
    const deltaJsonByIssuer = await v('GET', `${mount}/issuer/default/crl/delta`, { token: undefined });
    assert.equal(deltaJsonByIssuer.status, 200, deltaJsonByIssuer.text);
    const deltaPemByIssuer = await fetchRaw(server.url, `${mount}/issuer/default/crl/delta/pem`);
    assert.equal(deltaPemByIssuer.status, 200);
    for (const pem of [deltaJsonByIssuer.json.data.crl as string, deltaPemByIssuer.body.toString('utf8')]) {
      assert.match(pem, /^-----BEGIN X509 CRL-----/);
      const facts = verifiedCrl(pem, rootPem);
      assert.equal(facts.crlNumber, d1.crlNumber);
      assert.equal(facts.deltaBase, c0.crlNumber);
      assert.match(facts.text, /X509v3 Delta CRL Indicator: critical/);
      assert.deepEqual(facts.serials, [opensslSerial(a.serial)]);
    }

    // crl/rotate-delta builds a delta now.
    const b = await issue(v, mount, 'web', 'b.example.com');
    assert.equal((await v('POST', `${mount}/revoke`, { body: { serial_number: b.serial } })).status, 200);
    r = await v('GET', `${mount}/crl/rotate-delta`);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json.data, { success: true });
    const d2 = await defaultCrl(server.url, mount, rootPem, 'crl/delta');
    assert.deepEqual([...d2.serials].sort(), [a, b].map((x) => opensslSerial(x.serial)).sort());

    // Within the grace period before nextUpdate the complete CRL is rebuilt with both.
    clock.set(new Date(c0.nextUpdate.getTime() - 12 * 3600 * 1000 + 1000));
    await server.deps.worker.runUntilIdle();
    const c1 = await defaultCrl(server.url, mount, rootPem);
    assert.deepEqual([...c1.serials].sort(), [a, b].map((x) => opensslSerial(x.serial)).sort());
    assert.ok(c1.crlNumber > d2.crlNumber);
    assert.equal((c1.nextUpdate.getTime() - c1.lastUpdate.getTime()) / 1000, 72 * 3600);
    const d3 = await defaultCrl(server.url, mount, rootPem, 'crl/delta');
    assert.equal(d3.deltaBase, c1.crlNumber);

    // Turning delta off removes the delta CRLs.
    r = await v('POST', `${mount}/config/crl`, { body: { enable_delta: false } });
    assert.equal(r.status, 200, r.text);
    assert.equal((await fetchRaw(server.url, `${mount}/crl/delta`)).status, 204);
  });

  it('issuers sharing a key and subject (a reissued root) serve one CRL listing what either issued', async () => {
    const { mount, rootPem, issuerId } = await mountWithRoot(v, { issuerName: 'first' });
    await role(v, mount, 'web', { allow_any_name: true, key_type: 'ec', ttl: '720h', issuer_ref: 'first' });
    let r = await v('POST', `${mount}/root/rotate/existing`, {
      body: { common_name: `Root ${mount}`, key_ref: 'default', issuer_name: 'second', ttl: '8760h' },
    });
    assert.equal(r.status, 200, r.text);
    const secondId = r.json.data.issuer_id;
    const secondPem = r.json.data.certificate;
    assert.notEqual(secondId, issuerId);
    const a = await issue(v, mount, 'web', 'a.example.com');
    r = await v('POST', `${mount}/revoke`, { body: { serial_number: a.serial } });
    assert.equal(r.status, 200, r.text);
    const first = await fetchRaw(server.url, `${mount}/issuer/${issuerId}/crl/der`);
    const second = await fetchRaw(server.url, `${mount}/issuer/${secondId}/crl/der`);
    assert.equal(first.status, 200);
    assert.ok(first.body.equals(second.body));
    assert.deepEqual(verifiedCrl(first.body, rootPem).serials, [opensslSerial(a.serial)]);
    assert.deepEqual(verifiedCrl(second.body, secondPem).serials, [opensslSerial(a.serial)]);
  });

  it("issuers with different keys in one mount: each revocation is on its own issuer's CRL only", async () => {
    const { mount, rootPem, issuerId } = await mountWithRoot(v, { issuerName: 'first' });
    let r = await v('POST', `${mount}/issuers/generate/root/internal`, {
      body: { common_name: `Other root ${mount}`, key_type: 'ec', key_bits: 384, issuer_name: 'other', ttl: '8760h' },
    });
    assert.equal(r.status, 200, r.text);
    const otherId = r.json.data.issuer_id as string;
    const otherPem = r.json.data.certificate as string;
    assert.notEqual(r.json.data.key_id, (await v('GET', `${mount}/issuer/first`)).json.data.key_id);
    await role(v, mount, 'first', { allow_any_name: true, key_type: 'ec', ttl: '720h', issuer_ref: 'first' });
    await role(v, mount, 'other', { allow_any_name: true, key_type: 'ec', ttl: '720h', issuer_ref: 'other' });
    const a = await issue(v, mount, 'first', 'a.example.com');
    const b = await issue(v, mount, 'other', 'b.example.com');
    const kept = await issue(v, mount, 'other', 'kept.example.com');
    r = await v('POST', `${mount}/revoke`, { body: { serial_number: b.serial } });
    assert.equal(r.status, 200, r.text);

    // Only the other issuer's CRL lists b; each CRL verifies against its own issuer only.
    const firstCrl = await fetchRaw(server.url, `${mount}/issuer/${issuerId}/crl/der`);
    const otherCrl = await fetchRaw(server.url, `${mount}/issuer/${otherId}/crl/der`);
    assert.equal(firstCrl.status, 200);
    assert.equal(otherCrl.status, 200);
    assert.deepEqual(verifiedCrl(otherCrl.body, otherPem).serials, [opensslSerial(b.serial)]);
    assert.deepEqual(verifiedCrl(firstCrl.body, rootPem).serials, []);
    assert.throws(() => verifiedCrl(firstCrl.body, otherPem));
    assert.throws(() => verifiedCrl(otherCrl.body, rootPem));
    assert.deepEqual((await defaultCrl(server.url, mount, rootPem)).serials, [], 'the default issuer is the first');
    assert.deepEqual((await defaultCrl(server.url, mount, otherPem, `issuer/other/crl/pem`)).serials, [
      opensslSerial(b.serial),
    ]);

    // A revocation under the first issuer lands on its CRL; the other's keeps b alone.
    r = await v('POST', `${mount}/revoke`, { body: { serial_number: a.serial } });
    assert.equal(r.status, 200, r.text);
    const first2 = await defaultCrl(server.url, mount, rootPem, 'issuer/first/crl/der');
    const other2 = await defaultCrl(server.url, mount, otherPem, 'issuer/other/crl/der');
    assert.deepEqual(first2.serials, [opensslSerial(a.serial)]);
    assert.deepEqual(other2.serials, [opensslSerial(b.serial)]);
    assert.ok(!other2.serials.includes(opensslSerial(kept.serial)));
  });
  return { clock };
});

if (dbKinds().includes('postgres')) {
  describe('pki CRLs on two nodes sharing one PostgreSQL database', () => {
    let a: TestServer;
    let b: TestServer;
    before(async () => {
      // Two nodes of one cluster: one database and one master key.
      const masterKey = randomBytes(32).toString('base64');
      a = await startTestServer('postgres', { config: { masterKey } });
      b = await startTestServer('postgres', { config: { databaseUrl: a.config.databaseUrl, masterKey } });
    });
    after(async () => {
      await b?.close();
      await a?.close();
    });

    it('both nodes serve byte-identical CRLs, whichever node revoked or rotated', async () => {
      const va = makeServerClient(a);
      const vb = makeServerClient(b);
      const { mount, rootPem } = await mountWithRoot(va);
      await role(va, mount, 'web', { allow_any_name: true, key_type: 'ec', ttl: '1h' });
      const x = await issue(va, mount, 'web', 'x.example.com');
      // Node B learns of the mount created on A (its mount cache lives a second at most).
      let r = await vb('POST', `${mount}/revoke`, { body: { serial_number: x.serial } });
      for (let i = 0; i < 20 && r.status === 404; i++) {
        await new Promise((res) => setTimeout(res, 100));
        r = await vb('POST', `${mount}/revoke`, { body: { serial_number: x.serial } });
      }
      assert.equal(r.status, 200, r.text);
      const fromA = await fetchRaw(a.url, `${mount}/crl`);
      const fromB = await fetchRaw(b.url, `${mount}/crl`);
      assert.ok(fromA.body.equals(fromB.body));
      assert.deepEqual(r.json.warnings, null);
      const facts = verifiedCrl(fromA.body, rootPem);
      assert.deepEqual(facts.serials, [opensslSerial(x.serial)]);

      assert.equal((await va('GET', `${mount}/crl/rotate`)).status, 200);
      const a2 = await fetchRaw(a.url, `${mount}/crl`);
      const b2 = await fetchRaw(b.url, `${mount}/crl`);
      assert.ok(a2.body.equals(b2.body));
      assert.ok(!a2.body.equals(fromA.body));
      assert.equal(verifiedCrl(b2.body, rootPem).crlNumber, facts.crlNumber + 1);
      // Revoke status is the same on both.
      const ca = await va('GET', `${mount}/cert/${x.serial}`, { token: undefined });
      const cb = await vb('GET', `${mount}/cert/${x.serial}`, { token: undefined });
      assert.equal(ca.json.data.revocation_time, cb.json.data.revocation_time);
    });
  });
}
