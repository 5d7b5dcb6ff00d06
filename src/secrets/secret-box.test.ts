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
    assert.throws(
      () => other.open(box.seal('x')),
      /sealed under master key [0-9a-f]{16}, which this server does not have/,
    );
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

describe('SecretBox with several master keys', () => {
  const oldKey = randomBytes(32);
  const newKey = randomBytes(32);

  it('names the key in what it seals, and opens with the key named', () => {
    const box = new SecretBox(newKey, [oldKey]);
    const sealed = box.seal('x', 'c');
    assert.equal(box.sealedKeyId(sealed), box.keyId);
    assert.equal(new SecretBox(newKey).openString(sealed, 'c'), 'x');
    assert.throws(
      () => new SecretBox(oldKey).open(sealed, 'c'),
      /sealed under master key [0-9a-f]{16}, which this server/,
    );
  });

  it('accepts both keys during a rotation, then only the new one', () => {
    const before = new SecretBox(oldKey).seal('secret', 'c');
    const box = new SecretBox(oldKey);
    box.rotateTo(newKey);
    assert.equal(box.openString(before, 'c'), 'secret');
    const after = box.seal('secret', 'c');
    assert.equal(box.sealedKeyId(after), box.keyId);
    box.forgetOthers();
    assert.equal(box.openString(after, 'c'), 'secret');
    assert.throws(() => box.open(before, 'c'), /which this server does not have/);
  });

  it('still reads version 1 (no key id), trying every key', () => {
    // Version 1 is version 2 without the key id.
    const v2 = Buffer.from(new SecretBox(oldKey).seal('legacy', 'c'), 'base64');
    const v1 = Buffer.concat([Buffer.from([1]), v2.subarray(9)]).toString('base64');
    const box = new SecretBox(newKey, [oldKey]);
    assert.equal(box.sealedKeyId(v1), undefined);
    assert.equal(box.openString(v1, 'c'), 'legacy');
    assert.throws(() => new SecretBox(newKey).open(v1, 'c'), /cannot be decrypted/);
  });
});
