import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { WindowLimiter, normalizeQuotaPath, pathCovers, quotaFor } from './quota.js';
import type { RateLimitQuota } from './quota.js';

const quota = (name: string, path: string, rate = 3, extra: Partial<RateLimitQuota> = {}): RateLimitQuota => ({
  name,
  path,
  rate,
  intervalSeconds: 10,
  blockIntervalSeconds: 0,
  inheritable: path === '',
  ...extra,
});

describe('rate-limit quotas', () => {
  it('normalizes paths and matches on whole segments', () => {
    assert.equal(normalizeQuotaPath('/pki/'), 'pki');
    assert.equal(pathCovers('pki', 'pki/issue/web'), true);
    assert.equal(pathCovers('pki', 'pki'), true);
    assert.equal(pathCovers('pki', 'pki2/issue/web'), false, 'a prefix that is not a whole segment');
    assert.equal(pathCovers('', 'sys/mounts'), true, 'the global quota covers everything');
  });

  it('the most specific quota wins: path over mount over global', () => {
    const qs = [quota('global', ''), quota('mount', 'pki'), quota('path', 'pki/issue/web')];
    assert.equal(quotaFor(qs, 'pki/issue/web')?.name, 'path');
    assert.equal(quotaFor(qs, 'pki/issue/other')?.name, 'mount');
    assert.equal(quotaFor(qs, 'sys/mounts')?.name, 'global');
    assert.equal(quotaFor([quota('mount', 'pki')], 'sys/mounts'), undefined);
  });

  it('admits `rate` requests per client and window, then refuses until the next window', () => {
    const l = new WindowLimiter();
    const q = quota('q', 'pki', 3);
    const t0 = 1_000_000; // a window boundary for a 10 s interval
    const got = [1, 2, 3, 4].map((i) => l.admit(q, '10.0.0.1', t0 + i));
    assert.deepEqual(
      got.map((a) => a.allowed),
      [true, true, true, false],
    );
    assert.deepEqual(
      got.map((a) => a.remaining),
      [2, 1, 0, 0],
    );
    assert.equal(got[3]?.resetSeconds, 10);
    assert.equal(l.admit(q, '10.0.0.2', t0 + 5).allowed, true, 'another client has its own count');
    assert.equal(l.admit(q, '10.0.0.1', t0 + 10_000).allowed, true, 'a new window starts from zero');
  });

  it('block_interval shuts a client out for that long after it went over', () => {
    const l = new WindowLimiter();
    const q = quota('q', 'pki', 1, { blockIntervalSeconds: 30 });
    const t0 = 2_000_000;
    assert.equal(l.admit(q, 'c', t0).allowed, true);
    const over = l.admit(q, 'c', t0 + 1);
    assert.equal(over.allowed, false);
    assert.equal(over.resetSeconds, 30);
    assert.equal(l.admit(q, 'c', t0 + 15_000).allowed, false, 'still blocked in the next window');
    assert.equal(l.admit(q, 'c', t0 + 31_000).allowed, true, 'free again after the block');
  });

  it('counts from other nodes: a seeded window and merged totals hold one limit for the cluster', () => {
    const l = new WindowLimiter();
    const q = quota('q', 'pki', 5);
    const t0 = 3_000_000;
    l.seed(q, 'c', t0, 4);
    assert.equal(l.admit(q, 'c', t0 + 1).allowed, true);
    assert.equal(l.admit(q, 'c', t0 + 2).allowed, false, 'four elsewhere and one here make five');
    const sent = l.takeUnreported();
    assert.deepEqual(sent, [{ quota: 'q', client: 'c', windowStart: t0, delta: 1 }]);
    assert.deepEqual(l.takeUnreported()[0]?.delta, 0, 'reported once');
    l.merge('q', 'c', t0, 5);
    assert.equal(l.admit(q, 'c', t0 + 3).allowed, false);
    l.forgetQuota('q');
    assert.equal(l.knows(q, 'c', t0 + 4), false);
  });
});
