import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { makeServerClient, mountWithRoot, role } from '../../../test/e2e/pki-issue-helpers.js';
import type { Vault } from '../../../test/e2e/pki-issue-helpers.js';
import { describeWithServer } from '../../../test/support/test-server.js';
import { ManualClock } from '../../shared/clock.js';
import { parseCrl } from '../crypto/crl-parser.js';
import { normalizeSerial } from '../crypto/serial.js';
import type { CrlService } from './crl-service.js';
import type { RevocationService } from './revocation-service.js';

describeWithServer('revocation service', (server) => {
  let v: Vault;
  let revocation: RevocationService;
  let crls: CrlService;
  const clock = new ManualClock(new Date());
  before(async () => {
    v = makeServerClient(server);
    revocation = server.deps.pki.revocation;
    crls = server.deps.pki.crls;
  });

  /** A mount (its id) with a root and a role; certificates issued over HTTP. */
  async function setup(ttl = '1h'): Promise<{ mount: string; mountId: string; issue(): Promise<string> }> {
    const { mount } = await mountWithRoot(v);
    await role(v, mount, 'web', { allow_any_name: true, key_type: 'ec', ttl });
    const mountId = (await server.deps.pki.mounts.resolve(`${mount}/x`))!.mount.id;
    return {
      mount,
      mountId,
      issue: async () => {
        const r = await v('POST', `${mount}/issue/web`, { body: { common_name: 'a.example.com' } });
        assert.equal(r.status, 200, r.text);
        return r.json.data.serial_number as string;
      },
    };
  }

  it('status: unknown, good, revoked (any serial form); issuers report theirs', async () => {
    const m = await setup();
    const serial = await m.issue();
    assert.equal((await revocation.status(m.mountId, '01:02')).status, 'unknown');
    const good = await revocation.status(m.mountId, serial.toUpperCase().replace(/:/g, '-'));
    assert.equal(good.status, 'good');
    assert.equal(good.serial, normalizeSerial(serial));
    assert.equal(good.revokedAt, null);
    const r = await revocation.revoke(m.mountId, { serialNumber: serial }, { requireKey: false });
    assert.equal(r.kind, 'revoked');
    const revoked = await revocation.status(m.mountId, serial);
    assert.equal(revoked.status, 'revoked');
    assert.equal(revoked.revokedAt?.getTime(), r.kind === 'revoked' ? r.revokedAt.getTime() : NaN);
    const issuer = (await v('GET', `${m.mount}/issuer/default`)).json.data;
    const rootStatus = await revocation.status(
      m.mountId,
      (await v('GET', `${m.mount}/issuers?list=true`)).json.data.key_info[issuer.issuer_id].serial_number,
    );
    assert.equal(rootStatus.status, 'good');
  });

  it('onRevoked tells listeners each newly revoked serial once, after commit', async () => {
    const m = await setup();
    const seen: string[] = [];
    revocation.onRevoked((mountId, serials) => {
      if (mountId === m.mountId) seen.push(...serials);
    });
    const serials = await Promise.all(Array.from({ length: 12 }, () => m.issue()));
    await Promise.all(serials.map((s) => revocation.revoke(m.mountId, { serialNumber: s }, { requireKey: false })));
    assert.deepEqual([...seen].sort(), serials.map((s) => normalizeSerial(s)).sort());
    // Already revoked: nothing new to tell.
    await revocation.revoke(m.mountId, { serialNumber: serials[0]! }, { requireKey: false });
    assert.equal(seen.length, serials.length);
    // Every one is on the stored CRL.
    const crl = await crls.fetch(m.mountId, 'default', 'complete');
    const parsed = parseCrl(crl!.der);
    assert.deepEqual(parsed.entries.map((e) => e.serialHex).sort(), serials.map((s) => normalizeSerial(s)).sort());
  });

  it('a CRL read waits for every build this node queued, not only the one running', async () => {
    const m = await setup();
    await crls.drain();
    const first = (await crls.fetch(m.mountId, 'default', 'complete'))!.crlNumber;
    // One build runs and a second waits behind it (an issuer change, then its URLs).
    crls.rebuildInBackground(m.mountId);
    await new Promise((r) => setImmediate(r));
    crls.rebuildInBackground(m.mountId);
    const read = await crls.fetch(m.mountId, 'default', 'complete');
    assert.equal(read!.crlNumber, first + 2);
  });

  it('an expired certificate is not revoked: a warning, and its status stays good', async () => {
    const m = await setup('2m');
    const serial = await m.issue();
    clock.advance(180);
    try {
      const r = await revocation.revoke(m.mountId, { serialNumber: serial }, { requireKey: false });
      assert.equal(r.kind, 'expired');
      assert.match(r.kind === 'expired' ? r.warning : '', /already expired; refusing to add to CRL/);
      assert.equal((await revocation.status(m.mountId, serial)).status, 'good');
      const http = await v('POST', `${m.mount}/revoke`, { body: { serial_number: serial } });
      assert.equal(http.status, 200, http.text);
      assert.equal(http.json.data, null);
      assert.match(http.json.warnings[0], /already expired/);
    } finally {
      clock.advance(-180);
    }
  });

  it('max_crl_entries: a CRL that would exceed it is not built; the revocation stands with a warning', async () => {
    const m = await setup();
    assert.equal((await v('POST', `${m.mount}/config/crl`, { body: { max_crl_entries: 1 } })).status, 200);
    const [a, b] = [await m.issue(), await m.issue()];
    const first = await v('POST', `${m.mount}/revoke`, { body: { serial_number: a } });
    assert.equal(first.json.warnings, null);
    const second = await v('POST', `${m.mount}/revoke`, { body: { serial_number: b } });
    assert.equal(second.status, 200, second.text);
    assert.match(second.json.warnings[0], /refusing to build CRL with 2 entries/);
    assert.equal((await revocation.status(m.mountId, b)).status, 'revoked');
    const crl = parseCrl((await crls.fetch(m.mountId, 'default', 'complete'))!.der);
    assert.deepEqual(
      crl.entries.map((e) => e.serialHex),
      [normalizeSerial(a)],
    );
  });

  return { clock };
});
