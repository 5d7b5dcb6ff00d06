import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig, SETTINGS } from './config.js';

describe('loadConfig', () => {
  it('gives a working single-node default: SQLite under ./data on 127.0.0.1:8200', () => {
    const c = loadConfig({});
    assert.equal(c.listenHost, '127.0.0.1');
    assert.equal(c.listenPort, 8200);
    assert.equal(c.databaseKind, 'sqlite');
    assert.equal(c.databaseUrl, `sqlite:${join(process.cwd(), 'data', 'strongroom.db')}`);
    assert.equal(c.dataDir, join(process.cwd(), 'data'));
    assert.equal(c.bodyLimit, 32 * 1024 * 1024);
    assert.equal(c.dev, false);
    assert.ok(Object.isFrozen(c));
  });

  it('takes flags over environment over the config file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cfg-'));
    const file = join(dir, 'c.json');
    writeFileSync(
      file,
      JSON.stringify({ listen: '127.0.0.1:1111', log_level: 'debug', body_limit: '1MB', job_concurrency: 5 }),
    );
    const env = { STRONGROOM_CONFIG: file, STRONGROOM_LISTEN: '127.0.0.1:2222', STRONGROOM_LOG_LEVEL: 'warn' };
    const c = loadConfig(env, { listen: '127.0.0.1:3333' });
    assert.equal(c.listenPort, 3333, 'flag wins');
    assert.equal(c.logLevel, 'warn', 'environment beats file');
    assert.equal(c.bodyLimit, 1024 * 1024, 'file beats default');
    assert.equal(c.jobConcurrency, 5);
  });

  it('switches to PostgreSQL on a postgres:// URL', () => {
    const c = loadConfig({ STRONGROOM_DATABASE_URL: 'postgres://u@db:5432/x' });
    assert.equal(c.databaseKind, 'postgres');
    assert.equal(c.databaseUrl, 'postgres://u@db:5432/x');
  });

  it('reports every problem at once', () => {
    try {
      loadConfig({
        STRONGROOM_LISTEN: 'nope',
        STRONGROOM_LOG_LEVEL: 'loud',
        STRONGROOM_MASTER_KEY: 'c2hvcnQ=',
        STRONGROOM_TLS_CERT: '/x.pem',
      });
      assert.fail('expected a ConfigError');
    } catch (err) {
      assert.ok(err instanceof ConfigError);
      assert.equal(err.problems.length, 4, err.message);
      assert.match(err.message, /listen/);
      assert.match(err.message, /log_level/);
      assert.match(err.message, /MASTER_KEY/);
      assert.match(err.message, /tls_cert_file and tls_key_file/);
    }
  });

  it('rejects unknown keys in the config file and a master key there', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cfg-'));
    const file = join(dir, 'c.json');
    writeFileSync(file, JSON.stringify({ listn: 'x', master_key: 'abc' }));
    assert.throws(
      () => loadConfig({ STRONGROOM_CONFIG: file }),
      (err: ConfigError) => err.problems.length === 2,
    );
  });

  it('documents every setting in docs/configuration.md', async () => {
    const { readFile } = await import('node:fs/promises');
    const doc = await readFile(new URL('../../docs/configuration.md', import.meta.url), 'utf8');
    for (const s of SETTINGS) {
      assert.ok(doc.includes(`\`${s.env}\``), `docs/configuration.md lacks ${s.env}`);
      if (s.flag) assert.ok(doc.includes(`--${s.flag}`), `docs/configuration.md lacks --${s.flag}`);
    }
  });
});
