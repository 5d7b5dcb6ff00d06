import { it } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../src/shared/clock.js';
import { hvacSkip, runHvacScript } from '../support/hvac-script.js';
import { describeWithServer } from '../support/test-server.js';

/** hvac (Debian package python3-hvac) driving tidy, tidy-status, tidy-cancel and config/auto-tidy. */
describeWithServer('hvac tidy', { skip: hvacSkip }, (server) => {
  const clock = new ManualClock('2030-06-01T00:00:00.000Z');

  const hvac = async (...args: string[]): Promise<string> => {
    const { code, out } = await runHvacScript('hvac-tidy.py', { url: server.url, token: server.rootToken }, args);
    assert.equal(code, 0, out);
    return out;
  };

  it('hvac starts a tidy, reads its status and auto-tidy config; the worker removes the expired cert', async () => {
    const out = await hvac('start');
    for (const s of ['setup', 'status before', 'auto-tidy config', 'tidy started'])
      assert.match(out, new RegExp(`^ok ${s}$`, 'm'));
    const serial = /^serial (\S+)$/m.exec(out)?.[1];
    assert.ok(serial, out);
    clock.advance(2 * 3600);
    await server.deps.worker.runUntilIdle();
    assert.match(await hvac('check', serial), /^ok tidy finished$/m);
  });

  return { clock };
});
