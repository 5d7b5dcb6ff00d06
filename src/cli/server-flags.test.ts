import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError } from '../config.js';
import { parseSettingFlags } from './server-flags.js';

describe('settings flags', () => {
  it('takes string settings with their value, and boolean settings alone as true', () => {
    const { flags, positionals } = parseSettingFlags(['--listen', '127.0.0.1:0', '--dev', '--log-level=warn']);
    assert.deepEqual(flags, { listen: '127.0.0.1:0', dev: true, log_level: 'warn' });
    assert.deepEqual(positionals, []);
  });

  it('turns a boolean setting off with --flag=false, --flag false or --no-flag', () => {
    assert.deepEqual(parseSettingFlags(['--native-crypto=false']).flags, { native_crypto: false });
    assert.deepEqual(parseSettingFlags(['--batch-background-threads', 'false', '--listen', ':1']).flags, {
      batch_background_threads: false,
      listen: ':1',
    });
    assert.deepEqual(parseSettingFlags(['--no-state-allow-encrypted']).flags, { state_allow_encrypted: false });
    assert.deepEqual(parseSettingFlags(['--dev', 'true']).flags, { dev: true });
  });

  it('refuses a boolean setting with another value, and unknown flags', () => {
    assert.throws(
      () => parseSettingFlags(['--native-crypto=maybe']),
      (e: unknown) => e instanceof ConfigError && /expected true or false/.test(e.message),
    );
    assert.throws(() => parseSettingFlags(['--no-listen']), /Unknown option/);
    assert.throws(() => parseSettingFlags(['--frobnicate']), /Unknown option/);
  });

  it('leaves other words as positionals', () => {
    assert.deepEqual(parseSettingFlags(['--dev', 'extra']).positionals, ['extra']);
  });
});
