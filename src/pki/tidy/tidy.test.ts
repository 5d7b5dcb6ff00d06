import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  applyAutoTidyPatch,
  autoTidyDue,
  defaultAutoTidyConfig,
  formatGoDuration,
  signedDurationSeconds,
  tidyCutoff,
  tidyParamsFromRequest,
} from './tidy.js';
import { isDomainError } from '../../shared/errors.js';

const invalidWith = (re: RegExp) => (err: unknown) =>
  isDomainError(err) && err.kind === 'invalid' && re.test(err.message);

describe('tidy rules', () => {
  it('formats pause durations as Go does', () => {
    const cases: [number, string][] = [
      [0, '0s'],
      [5, '5s'],
      [60, '1m0s'],
      [90, '1m30s'],
      [3600, '1h0m0s'],
      [3725, '1h2m5s'],
      [90000, '25h0m0s'],
    ];
    for (const [s, text] of cases) assert.equal(formatGoDuration(s), text);
  });

  it('reads signed durations in seconds or Go syntax', () => {
    const cases: [string | number, number][] = [
      [60, 60],
      ['60', 60],
      ['72h', 259200],
      ['-72h', -259200],
      [-1, -1],
      ['1h30m', 5400],
      ['0s', 0],
    ];
    for (const [raw, want] of cases) assert.equal(signedDurationSeconds('x', raw), want, String(raw));
    assert.throws(
      () => signedDurationSeconds('safety_buffer', 'soon'),
      invalidWith(/error converting input "soon" for field "safety_buffer"/),
    );
  });

  it('fills defaults, honours the deprecated tidy_revocation_list, and refuses non-positive buffers', () => {
    const p = tidyParamsFromRequest({ flags: { tidy_cert_store: true }, tidyRevocationList: true });
    assert.equal(p.flags.tidy_cert_store, true);
    assert.equal(p.flags.tidy_revoked_certs, true);
    assert.equal(p.flags.tidy_expired_issuers, false);
    assert.deepEqual(
      [p.safetyBuffer, p.issuerSafetyBuffer, p.acmeAccountSafetyBuffer, p.revocationQueueSafetyBuffer, p.pauseDuration],
      [259200, 31536000, 2592000, 172800, 0],
    );
    assert.throws(
      () => tidyParamsFromRequest({ flags: {}, safetyBuffer: 0 }),
      invalidWith(/^safety_buffer must be greater than zero$/),
    );
    assert.throws(
      () => tidyParamsFromRequest({ flags: {}, pauseDuration: '-1s' }),
      invalidWith(/^received invalid, negative pause_duration$/),
    );
    assert.equal(tidyParamsFromRequest({ flags: {}, pauseDuration: '1m30s' }).pauseDuration, 90);
  });

  it('applies auto-tidy writes partially and tells when auto-tidy was turned on', () => {
    const base = defaultAutoTidyConfig();
    const on = applyAutoTidyPatch(base, { flags: { tidy_cert_store: true }, enabled: true, intervalDuration: '1h' });
    assert.equal(on.becameEnabled, true);
    assert.equal(on.config.intervalDuration, 3600);
    assert.equal(on.config.safetyBuffer, base.safetyBuffer);
    const again = applyAutoTidyPatch(on.config, { flags: {}, enabled: true, safetyBuffer: 60 });
    assert.equal(again.becameEnabled, false);
    assert.equal(again.config.flags.tidy_cert_store, true);
    assert.equal(again.config.safetyBuffer, 60);
    assert.throws(
      () => applyAutoTidyPatch(base, { flags: {}, enabled: true }),
      invalidWith(/no tidy operations were requested/),
    );
    assert.throws(
      () => applyAutoTidyPatch(base, { flags: {}, intervalDuration: -1 }),
      invalidWith(/interval_duration must be greater than or equal to zero/),
    );
  });

  it('is due when enabled, idle, and the interval since the last run has passed', () => {
    const last = new Date('2030-01-01T00:00:00Z');
    const at = (s: number) => new Date(last.getTime() + s * 1000);
    const cfg = { enabled: true, intervalDuration: 3600 };
    assert.equal(autoTidyDue(cfg, 'Finished', last, at(3599)), false);
    assert.equal(autoTidyDue(cfg, 'Finished', last, at(3600)), true);
    assert.equal(autoTidyDue(cfg, 'Running', last, at(7200)), false);
    assert.equal(autoTidyDue(cfg, 'Cancelling', last, at(7200)), false);
    assert.equal(autoTidyDue({ ...cfg, enabled: false }, 'Inactive', last, at(7200)), false);
    assert.equal(autoTidyDue(cfg, 'Inactive', null, at(0)), true);
  });

  it('cuts off at now minus the buffer', () => {
    assert.equal(tidyCutoff(new Date('2030-01-01T01:00:00Z'), 3600).toISOString(), '2030-01-01T00:00:00.000Z');
  });
});
