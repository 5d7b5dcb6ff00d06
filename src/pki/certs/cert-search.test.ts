import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { serialToHex } from '../crypto/serial.js';
import { serialPrefix } from './cert-search.js';

describe('certificate search serial prefix', () => {
  it('keeps a leading zero nibble, as the storage form does', () => {
    const stored = serialToHex(Buffer.from('0a1b2c3d4e', 'hex'));
    assert.equal(stored, '0a1b2c3d4e');
    for (const typed of ['0A:1B:2C', '0a-1b-2c', '0a1b2c']) {
      const p = serialPrefix(typed);
      assert.ok(stored.startsWith(p), `${typed} -> ${p}`);
    }
  });

  it('drops whole leading zero bytes only', () => {
    assert.equal(serialPrefix('00:7f:01'), '7f01');
    assert.equal(serialPrefix('00'), '00');
    assert.equal(serialPrefix('0'), '0');
    assert.throws(() => serialPrefix('xyz'), /hexadecimal/);
  });
});
