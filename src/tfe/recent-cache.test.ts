import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../shared/clock.js';
import { EXTERNAL_CHECK_MS, RecentCache } from './recent-cache.js';

describe('RecentCache', () => {
  it('keeps a value for its time to live, or until the given instant when that is sooner', () => {
    const clock = new ManualClock();
    const c = new RecentCache<string>({ clock, ttlMs: 2000, max: 10 });
    assert.equal(c.set('a', 'A', c.epoch()), true);
    assert.equal(c.set('b', 'B', c.epoch(), clock.now().getTime() + 500), true);
    clock.advance(0.5);
    assert.equal(c.get('a'), 'A');
    assert.equal(c.get('b'), undefined);
    clock.advance(1.5);
    assert.equal(c.get('a'), undefined);
  });

  it('refuses a value read before something was forgotten', () => {
    const clock = new ManualClock();
    const c = new RecentCache<string>({ clock, ttlMs: Infinity, max: 10 });
    const before = c.epoch();
    c.delete('other');
    assert.equal(c.set('a', 'stale', before), false);
    assert.equal(c.get('a'), undefined);
    const since = c.epoch();
    assert.equal(c.set('a', 'fresh', since), true);
    c.clear();
    assert.equal(c.get('a'), undefined);
    assert.equal(c.set('a', 'late', since), false);
  });

  it('holds at most `max` entries, oldest out first', () => {
    const c = new RecentCache<number>({ clock: new ManualClock(), ttlMs: Infinity, max: 2 });
    for (const [i, k] of ['a', 'b', 'c'].entries()) c.set(k, i, c.epoch());
    assert.equal(c.size, 2);
    assert.equal(c.get('a'), undefined);
    assert.equal(c.get('c'), 2);
  });

  it('empties itself when the external change counter moved, looking at most every EXTERNAL_CHECK_MS', () => {
    const clock = new ManualClock();
    let external = 1;
    let probes = 0;
    const c = new RecentCache<string>({
      clock,
      ttlMs: Infinity,
      max: 10,
      externalChanges: () => {
        probes++;
        return external;
      },
    });
    c.set('a', 'A', c.epoch());
    assert.equal(c.get('a'), 'A');
    external = 2;
    const seen = probes;
    assert.equal(c.get('a'), 'A', 'not looked at again within the interval');
    assert.equal(probes, seen);
    clock.advance(EXTERNAL_CHECK_MS / 1000);
    assert.equal(c.get('a'), undefined);
    c.set('a', 'A2', c.epoch());
    clock.advance(EXTERNAL_CHECK_MS / 1000);
    assert.equal(c.get('a'), 'A2', 'unchanged counter keeps entries');
  });

  it('with externalCheckMs 0 reads the counter every time: nothing committed elsewhere is answered from memory', () => {
    const clock = new ManualClock();
    let external = 1;
    const c = new RecentCache<string>({
      clock,
      ttlMs: Infinity,
      max: 10,
      externalChanges: () => external,
      externalCheckMs: 0,
    });
    // A value read before another process committed is stored, and dropped by the next read.
    const epoch = c.epoch();
    external = 2;
    assert.equal(c.set('a', 'old', epoch), true);
    assert.equal(c.get('a'), undefined, 'the commit elsewhere is seen without the clock moving');
    assert.equal(c.set('a', 'new', c.epoch()), true);
    assert.equal(c.get('a'), 'new');
    assert.equal(c.get('a'), 'new', 'an unchanged counter keeps entries');
  });
});
