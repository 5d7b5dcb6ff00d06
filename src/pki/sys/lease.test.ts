import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { leaseListKeys, leaseTtl } from './lease.js';

describe('lease rules', () => {
  const ids = ['pki/issue/web/AAA', 'pki/issue/web/BBB', 'pki/issue/api/CCC', 'pki/sign/web/DDD', 'pki2/issue/x/EEE'];
  it('lists the next path element under a prefix', () => {
    assert.deepEqual(leaseListKeys(ids, ''), ['pki/', 'pki2/']);
    assert.deepEqual(leaseListKeys(ids, 'pki/'), ['issue/', 'sign/']);
    assert.deepEqual(leaseListKeys(ids, 'pki/issue/web/'), ['AAA', 'BBB']);
    assert.deepEqual(leaseListKeys(ids, 'nothing/'), []);
  });
  it('reports the remaining TTL, never negative', () => {
    const now = new Date('2026-01-01T00:00:00Z');
    assert.equal(leaseTtl({ expiresAt: new Date(now.getTime() + 90_500) }, now), 90);
    assert.equal(leaseTtl({ expiresAt: new Date(now.getTime() - 1000) }, now), 0);
  });
});
