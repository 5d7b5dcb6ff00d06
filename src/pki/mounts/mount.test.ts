import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  SYSTEM_MAX_LEASE_TTL,
  assertNoPathConflict,
  assertTtlsConsistent,
  effectiveTtls,
  matchMount,
  mountAccessor,
  normalizeMountPath,
} from './mount.js';

describe('mount rules', () => {
  it('normalizes mount paths and refuses reserved or malformed ones', () => {
    assert.equal(normalizeMountPath('/pki/'), 'pki');
    assert.equal(normalizeMountPath('pki/int-2024'), 'pki/int-2024');
    for (const bad of ['', '/', 'sys', 'sys/pki', 'auth/x', 'object', 'Object/x', 'a//b', 'a b', '../x', '-x']) {
      assert.throws(() => normalizeMountPath(bad), { kind: 'invalid' }, bad);
    }
  });

  it('refuses equal, enclosing and enclosed paths', () => {
    assert.throws(() => assertNoPathConflict('pki', ['pki']), /in use at pki\//);
    assert.throws(() => assertNoPathConflict('pki/int', ['pki']), /in use at pki\//);
    assert.throws(() => assertNoPathConflict('pki', ['pki/int']), /in use at pki\/int\//);
    assert.doesNotThrow(() => assertNoPathConflict('pki-int', ['pki', 'pkix/a']));
  });

  it('falls back to the system TTLs and keeps the default under a tuned-down max', () => {
    assert.deepEqual(effectiveTtls({ defaultLeaseTtl: 0, maxLeaseTtl: 0 }), {
      defaultLeaseTtl: SYSTEM_MAX_LEASE_TTL,
      maxLeaseTtl: SYSTEM_MAX_LEASE_TTL,
    });
    assert.deepEqual(effectiveTtls({ defaultLeaseTtl: 0, maxLeaseTtl: 3600 }), {
      defaultLeaseTtl: 3600,
      maxLeaseTtl: 3600,
    });
    assert.deepEqual(effectiveTtls({ defaultLeaseTtl: 60, maxLeaseTtl: 0 }), {
      defaultLeaseTtl: 60,
      maxLeaseTtl: SYSTEM_MAX_LEASE_TTL,
    });
    assert.throws(() => assertTtlsConsistent(7200, 3600), { kind: 'invalid' });
    assert.throws(() => assertTtlsConsistent(SYSTEM_MAX_LEASE_TTL + 1, 0), { kind: 'invalid' });
    assert.doesNotThrow(() => assertTtlsConsistent(3600, 3600));
    assert.doesNotThrow(() => assertTtlsConsistent(0, 60));
  });

  it('picks the longest mount that prefixes the path on a segment boundary', () => {
    const mounts = [{ path: 'pki' }, { path: 'team/pki' }, { path: 'team/pki-old' }];
    assert.deepEqual(matchMount(mounts, 'pki/issue/web'), { mount: { path: 'pki' }, rest: 'issue/web' });
    assert.deepEqual(matchMount(mounts, 'pki'), { mount: { path: 'pki' }, rest: '' });
    assert.deepEqual(matchMount(mounts, 'team/pki-old/ca'), { mount: { path: 'team/pki-old' }, rest: 'ca' });
    assert.equal(matchMount(mounts, 'pkix/ca'), undefined);
    assert.equal(matchMount(mounts, 'team/other'), undefined);
  });

  it('derives a Vault-style accessor from the mount id', () => {
    assert.equal(mountAccessor({ id: '0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0', type: 'pki' }), 'pki_0f1e2d3c');
  });
});
