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

  it('shares one read among the callers that arrive while it runs, but not across a change', async () => {
    const now = { t: 10_000 };
    const { peers, v } = make(now);
    let reads = 0;
    const gate: Array<() => void> = [];
    const read = () =>
      new Promise<string>((resolve) => {
        const n = ++reads;
        gate.push(() => resolve(`v${n}`));
      });
    const first = [v.load(read), v.load(read), v.load(read)];
    assert.equal(reads, 1, 'callers during one read share it');
    // A change through this process: a caller after it must not get the read begun before it.
    v.forget();
    const afterForget = v.load(read);
    assert.equal(reads, 2);
    peers.peerChanged();
    const afterReport = v.load(read);
    assert.equal(reads, 3);
    for (const open of gate) open();
    assert.deepEqual(await Promise.all(first), ['v1', 'v1', 'v1']);
    assert.equal(await afterForget, 'v2');
    assert.equal(await afterReport, 'v3');
    // Only the read begun after the last change is kept.
    assert.equal(v.now(), 'v3');
    // Once it has settled, the next load reads again.
    const next = v.load(read);
    assert.equal(reads, 4);
    gate[3]!();
    assert.equal(await next, 'v4');
  });

  it('keeps nothing from a read that began before a local change', async () => {
    const now = { t: 10_000 };
    const { v } = make(now);
    let open: (s: string) => void = () => undefined;
    const stale = v.load(() => new Promise<string>((resolve) => (open = resolve)));
    v.forget();
    open('before the change');
    assert.equal(await stale, 'before the change');
    assert.equal(v.now(), undefined);
  });

  it('passes a failed read to every caller that shared it, and reads again after', async () => {
    const now = { t: 10_000 };
    const { v } = make(now);
    let fail: (e: Error) => void = () => undefined;
    const shared = [0, 1].map(() => v.load(() => new Promise<string>((_, reject) => (fail = reject))));
    fail(new Error('down'));
    for (const p of shared) await assert.rejects(p, /down/);
    assert.equal(await v.load(async () => 'up'), 'up');
    assert.equal(v.now(), 'up');
  });
});
