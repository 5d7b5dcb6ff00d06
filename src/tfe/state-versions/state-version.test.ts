import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DomainError } from '../../shared/errors.js';
import {
  backingDataTransition,
  checkAgainstCurrent,
  checkFileMatchesClaims,
  checkMd5,
  decodeBase64Strict,
  isTransitionNotAllowed,
  parseStatusFilter,
  retentionMayDelete,
} from './state-version.js';
import type { BackingDataAction, StateClaims, StateVersionStatus } from './state-version.js';

function kindOf(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (err) {
    assert.ok(err instanceof DomainError, `expected a DomainError, got ${String(err)}`);
    return err.kind;
  }
}

describe('backingDataTransition', () => {
  // Every row of the specification's transition table, plus the refusals it implies.
  const rows: Array<[BackingDataAction, StateVersionStatus, boolean, StateVersionStatus | 'refused']> = [
    ['soft_delete_backing_data', 'finalized', false, 'backing_data_soft_deleted'],
    ['soft_delete_backing_data', 'finalized', true, 'refused'],
    ['soft_delete_backing_data', 'pending', false, 'refused'],
    ['soft_delete_backing_data', 'discarded', false, 'refused'],
    ['soft_delete_backing_data', 'backing_data_soft_deleted', false, 'refused'],
    ['soft_delete_backing_data', 'backing_data_permanently_deleted', false, 'refused'],
    ['restore_backing_data', 'backing_data_soft_deleted', false, 'finalized'],
    ['restore_backing_data', 'finalized', false, 'finalized'],
    ['restore_backing_data', 'finalized', true, 'finalized'],
    ['restore_backing_data', 'pending', false, 'pending'],
    ['restore_backing_data', 'discarded', false, 'discarded'],
    ['restore_backing_data', 'backing_data_permanently_deleted', false, 'refused'],
    ['permanently_delete_backing_data', 'backing_data_soft_deleted', false, 'backing_data_permanently_deleted'],
    ['permanently_delete_backing_data', 'backing_data_soft_deleted', true, 'refused'],
    ['permanently_delete_backing_data', 'finalized', false, 'refused'],
    ['permanently_delete_backing_data', 'pending', false, 'refused'],
    ['permanently_delete_backing_data', 'backing_data_permanently_deleted', false, 'refused'],
  ];
  for (const [action, from, current, to] of rows) {
    it(`${action} from ${from}${current ? ' (current)' : ''} -> ${to}`, () => {
      if (to === 'refused') {
        try {
          backingDataTransition(action, from, current);
          assert.fail('expected a refusal');
        } catch (err) {
          assert.ok(isTransitionNotAllowed(err));
          assert.match((err as Error).message, /transition not allowed/);
        }
      } else {
        assert.equal(backingDataTransition(action, from, current), to);
      }
    });
  }
});

describe('checkAgainstCurrent', () => {
  const cur: StateClaims = { serial: 5, md5: 'a'.repeat(32), lineage: 'L1' };
  const rows: Array<[string, StateClaims | null, StateClaims, boolean, string | undefined]> = [
    ['no current version', null, { serial: 0, md5: 'b'.repeat(32), lineage: null }, false, undefined],
    ['higher serial', cur, { serial: 6, md5: 'b'.repeat(32), lineage: 'L1' }, false, undefined],
    ['lower serial', cur, { serial: 4, md5: 'b'.repeat(32), lineage: 'L1' }, false, 'conflict'],
    ['lower serial with force', cur, { serial: 4, md5: 'b'.repeat(32), lineage: 'L1' }, true, undefined],
    ['same serial, same md5', cur, { serial: 5, md5: 'A'.repeat(32), lineage: 'L1' }, false, undefined],
    ['same serial, other md5', cur, { serial: 5, md5: 'b'.repeat(32), lineage: 'L1' }, false, 'conflict'],
    ['other lineage', cur, { serial: 6, md5: 'b'.repeat(32), lineage: 'L2' }, false, 'conflict'],
    ['other lineage with force', cur, { serial: 6, md5: 'b'.repeat(32), lineage: 'L2' }, true, undefined],
    ['no lineage given', cur, { serial: 6, md5: 'b'.repeat(32), lineage: null }, false, undefined],
  ];
  for (const [name, current, next, force, expected] of rows) {
    it(name, () =>
      assert.equal(
        kindOf(() => checkAgainstCurrent(current, next, force)),
        expected,
      ),
    );
  }
});

