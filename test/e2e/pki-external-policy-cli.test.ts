import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { copyFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CLI, runCli } from '../support/spawn-server.js';
import { startTestServer } from '../support/test-server.js';
import type { TestServer } from '../support/test-server.js';
import { httpsVaultClient, opensslTestCa } from './pki-external-policy-helpers.js';
import type { TestCa } from './pki-external-policy-helpers.js';
import { mountWithRoot } from './pki-issue-helpers.js';
import { verifyChain } from './pki-issuers-openssl.js';

/** `strongroom policy-service` as a child process, with the example rules file shipped in docs/. */
describe('strongroom policy-service', () => {
  let ca: TestCa;
  let child: ChildProcess | undefined;
  let server: TestServer;
  let out = '';

  before(async () => {
    ca = opensslTestCa('Policy CLI test CA');
    const tls = ca.issue('policy-cli');
    const serverTls = ca.issue('strongroom-cli');
    const rules = join(ca.dir, 'rules.json');
    copyFileSync(new URL('../../../docs/examples/external-policy-rules.json', import.meta.url), rules);
    child = spawn(
      process.execPath,
      [
        CLI,
        'policy-service',
        '--rules',
        rules,
        '--tls-cert',
        tls.certFile,
        '--tls-key',
        tls.keyFile,
        '--listen',
        '127.0.0.1:0',
      ],
      {
        env: { PATH: process.env.PATH, HOME: process.env.HOME },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`policy service did not start:\n${out}`)), 15_000);
      child!.stdout!.on('data', () => {
        if (/listening at https:\/\//.test(out)) {
          clearTimeout(timer);
          resolve();
        }
      });
      child!.once('exit', (code) => reject(new Error(`exited ${code}:\n${out}`)));
    });
    server = await startTestServer('sqlite', {
      config: { tlsCertFile: serverTls.certFile, tlsKeyFile: serverTls.keyFile },
    });
  });
  after(async () => {
    child?.kill('SIGTERM');
    await server?.close();
  });

  it('serves the example rules over HTTPS: web allows, retired denies, names outside the policy refused', async () => {
    const url = /listening at (https:\/\/\S+)/.exec(out)![1]!;
    assert.match(out, /\(4 policies\)/);
    const v = httpsVaultClient(server.url, ca.certPem, server.rootToken);
    const { mount, rootPem } = await mountWithRoot(v);
    const c = await v('POST', `${mount}/config/external-policy`, {
      body: { enabled: true, external_service_url: `${url}cieps`, trusted_ca: ca.certPem },
    });
    assert.equal(c.status, 200, c.text);
    let r = await v('POST', `${mount}/external-policy/issue`, {
      body: { common_name: 'www.example.com', key_type: 'ec', ttl: '1h' },
    });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json.warnings, ['issued under the web policy']);
    assert.match(verifyChain(r.json.data.certificate, [rootPem]), /OK/);
    r = await v('POST', `${mount}/external-policy/issue/retired`, {
      body: { common_name: 'www.example.com', key_type: 'ec' },
    });
    assert.equal(r.status, 400);
    assert.deepEqual(r.json.errors, ['the retired policy no longer issues certificates; use web']);
    r = await v('POST', `${mount}/external-policy/issue/web`, {
      body: { common_name: 'www.other.test', key_type: 'ec' },
    });
    assert.equal(r.status, 400);
    assert.match(out, /allow policy="web" mode=issue names=www\.example\.com/);
    assert.match(out, /deny policy="retired"/);
  });

  it('refuses a broken rules file or missing flags with a reason', async () => {
    const bad = join(ca.dir, 'bad.json');
    writeFileSync(bad, '{"policies":{"x":{"allowed":[]}}}');
    let r = await runCli(['policy-service', '--rules', bad, '--tls-cert', 'a', '--tls-key', 'b']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /policy "x": unknown key "allowed"/);
    r = await runCli(['policy-service', '--rules', bad]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--rules, --tls-cert and --tls-key are required/);
  });
});
