import { before, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeWithServer } from '../support/test-server.js';
import { vault } from './vault-http.js';

const CLI = resolve(dirname(fileURLToPath(import.meta.url)), '../../src/cli.js');

function run(
  args: string[],
  env: Record<string, string>,
  stdin?: string,
): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('close', (code) => done({ code, out, err }));
    child.stdin.end(stdin ?? '');
  });
}

describeWithServer('strongroom token and policy commands', (server) => {
  let env: Record<string, string>;
  const dir = mkdtempSync(join(tmpdir(), 'strongroom-cli-'));
  before(async () => {
    env = { STRONGROOM_ADDR: server.url, STRONGROOM_TOKEN: server.rootToken };
  });

  it('writes a policy from a file and creates a token with it', async () => {
    const file = join(dir, 'issuer.hcl');
    writeFileSync(
      file,
      'path "pki/issue/*" {\n  capabilities = ["update"]\n}\npath "sys/mounts" { capabilities = ["read"] }\n',
    );
    let r = await run(['policy', 'write', 'issuer', file], env);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /Uploaded policy: issuer/);
    r = await run(['policy', 'read', 'issuer'], env);
    assert.match(r.out, /pki\/issue\/\*/);
    r = await run(['policy', 'list'], env);
    assert.deepEqual(r.out.trim().split('\n'), ['default', 'issuer', 'root']);

    r = await run(['token', 'create', '--policy', 'issuer', '--ttl', '1h', '--field', 'token'], env);
    assert.equal(r.code, 0, r.err);
    const token = r.out.trim();
    assert.match(token, /^srv\./);
    const self = await vault(server.url, 'GET', 'auth/token/lookup-self', { token });
    assert.deepEqual(self.json.data.policies, ['default', 'issuer']);
    // Real time passes between creation and lookup (a process start under load).
    assert.ok(self.json.data.ttl > 3500 && self.json.data.ttl <= 3600, String(self.json.data.ttl));
    assert.equal((await vault(server.url, 'GET', 'sys/mounts', { token })).status, 200);

    r = await run(['token', 'create', '--policy', 'issuer', '--meta', 'team=web'], env);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /^token\s+srv\./m);
    assert.match(r.out, /^token_duration\s+768h$/m);
    assert.match(r.out, /^token_policies\s+\[default issuer\]$/m);
    assert.match(r.out, /^token_meta_team\s+web$/m);

    // VAULT_* variables work too, and the token can look itself up.
    r = await run(['token', 'lookup', '--format', 'json'], { VAULT_ADDR: server.url, VAULT_TOKEN: token });
    assert.equal(r.code, 0, r.err);
    assert.deepEqual(JSON.parse(r.out).data.policies, ['default', 'issuer']);
    r = await run(['token', 'revoke', token], env);
    assert.equal(r.code, 0, r.err);
    assert.equal((await vault(server.url, 'GET', 'sys/mounts', { token })).status, 403);
  });

  it('reads the policy from standard input and reports server errors with exit code 2', async () => {
    let r = await run(['policy', 'write', 'stdin-pol', '-'], env, 'path "a/*" { capabilities = ["read"] }');
    assert.equal(r.code, 0, r.err);
    r = await run(['policy', 'write', 'bad', '-'], env, 'path "a" { capabilities = ');
    assert.equal(r.code, 2);
    assert.match(r.err, /Code: 400/);
    r = await run(['token', 'create', '--policy', 'issuer'], {
      STRONGROOM_ADDR: server.url,
      STRONGROOM_TOKEN: 'wrong',
    });
    assert.equal(r.code, 2);
    assert.match(r.err, /Code: 403/);
    assert.match(r.err, /permission denied/);
    r = await run(['policy', 'write', 'nofile', join(dir, 'missing.hcl')], env);
    assert.equal(r.code, 1);
    r = await run(['token', 'create'], { STRONGROOM_ADDR: 'http://127.0.0.1:1', STRONGROOM_TOKEN: 'x' });
    assert.equal(r.code, 2);
    assert.match(r.err, /cannot reach/);
  });
});
