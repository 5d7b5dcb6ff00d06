import { it } from 'node:test';
import assert from 'node:assert/strict';
import { hvacSkip, runHvacScript } from '../support/hvac-script.js';
import { describeWithServer } from '../support/test-server.js';

/**
 * The hvac client (Debian package python3-hvac, hvac 0.11.2) against the real server:
 * the strongest check that the /v1 plumbing is what Vault clients expect.
 */
describeWithServer('hvac against /v1', { skip: hvacSkip }, (server) => {
  it('manages mounts, tunes, policies and tokens through hvac', async () => {
    const { code, out } = await runHvacScript('vault-hvac.py', { url: server.url, token: server.rootToken });
    assert.equal(code, 0, out);
    for (const step of ['health', 'mounts', 'policies', 'tokens', 'cleanup'])
      assert.match(out, new RegExp(`^ok ${step}$`, 'm'));
  });
});
