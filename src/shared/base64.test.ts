import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { decodeBase64Canonical } from './base64.js';

/** What strict base64 is, said the slow way: the alphabet, then at most two `=`, in fours. */
const reference = (t: string): boolean => t.length % 4 === 0 && /^[A-Za-z0-9+/]*={0,2}$/.test(t);

describe('decodeBase64Canonical', () => {
  it('decodes strict base64 to the same bytes as Buffer', () => {
    for (let n = 0; n < 64; n++) {
      const bytes = randomBytes(n);
      assert.deepEqual(decodeBase64Canonical(bytes.toString('base64')), bytes);
    }
  });

  it('refuses what is not strict base64', () => {
    for (const bad of ['QQ', 'QQ=', 'Q===', '====', 'QQ=A', 'QQ==QQ==', 'ab-_', 'QUJD\n', 'QU D', 'QUJ*', 'QUJDRA=!'])
      assert.equal(decodeBase64Canonical(bad), null, bad);
  });

  it('agrees with the regular expression on random text', () => {
    const alphabet = 'AQgw+/=-_ *\n\u00e9';
    let accepted = 0;
    for (let i = 0; i < 200_000; i++) {
      const len = 4 * (1 + (i % 3));
      let t = '';
      // Mostly valid characters, so that both answers occur.
      for (let j = 0; j < len; j++) t += Math.random() < 0.9 ? alphabet[j % 4]! : alphabet[(Math.random() * 13) | 0]!;
      if (i % 5 === 0) t = t.slice(0, len - 2) + '==';
      const ok = reference(t);
      if (ok) accepted++;
      const got = decodeBase64Canonical(t);
      assert.equal(got !== null, ok, JSON.stringify(t));
      if (got) assert.deepEqual(got, Buffer.from(t, 'base64'));
    }
    assert.ok(accepted > 1000 && accepted < 199_000, `accepted ${accepted}`);
  });
});
