import { it } from 'node:test';
import assert from 'node:assert/strict';
import { hvacSkip, runHvacScript } from '../support/hvac-script.js';
import { describeWithServer } from '../support/test-server.js';

/**
 * hvac (Debian package python3-hvac) driving sign-intermediate, sign-verbatim and
 * sign-self-issued (with and without sudo) against the real server; openssl checks the
 * certificates (hvac-pki-privileged.py).
 */
describeWithServer('hvac privileged signing', { skip: hvacSkip }, (server) => {
  it('signs intermediates, verbatim CSRs and self-issued roots with hvac', async () => {
    const { code, out } = await runHvacScript('hvac-pki-privileged.py', { url: server.url, token: server.rootToken });
    assert.equal(code, 0, out);
    for (const s of ['mount', 'sign_intermediate', 'sign_verbatim', 'sign_self_issued'])
      assert.match(out, new RegExp(`^ok ${s}$`, 'm'));
  });
});