describe('checkFileMatchesClaims and checkMd5', () => {
  const file = { serial: 3, lineage: 'L' };
  it('accepts matching claims', () => {
    checkFileMatchesClaims(file, { serial: 3, md5: '', lineage: 'L' }, false);
    checkFileMatchesClaims(file, { serial: 3, md5: '', lineage: null }, false);
  });
  it('rejects another serial with a pointer to serial', () => {
    try {
      checkFileMatchesClaims(file, { serial: 4, md5: '', lineage: 'L' }, false);
      assert.fail('expected an error');
    } catch (err) {
      assert.equal((err as DomainError).kind, 'invalid');
      assert.equal((err as DomainError).field, '/data/attributes/serial');
    }
  });
  it('rejects another lineage with a pointer to lineage', () => {
    try {
      checkFileMatchesClaims(file, { serial: 3, md5: '', lineage: 'X' }, false);
      assert.fail('expected an error');
    } catch (err) {
      assert.equal((err as DomainError).field, '/data/attributes/lineage');
    }
  });
  it('accepts mismatches when the setting allows them', () => {
    checkFileMatchesClaims(file, { serial: 9, md5: '', lineage: 'X' }, true);
  });
  it('compares MD5 case-insensitively', () => {
    checkMd5('abcdef0123456789abcdef0123456789', { serial: 0, md5: 'ABCDEF0123456789ABCDEF0123456789', lineage: null });
    assert.equal(
      kindOf(() => checkMd5('0'.repeat(32), { serial: 0, md5: '1'.repeat(32), lineage: null })),
      'invalid',
    );
  });
});

describe('decodeBase64Strict', () => {
  it('decodes padded standard base64', () => {
    assert.equal(decodeBase64Strict(Buffer.from('{"a":1}').toString('base64'))?.toString(), '{"a":1}');
    assert.equal(decodeBase64Strict('')?.length, 0);
  });
  for (const bad of ['abc', 'ab!d', 'a=bc', 'YWJj\n', 'YW_j', '====']) {
    it(`rejects ${JSON.stringify(bad)}`, () => assert.equal(decodeBase64Strict(bad), null));
  }
});

describe('parseStatusFilter', () => {
  it('parses one or several statuses', () => {
    assert.equal(parseStatusFilter(undefined), undefined);
    assert.deepEqual(parseStatusFilter('pending'), ['pending']);
    assert.deepEqual(parseStatusFilter('finalized,discarded'), ['finalized', 'discarded']);
  });
  it('rejects unknown statuses', () =>
    assert.equal(
      kindOf(() => parseStatusFilter('uploaded')),
      'invalid',
    ));
});

describe('retentionMayDelete', () => {
  const now = new Date('2026-07-01T00:00:00Z');
  const old = new Date('2025-12-01T00:00:00Z');
  const recent = new Date('2026-06-01T00:00:00Z');
  const policy = { keepLatest: 100, maxAgeDays: 180 };
  const base = { createdAt: old, isCurrent: false, holdsState: true, newerStateInWorkspace: true, newerStates: 100 };
  it('deletes versions beyond the newest 100 states that are neither current nor the newest of their workspace', () => {
    assert.equal(retentionMayDelete(base, policy, now), true);
  });
  it('keeps what was created since the 100th newest state', () => {
    assert.equal(retentionMayDelete({ ...base, newerStates: 99 }, policy, now), false);
    assert.equal(retentionMayDelete({ ...base, holdsState: false, newerStates: 99 }, policy, now), false);
  });
  it('keeps current versions, even without state', () => {
    assert.equal(retentionMayDelete({ ...base, isCurrent: true }, policy, now), false);
    assert.equal(
      retentionMayDelete({ ...base, isCurrent: true, holdsState: false, newerStateInWorkspace: false }, policy, now),
      false,
    );
  });
  it('keeps the newest state of each workspace, however many versions without state follow it', () => {
    assert.equal(retentionMayDelete({ ...base, newerStateInWorkspace: false }, policy, now), false);
  });
  it('deletes old versions without state even when no state follows them', () => {
    assert.equal(retentionMayDelete({ ...base, holdsState: false, newerStateInWorkspace: false }, policy, now), true);
  });
  it('keeps versions younger than six months, and everything when disabled', () => {
    assert.equal(retentionMayDelete({ ...base, createdAt: recent }, policy, now), false);
    assert.equal(retentionMayDelete(base, { keepLatest: 100, maxAgeDays: 0 }, now), false);
  });
});
