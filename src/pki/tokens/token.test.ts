import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  TOKEN_DEFAULT_TTL,
  TOKEN_MAX_TTL,
  isExpired,
  planRenewal,
  planToken,
  remainingTtl,
  sanitizePolicies,
  tokenDisplayName,
} from './token.js';
import type { CreateTokenRequest, CreatorView, TokenEntry } from './token.js';

const NOW = new Date('2026-01-01T00:00:00Z');
const req = (over: Partial<CreateTokenRequest> = {}): CreateTokenRequest => ({
  noParent: false,
  noDefaultPolicy: false,
  renewable: true,
  ttl: 0,
  explicitMaxTtl: 0,
  period: 0,
  displayName: '',
  numUses: 0,
  type: '',
  orphanPath: false,
  path: 'auth/token/create',
  ...over,
});
const ROOT: CreatorView = { policies: ['root'], accessor: null, privileged: true };
const PLAIN: CreatorView = { policies: ['default', 'web'], accessor: 'parent-acc', privileged: false };

describe('token rules', () => {
  it('sanitizes policy lists and adds default except to root tokens', () => {
    assert.deepEqual(sanitizePolicies([' Web', 'web', 'ops', ''], true), ['default', 'ops', 'web']);
    assert.deepEqual(sanitizePolicies(['root'], true), ['root']);
    assert.deepEqual(sanitizePolicies(['web'], false), ['web']);
  });

  it('shapes display names as Vault does', () => {
    assert.equal(tokenDisplayName(''), 'token');
    assert.equal(tokenDisplayName('CI Runner #1'), 'token-ci-runner-1');
  });

  it('gives root tokens no expiry and others the default TTL, capped by the maximum and explicit max', () => {
    assert.equal(planToken(ROOT, req(), NOW).expiresAt, null);
    const plain = planToken(ROOT, req({ policies: ['web'] }), NOW);
    assert.equal(plain.ttl, TOKEN_DEFAULT_TTL);
    assert.equal(plain.parentAccessor, null);
    assert.equal(plain.orphan, false);
    const capped = planToken(ROOT, req({ policies: ['web'], ttl: TOKEN_MAX_TTL * 2 }), NOW);
    assert.equal(capped.ttl, TOKEN_MAX_TTL);
    assert.equal(capped.warnings.length, 1);
    const explicit = planToken(ROOT, req({ policies: ['web'], ttl: 7200, explicitMaxTtl: 3600 }), NOW);
    assert.equal(explicit.ttl, 3600);
    assert.equal(planToken(ROOT, req({ policies: ['web'], explicitMaxTtl: 600 }), NOW).ttl, 600);
    assert.equal(planToken(ROOT, req({ policies: ['web'], period: TOKEN_MAX_TTL * 3 }), NOW).ttl, TOKEN_MAX_TTL * 3);
  });

  it('enforces the subset rule and the privileged options', () => {
    assert.deepEqual(planToken(PLAIN, req(), NOW).policies, ['default', 'web']);
    assert.equal(planToken(PLAIN, req(), NOW).parentAccessor, 'parent-acc');
    assert.deepEqual(planToken(PLAIN, req({ policies: ['web'] }), NOW).policies, ['default', 'web']);
    assert.throws(() => planToken(PLAIN, req({ policies: ['ops'] }), NOW), /subset of parent/);
    assert.throws(() => planToken(PLAIN, req({ policies: ['root'] }), NOW), /parent token being root/);
    assert.throws(
      () => planToken({ ...PLAIN, privileged: true }, req({ policies: ['root'] }), NOW),
      /parent token being root/,
    );
    assert.deepEqual(planToken({ ...PLAIN, privileged: true }, req({ policies: ['ops'] }), NOW).policies, [
      'default',
      'ops',
    ]);
    assert.throws(() => planToken(PLAIN, req({ noParent: true }), NOW), /orphan/);
    const orphan = planToken(PLAIN, req({ orphanPath: true }), NOW);
    assert.equal(orphan.orphan, true);
    assert.equal(orphan.parentAccessor, null);
    assert.throws(() => planToken(PLAIN, req({ id: 'x' }), NOW), /token id/);
    assert.throws(() => planToken(PLAIN, req({ period: 60 }), NOW), /periodic/);
    assert.throws(() => planToken(PLAIN, req({ numUses: -1 }), NOW), /negative/);
    assert.throws(() => planToken(ROOT, req({ type: 'batch' }), NOW), /type/);
  });

  it('renews from now, within the explicit max, and refuses non-renewable tokens', () => {
    const t: TokenEntry = {
      hash: 'h',
      accessor: 'a',
      parentAccessor: null,
      policies: ['web'],
      meta: null,
      displayName: 'token',
      numUses: 0,
      renewable: true,
      orphan: false,
      ttl: 3600,
      explicitMaxTtl: 5400,
      period: 0,
      path: 'auth/token/create',
      createdAt: NOW,
      expiresAt: new Date(NOW.getTime() + 3600_000),
      lastRenewalAt: null,
      boundCidrs: null,
      maxTtl: 0,
    };
    const later = new Date(NOW.getTime() + 1800_000);
    assert.equal(planRenewal(t, 0, later).ttl, 3600);
    const r = planRenewal(t, 0, new Date(NOW.getTime() + 3000_000));
    assert.equal(r.ttl, 2400);
    assert.equal(r.expiresAt?.toISOString(), new Date(NOW.getTime() + 5400_000).toISOString());
    assert.throws(() => planRenewal({ ...t, renewable: false }, 0, later), /not renewable/);
    assert.equal(remainingTtl(t, later), 1800);
    assert.equal(isExpired(t, new Date(NOW.getTime() + 3600_000)), true);
    assert.equal(isExpired({ expiresAt: null }, later), false);
  });
});
