import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CachedValue, PeerChanges } from './peer-changes.js';

describe('peer changes', () => {
  it('does nothing outside a cluster: the epoch stands and nothing waits', () => {
    const peers = new PeerChanges();
    peers.changed();
    assert.equal(peers.epoch, 0);
    assert.equal(peers.settled(), undefined);
  });

  it('holds settled() until every report was taken, and survives a report that fails', async () => {
    const peers = new PeerChanges();
    const taken: Array<() => void> = [];
    let calls = 0;
    peers.connect(() => {
      calls++;
      if (calls === 2) return Promise.reject(new Error('primary gone'));
      return new Promise<void>((resolve) => taken.push(resolve));
    });
    peers.changed();
    peers.changed();
    const settled = peers.settled();
    assert.ok(settled, 'a report is waiting');
    let done = false;
    void settled.then(() => (done = true));
    await new Promise((r) => setImmediate(r));
    assert.equal(done, false, 'not before the other workers took the change');
    taken[0]!();
    await settled;
    assert.equal(done, true);
    assert.equal(peers.settled(), undefined, 'nothing left waiting');
  });

  it('moves the epoch when another worker reports', () => {
    const peers = new PeerChanges();
    peers.peerChanged();
    peers.peerChanged();
    assert.equal(peers.epoch, 2);
  });
});

describe('a cached value', () => {
  const make = (now: { t: number }) => {
    const peers = new PeerChanges();
    return { peers, v: new CachedValue<string>({ nowMs: () => now.t, ttlMs: 1000, peers }) };
  };

  it('is trusted for its time bound only', async () => {
    const now = { t: 10_000 };
    const { v } = make(now);
    assert.equal(v.now(), undefined);
    assert.equal(await v.load(async () => 'a'), 'a');
    now.t += 999;
    assert.equal(v.now(), 'a');
    now.t += 1;
    assert.equal(v.now(), undefined);
  });

  it('is dropped when another worker reports a change, even one made while it was being read', async () => {
    const now = { t: 10_000 };
    const { peers, v } = make(now);
    await v.load(async () => 'a');
    peers.peerChanged();
    assert.equal(v.now(), undefined, 'loaded before the report');
    await v.load(async () => {
      peers.peerChanged();
      return 'b';
    });
    assert.equal(v.now(), undefined, 'read while a report arrived: not trusted');
    await v.load(async () => 'c');
    assert.equal(v.now(), 'c');
  });

  it('reports its own change to the other workers when forgotten', async () => {
    const now = { t: 10_000 };
    const { peers, v } = make(now);
    let reports = 0;
    peers.connect(async () => {
      reports++;
    });
    await v.load(async () => 'a');
    v.forget();
    assert.equal(v.now(), undefined);
    await peers.settled();
    assert.equal(reports, 1);
  });
});
