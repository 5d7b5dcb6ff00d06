import { it } from 'node:test';
import assert from 'node:assert/strict';
import { hvacSkip, runHvacScript } from '../support/hvac-script.js';
import { describeWithServer } from '../support/test-server.js';

/**
 * hvac (Debian package python3-hvac) driving roles, issue, sign, stored certificates,
 * policies, tokens and leases against the real server; openssl checks the certificates.
 */
describeWithServer('hvac roles and issuance', { skip: hvacSkip }, (server) => {
  it('creates roles, issues, signs, lists and reads certificates, and revokes through leases with hvac', async () => {
    const { code, out } = await runHvacScript('hvac-pki.py', { url: server.url, token: server.rootToken });
    assert.equal(code, 0, out);
    for (const s of [
      'mount',
      'root',
      'roles',
      'issue',
      'sign',
      'list and read',
      'policies and tokens',
      'leases',
      'cleanup',
    ]) {
      assert.match(out, new RegExp(`^ok ${s}$`, 'm'));
    }
  });
});
