import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CachedEntries, CachedValue, PeerChanges } from './peer-changes.js';

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

describe('cached entries by key', () => {
  const make = (now: { t: number }) => {
    const peers = new PeerChanges();
    return { peers, c: new CachedEntries<string>({ nowMs: () => now.t, ttlMs: 1000, peers, max: 3 }) };
  };
  const gated = () => {
    let reads = 0;
    const gate: Array<(v: string) => void> = [];
    const read = () =>
      new Promise<string>((resolve) => {
        reads++;
        gate.push(resolve);
      });
    return { read, gate, reads: () => reads };
  };

  it('keeps each value until its own time, never beyond the bound', async () => {
    const now = { t: 10_000 };
    const { c } = make(now);
    await c.load(
      'a',
      async () => 'A',
      () => 10_300,
    );
    await c.load(
      'b',
      async () => 'B',
      () => 99_999,
    );
    await c.load(
      'n',
      async () => 'N',
      () => undefined,
    );
    assert.equal(c.get('n'), undefined, 'a value its read chose not to keep');
    now.t = 10_299;
    assert.deepEqual([c.get('a'), c.get('b')], ['A', 'B']);
    now.t = 10_300;
    assert.equal(c.get('a'), undefined);
    now.t = 11_000;
    assert.equal(c.get('b'), undefined, 'capped at ttlMs');
  });

  it('shares a read per key, but not a value its read did not keep', async () => {
    const now = { t: 10_000 };
    const { c } = make(now);
    const g = gated();
    const a = [c.load('a', g.read), c.load('a', g.read)];
    const b = c.load('b', g.read);
    assert.equal(g.reads(), 2, 'one read for a, one for b');
    g.gate[0]!('A1');
    g.gate[1]!('B1');
    assert.deepEqual(await Promise.all([...a, b]), ['A1', 'A1', 'B1']);

    const u = gated();
    const drop = () => undefined;
    const first = c.load('u', u.read, drop);
    const second = c.load('u', u.read, drop);
    assert.equal(u.reads(), 1, 'the second waits for the first');
    u.gate[0]!('U1');
    assert.equal(await first, 'U1');
    await new Promise((r) => setImmediate(r));
    assert.equal(u.reads(), 2, 'then, the value not kept, reads for itself');
    u.gate[1]!('U2');
    assert.equal(await second, 'U2');
  });

  it('forgets the keys chosen, here or everywhere, and keeps no read begun before', async () => {
    const now = { t: 10_000 };
    const { peers, c } = make(now);
    let reports = 0;
    peers.connect(async () => {
      reports++;
    });
    await c.load('m1\nx', async () => 'X');
    await c.load('m2\ny', async () => 'Y');
    const g = gated();
    const stale = c.load('m1\nz', g.read);
    c.forgetHere((k) => k.startsWith('m1\n'));
    assert.equal(c.get('m1\nx'), undefined);
    assert.equal(c.get('m2\ny'), 'Y');
    const fresh = c.load('m1\nz', g.read);
    assert.equal(g.reads(), 2, 'a read begun before the change is not shared after it');
    g.gate[1]!('new');
    assert.equal(await fresh, 'new');
    g.gate[0]!('old');
    assert.equal(await stale, 'old');
    assert.equal(c.get('m1\nz'), 'new', 'the read begun before the change, finishing last, is not kept');
    assert.equal(reports, 0, 'forgetHere tells no other worker');
    c.forget();
    assert.equal(c.get('m2\ny'), undefined);
    await peers.settled();
    assert.equal(reports, 1);
  });

  it('holds at most max entries, dropping the oldest', async () => {
    const now = { t: 10_000 };
    const { c } = make(now);
    for (const k of ['a', 'b', 'c', 'd']) await c.load(k, async () => k.toUpperCase());
    assert.deepEqual(
      ['a', 'b', 'c', 'd'].map((k) => c.get(k)),
      [undefined, 'B', 'C', 'D'],
    );
  });
});
