import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SecretBox } from './secret-box.js';
import { loadMasterKey } from './master-key.js';

describe('SecretBox', () => {
  const box = new SecretBox(randomBytes(32));

  it('round-trips and never stores the plaintext', () => {
    const secret = '-----BEGIN PRIVATE KEY-----\nabc\n-----END PRIVATE KEY-----';
    const sealed = box.seal(secret, 'pki-key:1');
    assert.ok(!Buffer.from(sealed, 'base64').includes(Buffer.from('PRIVATE KEY')));
    assert.equal(box.openString(sealed, 'pki-key:1'), secret);
  });

  it('uses a fresh data key and nonce each time', () => {
    assert.notEqual(box.seal('same'), box.seal('same'));
  });

  it('binds the context: a ciphertext cannot move to another record', () => {
    const sealed = box.seal('x', 'pki-key:1');
    assert.throws(() => box.open(sealed, 'pki-key:2'), /cannot be decrypted/);
  });

  it('detects tampering', () => {
    const buf = Buffer.from(box.seal('hello'), 'base64');
    buf[buf.length - 1] = (buf[buf.length - 1] as number) ^ 1;
    assert.throws(() => box.open(buf.toString('base64')), /cannot be decrypted/);
  });

  it('refuses another master key', () => {
    const other = new SecretBox(randomBytes(32));
    assert.throws(() => other.open(box.seal('x')), /cannot be decrypted/);
  });
});

describe('master key', () => {
  it('is generated once into the data directory with mode 0600', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'mk-')), 'data');
    const first = await loadMasterKey({ dataDir: dir, fromEnv: undefined });
    assert.equal(first.created, true);
    assert.equal(statSync(join(dir, 'master.key')).mode & 0o777, 0o600);
    const again = await loadMasterKey({ dataDir: dir, fromEnv: undefined });
    assert.equal(again.created, false);
    assert.deepEqual(again.key, first.key);
    assert.equal(Buffer.from(readFileSync(join(dir, 'master.key'), 'utf8').trim(), 'base64').length, 32);
  });

  it('comes from STRONGROOM_MASTER_KEY when given, writing nothing', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'mk-')), 'data');
    const key = randomBytes(32);
    const got = await loadMasterKey({ dataDir: dir, fromEnv: key.toString('base64') });
    assert.deepEqual(got.key, key);
    assert.throws(() => statSync(join(dir, 'master.key')));
  });
});
