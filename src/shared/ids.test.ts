import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isTfeIdOf, pooledRandomBytes, randomBase58, tfeId, timeOrderedBase58, timeOrderedUuid } from './ids.js';

describe('isTfeIdOf', () => {
  const cases: Array<[string, string, boolean]> = [
    ['run', 'run-AbCdEfGh12345678', true],
    ['run', tfeId('run'), true],
    ['run', 'run-bogus', false],
    ['run', 'run-AbCdEfGh123456789', false],
    ['run', 'run-AbCdEfGh1234567_', false],
    ['run', 'ws-AbCdEfGh12345678', false],
    ['run', 'runAAbCdEfGh12345678', false],
    ['run', '', false],
  ];
  for (const [prefix, id, want] of cases) {
    it(`${prefix} ${JSON.stringify(id)} → ${want}`, () => assert.equal(isTfeIdOf(prefix, id), want));
  }
});

describe('random ids', () => {
  it('randomBase58 gives the asked length in the base58 alphabet, different each time', () => {
    const seen = new Set<string>();
    for (let len = 1; len < 70; len++) {
      const id = randomBase58(len);
      assert.match(id, new RegExp(`^[1-9A-HJ-NP-Za-km-z]{${len}}$`));
      seen.add(id);
    }
    const long = new Set(Array.from({ length: 2000 }, () => randomBase58(24)));
    assert.equal(long.size, 2000);
  });

  it('pooledRandomBytes never hands out the same bytes twice across refills', () => {
    const seen = new Set<string>();
    // 20-byte reads straddle the 4 KB refill many times over.
    for (let i = 0; i < 5000; i++) {
      const b = pooledRandomBytes(20);
      assert.equal(b.length, 20);
      seen.add(b.toString('hex'));
    }
    assert.equal(seen.size, 5000);
    assert.equal(pooledRandomBytes(1000).length, 1000);
  });

  it('timeOrderedBase58 sorts by its time, then by chance', () => {
    const t0 = Date.UTC(2026, 0, 1);
    const ids = [t0, t0 + 1, t0 + 57, t0 + 58, t0 + 3_600_000, t0 + 86_400_000 * 365 * 50].map((t) =>
      timeOrderedBase58(t, 16),
    );
    for (const id of ids) assert.match(id, /^[1-9A-HJ-NP-Za-km-z]{24}$/);
    assert.deepEqual([...ids].sort(), ids);
    assert.notEqual(timeOrderedBase58(t0, 16), timeOrderedBase58(t0, 16));
    assert.equal(timeOrderedBase58(t0, 16).slice(0, 8), timeOrderedBase58(t0, 4).slice(0, 8));
  });
});

describe('timeOrderedUuid', () => {
  it('makes version 7 UUIDs that sort in the order they were made, within a millisecond too', () => {
    const t = Date.UTC(2026, 0, 1);
    // 5,000 ids in two milliseconds: more than the 4,096 sequence values of one.
    const ids = [
      ...Array.from({ length: 3000 }, () => timeOrderedUuid(t)),
      ...Array.from({ length: 2000 }, () => timeOrderedUuid(t + 1)),
    ];
    for (const id of ids) assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.deepEqual([...ids].sort(), ids);
    assert.equal(new Set(ids).size, ids.length);
    // The first 48 bits are the milliseconds.
    assert.equal(parseInt(ids[0]!.replace('-', '').slice(0, 12), 16), t);
    // A clock that steps back does not break the order.
    const after = timeOrderedUuid(t - 60_000);
    assert.ok(after > ids[ids.length - 1]!);
  });
});
