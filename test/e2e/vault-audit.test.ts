import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import type { Server, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hvacSkip, runHvacScript } from '../support/hvac-script.js';
import { describeWithServer, startSecondNode } from '../support/test-server.js';
import { spawnServer } from '../support/spawn-server.js';
import { mountWithRoot, role } from './pki-issue-helpers.js';
import { vaultClient } from './vault-http.js';
import type { Vault } from './pki-issue-helpers.js';
import { until } from '../support/wait.js';

const waitAudit = (what: string, check: () => boolean | Promise<boolean>) => until(what, check, 20_000);

/**
 * Audit devices (sys/audit) over real HTTP: Vault's JSON entries in the file, strings and
 * the client token HMAC'd (checked against sys/audit-hash), the options that change what
 * is written, fail-closed refusals when no device can write, socket devices, and devices
 * shared by two nodes of one database.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Entry = any;

function entries(path: string): Entry[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Entry);
}

function entriesWithPrefix(path: string, prefix: string): Entry[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => {
      assert.ok(l.startsWith(prefix), l);
      return JSON.parse(l.slice(prefix.length)) as Entry;
    });
}

async function hash(v: Vault, device: string, input: string): Promise<string> {
  const r = await v('POST', `sys/audit-hash/${device}`, { body: { input } });
  assert.equal(r.status, 200, r.text);
  return r.json.data.hash as string;
}

async function enable(v: Vault, path: string, options: Record<string, string>, type = 'file'): Promise<void> {
  const r = await v('PUT', `sys/audit/${path}`, { body: { type, options } });
  assert.equal(r.status, 204, r.text);
}

describeWithServer('Vault audit devices', (server, kind) => {
  let v: Vault;
  let dir: string;
  before(async () => {
    v = vaultClient(server.url, server.rootToken);
    dir = mkdtempSync(join(tmpdir(), 'strongroom-audit-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('enables, lists, hashes and disables devices with hvac', { skip: hvacSkip }, async () => {
    const file = join(dir, 'hvac.log');
    const { code, out } = await runHvacScript('vault-audit-hvac.py', { url: server.url, token: server.rootToken }, [
      file,
    ]);
    assert.equal(code, 0, out);
    for (const step of ['enable', 'refusals', 'hash', 'entries', 'disable'])
      assert.match(out, new RegExp(`^ok ${step}$`, 'm'));
  });

  it('writes request and response entries with every string HMACd, as Vault does', async () => {
    const file = join(dir, 'main.log');
    const raw = join(dir, 'raw.log');
    const elided = join(dir, 'elided.log');
    await enable(v, 'main', { file_path: file, mode: '0640' });
    await enable(v, 'raw', { file_path: raw, log_raw: 'true', prefix: 'AUDIT ' });
    await enable(v, 'elided', { file_path: elided, elide_list_responses: 'true', hmac_accessor: 'false' });
    try {
      const list = await v('GET', 'sys/audit');
      assert.equal(list.status, 200, list.text);
      assert.deepEqual(list.json.data['main/'], {
        type: 'file',
        description: '',
        options: { file_path: file, mode: '0640' },
        local: false,
        path: 'main/',
      });

      const { mount } = await mountWithRoot(v);
      await role(v, mount, 'web', { allowed_domains: 'example.com', allow_subdomains: true });
      // A token of its own, so that the accessor is there to hash.
      const t = await v('POST', 'auth/token/create', { body: { policies: ['root'], display_name: 'auditor' } });
      assert.equal(t.status, 200, t.text);
      const token = t.json.auth.client_token as string;
      const accessor = t.json.auth.accessor as string;
      const issue = await v('POST', `${mount}/issue/web`, {
        token,
        body: { common_name: 'a.example.com', ttl: '1h' },
      });
      assert.equal(issue.status, 200, issue.text);
      const requestId = issue.json.request_id as string;
      const listed = await v('LIST', `${mount}/certs`, { token });
      assert.equal(listed.status, 200, listed.text);

      const mine = entries(file).filter((e) => e.request.id === requestId);
      assert.deepEqual(
        mine.map((e) => e.type),
        ['request', 'response'],
      );
      const [req, res] = mine as [Entry, Entry];
      const tokenHash = await hash(v, 'main', token);
      assert.equal(req.auth.client_token, tokenHash);
      assert.equal(req.request.client_token, tokenHash);
      assert.equal(req.auth.accessor, await hash(v, 'main', accessor));
      assert.equal(req.request.client_token_accessor, await hash(v, 'main', accessor));
      assert.equal(req.auth.display_name, 'token-auditor');
      assert.deepEqual(req.auth.policies, ['root']);
      assert.equal(req.request.operation, 'update');
      assert.equal(req.request.path, `${mount}/issue/web`);
      assert.equal(req.request.mount_point, `${mount}/`);
      assert.equal(req.request.mount_type, 'pki');
      assert.equal(req.request.remote_address, '127.0.0.1');
      assert.equal(typeof req.request.remote_port, 'number');
      assert.equal(req.request.data.common_name, await hash(v, 'main', 'a.example.com'));
      assert.equal(req.request.data.ttl, await hash(v, 'main', '1h'));
      assert.equal(req.error, '');
      assert.ok(!Number.isNaN(Date.parse(req.time)));
      assert.equal(res.response.data.certificate, await hash(v, 'main', issue.json.data.certificate));
      assert.equal(res.response.data.serial_number, await hash(v, 'main', issue.json.data.serial_number));
      assert.equal(res.response.data.expiration, issue.json.data.expiration, 'numbers are not hashed');
      assert.equal(res.response.status_code, 200);
      assert.equal(res.response.mount_type, 'pki');
      // Neither the token nor the private key appears in the clear.
      const text = readFileSync(file, 'utf8');
      assert.ok(!text.includes(token));
      assert.ok(!text.includes(issue.json.data.private_key));

      // log_raw: nothing hashed; every line starts with the prefix.
      const rawMine = entriesWithPrefix(raw, 'AUDIT ').filter((e) => e.request.id === requestId);
      assert.equal(rawMine[0].auth.client_token, token);
      assert.equal(rawMine[0].request.data.common_name, 'a.example.com');
      assert.equal(rawMine[1].response.data.certificate, issue.json.data.certificate);

      // hmac_accessor=false: the accessor in the clear; elide_list_responses: a list's keys become a count.
      const el = entries(elided);
      const elReq = el.find((e) => e.request.id === requestId && e.type === 'request');
      assert.equal(elReq.auth.accessor, accessor);
      assert.equal(elReq.auth.client_token, await hash(v, 'elided', token));
      const listRes = el.find((e) => e.request.id === listed.json.request_id && e.type === 'response');
      assert.equal(listRes.request.operation, 'list');
      assert.equal(listRes.response.data.keys, listed.json.data.keys.length);
      const mainList = entries(file).find((e) => e.request.id === listed.json.request_id && e.type === 'response');
      assert.ok(Array.isArray(mainList.response.data.keys));

      // A refused request is recorded with its error; the file's mode is the one asked for.
      const denied = await v('GET', 'sys/mounts', { token: 'not-a-token' });
      assert.equal(denied.status, 403);
      const deniedEntry = entries(file).find((e) => e.request.path === 'sys/mounts' && e.error !== '');
      assert.equal(deniedEntry.type, 'request');
      assert.equal(deniedEntry.error, 'permission denied');
      assert.equal(deniedEntry.request.client_token, await hash(v, 'main', 'not-a-token'));
      const { statSync } = await import('node:fs');
      assert.equal(statSync(file).mode & 0o777, 0o640);

      // Salts differ per device: the same input hashes differently.
      assert.notEqual(await hash(v, 'main', 'x'), await hash(v, 'elided', 'x'));
      const unknown = await v('POST', 'sys/audit-hash/nope', { body: { input: 'x' } });
      assert.equal(unknown.status, 404, unknown.text);
    } finally {
      for (const p of ['main', 'raw', 'elided']) await v('DELETE', `sys/audit/${p}`);
    }
  });

  it('refuses bad device settings in Vault’s envelope, and needs sudo', async () => {
    for (const [body, wording] of [
      [{ type: 'file', options: { file_path: 'relative.log' } }, 'absolute path'],
      [{ type: 'file', options: { file_path: join(dir, 'x.log'), format: 'jsonx' } }, 'jsonx'],
      [{ type: 'file', options: { file_path: join(dir, 'x.log'), mode: 'rw' } }, 'invalid mode'],
      [{ type: 'file', options: { file_path: join(dir, 'no', 'such', 'dir', 'x.log') } }, 'failed to enable'],
      [{ type: 'socket', options: {} }, 'address is required'],
      [{ type: 'socket', options: { address: '127.0.0.1:1', socket_type: 'sctp' } }, 'socket_type'],
      [{ type: 'socket', options: { address: '127.0.0.1:1' } }, 'failed to enable'],
      [{ type: 'file', options: { file_path: join(dir, 'x.log'), bogus: '1' } }, 'bogus'],
    ] as const) {
      const r = await v('PUT', 'sys/audit/bad', { body });
      assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
      assert.match(r.json.errors[0], new RegExp(wording));
    }
    assert.equal((await v('GET', 'sys/audit')).json.data['bad/'], undefined);
    // A token without sudo on sys/audit cannot list or enable devices.
    const p = await v('PUT', 'sys/policies/acl/audit-reader', {
      body: {
        policy:
          'path "sys/audit" { capabilities = ["read"] }\npath "sys/audit/*" { capabilities = ["create","update"] }',
      },
    });
    assert.equal(p.status, 204, p.text);
    const t = await v('POST', 'auth/token/create', { body: { policies: ['audit-reader'] } });
    const token = t.json.auth.client_token as string;
    assert.equal((await v('GET', 'sys/audit', { token })).status, 403);
    const put = await v('PUT', 'sys/audit/x', { token, body: { type: 'file', options: { file_path: 'discard' } } });
    assert.equal(put.status, 403);
  });

  it('fails closed: when no device can write, requests get 500 and perform nothing', async () => {
    const file = join(dir, 'fragile.log');
    await enable(v, 'fragile', { file_path: file });
    const ok = await v('PUT', 'sys/policies/acl/before', {
      body: { policy: 'path "a" { capabilities = ["read"] }' },
    });
    assert.equal(ok.status, 204, ok.text);
    // The log is rotated away and a directory now stands where the file was: reopening fails.
    renameSync(file, `${file}.1`);
    mkdirSync(file);
    server.deps.core.audit.reopen();
    const refused = await v('PUT', 'sys/policies/acl/during', {
      body: { policy: 'path "a" { capabilities = ["read"] }' },
    });
    assert.equal(refused.status, 500, refused.text);
    assert.deepEqual(refused.json, { errors: ['internal error'] });
    const issueRefused = await v('GET', 'sys/policies/acl/before');
    assert.equal(issueRefused.status, 500);
    // The path is a file again: the device writes, and the refused write never happened.
    rmSync(file, { recursive: true });
    const read = await v('GET', 'sys/policies/acl/during');
    assert.equal(read.status, 404, read.text);
    assert.ok(entries(`${file}.1`).some((e) => e.request.path === 'sys/policies/acl/before'));
    assert.ok(entries(file).some((e) => e.request.path === 'sys/policies/acl/during' && e.type === 'request'));
    // Another device that writes keeps requests going while one fails.
    await enable(v, 'second', { file_path: join(dir, 'second.log') });
    renameSync(file, `${file}.2`);
    mkdirSync(file);
    server.deps.core.audit.reopen();
    const still = await v('PUT', 'sys/policies/acl/after', {
      body: { policy: 'path "a" { capabilities = ["read"] }' },
    });
    assert.equal(still.status, 204, still.text);
    rmSync(file, { recursive: true });
    await v('DELETE', 'sys/audit/fragile');
    await v('DELETE', 'sys/audit/second');
  });

  it(
    'fails closed on a full disk, and records every one of many concurrent requests',
    { skip: existsSync('/dev/full') ? false : 'needs /dev/full' },
    async () => {
      // /dev/full refuses every write with ENOSPC; mode 0000 leaves its permissions alone.
      await enable(v, 'full', { file_path: '/dev/full', mode: '0000' });
      try {
        const refused = await Promise.all(
          Array.from({ length: 8 }, (_, i) =>
            v('PUT', `sys/policies/acl/disk-full-${i}`, { body: { policy: 'path "a" { capabilities = ["read"] }' } }),
          ),
        );
        for (const r of refused) {
          assert.equal(r.status, 500, r.text);
          assert.deepEqual(r.json, { errors: ['internal error'] });
        }
      } finally {
        // As in Vault, sys/audit refuses too while no device writes: the operator frees the disk.
        await server.deps.core.audit.disable('full');
      }
      for (let i = 0; i < 8; i++) assert.equal((await v('GET', `sys/policies/acl/disk-full-${i}`)).status, 404);

      // Requests made together share the device's writes: each has its request and response entry.
      const file = join(dir, 'concurrent.log');
      await enable(v, 'concurrent', { file_path: file });
      const answers = await Promise.all(Array.from({ length: 64 }, () => v('GET', 'sys/mounts')));
      const written = entries(file);
      for (const r of answers) {
        assert.equal(r.status, 200, r.text);
        const mine = written.filter((e) => e.request.id === r.json.request_id).map((e) => e.type);
        assert.deepEqual(mine, ['request', 'response']);
      }
      await v('DELETE', 'sys/audit/concurrent');
    },
  );

  it('writes to a TCP socket device and fails closed once its peer is gone', async () => {
    const lines: string[] = [];
    const conns = new Set<Socket>();
    const listen = (port: number) =>
      new Promise<Server>((resolve) => {
        const srv = createServer((c) => {
          conns.add(c);
          let buf = '';
          c.on('data', (d: Buffer) => {
            buf += d.toString();
            const parts = buf.split('\n');
            buf = parts.pop() ?? '';
            lines.push(...parts);
          });
          c.on('close', () => conns.delete(c));
        });
        srv.listen(port, '127.0.0.1', () => resolve(srv));
      });
    let peer = await listen(0);
    const port = (peer.address() as { port: number }).port;
    try {
      await enable(v, 'sock', { address: `127.0.0.1:${port}`, socket_type: 'tcp' }, 'socket');
      const r = await v('LIST', 'sys/policies/acl');
      assert.equal(r.status, 200, r.text);
      await waitAudit('the socket entries', () =>
        lines.some((l) => (JSON.parse(l) as Entry).request.id === r.json.request_id),
      );
      assert.equal(JSON.parse(lines.find((l) => l.includes(r.json.request_id)) as string).type, 'request');

      // The peer goes away: the next request cannot be recorded and is refused.
      for (const c of conns) c.destroy();
      await new Promise<void>((resolve) => peer.close(() => resolve()));
      await waitAudit('the refusal', async () => (await v('LIST', 'sys/policies/acl')).status === 500);
      // It comes back on the same port: requests go through again.
      peer = await listen(port);
      await waitAudit('the recovery', async () => (await v('LIST', 'sys/policies/acl')).status === 200);
    } finally {
      await v('DELETE', 'sys/audit/sock');
      for (const c of conns) c.destroy();
      await new Promise<void>((resolve) => peer.close(() => resolve()));
    }
  });

  it('writes to Unix and UDP socket devices', async () => {
    const { createSocket } = await import('node:dgram');
    const unixLines: string[] = [];
    const path = join(dir, 'audit.sock');
    const unixPeer = createServer((c) => c.on('data', (d: Buffer) => unixLines.push(...d.toString().split('\n'))));
    await new Promise<void>((resolve) => unixPeer.listen(path, resolve));
    const udpLines: string[] = [];
    const udpPeer = createSocket('udp4', (msg) => udpLines.push(msg.toString()));
    await new Promise<void>((resolve) => udpPeer.bind(0, '127.0.0.1', resolve));
    try {
      await enable(v, 'unix', { address: path, socket_type: 'unix' }, 'socket');
      await enable(v, 'udp', { address: `127.0.0.1:${udpPeer.address().port}`, socket_type: 'udp' }, 'socket');
      const r = await v('LIST', 'sys/policies/acl');
      assert.equal(r.status, 200, r.text);
      const has = (lines: string[]) => lines.some((l) => l.includes(r.json.request_id as string));
      await waitAudit('the Unix socket entries', () => has(unixLines));
      await waitAudit('the UDP datagrams', () => has(udpLines));
      const datagram = JSON.parse(udpLines.find((l) => l.includes(r.json.request_id as string)) as string) as Entry;
      assert.equal(datagram.request.path, 'sys/policies/acl');
      assert.equal(datagram.auth.client_token, await hash(v, 'udp', server.rootToken));
    } finally {
      await v('DELETE', 'sys/audit/unix');
      await v('DELETE', 'sys/audit/udp');
      udpPeer.close();
      await new Promise<void>((resolve) => unixPeer.close(() => resolve()));
    }
  });

  it(
    'shares devices with a second node of the same database',
    { skip: kind !== 'postgres' ? 'PostgreSQL only: several nodes share one database' : false },
    async () => {
      const file = join(dir, 'shared.log');
      await enable(v, 'shared', { file_path: file });
      const node2 = await startSecondNode(server);
      try {
        const v2 = vaultClient(node2.url, server.rootToken);
        const listed = await v2('GET', 'sys/audit');
        assert.ok(listed.json.data['shared/'], listed.text);
        const r = await v2('GET', 'sys/mounts');
        assert.equal(r.status, 200);
        assert.ok(entries(file).some((e) => e.request.id === r.json.request_id && e.type === 'response'));
        // Both nodes hash with the same salt.
        assert.equal(await hash(v2, 'shared', 'x'), await hash(v, 'shared', 'x'));
        // Disabled on one node, the other stops writing to it within a second.
        await v('DELETE', 'sys/audit/shared');
        await waitAudit(
          'the other node to drop the device',
          async () => !(await v2('GET', 'sys/audit')).json.data['shared/'],
        );
      } finally {
        await node2.close();
      }
    },
  );
});

describe('audit files of a server process', () => {
  it('reopen on SIGHUP and keep every answered request on a clean shutdown', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'strongroom-audit-proc-'));
    const file = join(dir, 'audit.log');
    const srv = await spawnServer(['--dev', '--audit-file', file]);
    try {
      const v = vaultClient(srv.url, 'root');
      const first = await Promise.all(Array.from({ length: 20 }, () => v('GET', 'sys/mounts')));
      assert.ok(first.every((r) => r.status === 200));
      // Rotation: the file is moved away, SIGHUP makes the server open a new one.
      renameSync(file, `${file}.1`);
      srv.child.kill('SIGHUP');
      await waitAudit('the reopen', () => srv.output().includes('reopened the audit device files'));
      const second = await v('GET', 'sys/mounts');
      assert.equal(second.status, 200);
      assert.ok(entries(`${file}.1`).some((e) => e.request.id === first[0]!.json.request_id));
      assert.ok(entries(file).some((e) => e.request.id === second.json.request_id && e.type === 'response'));

      // Requests in flight when SIGTERM comes: every one that was answered has both entries.
      const inFlight = Array.from({ length: 100 }, () => v('GET', 'sys/mounts').catch(() => undefined));
      await new Promise((r) => setTimeout(r, 5));
      await srv.stop('SIGTERM');
      const answered = (await Promise.all(inFlight)).filter((r) => r?.status === 200);
      const written = entries(file);
      for (const r of answered) {
        const mine = written.filter((e) => e.request.id === r!.json.request_id).map((e) => e.type);
        assert.deepEqual(mine, ['request', 'response']);
      }
    } finally {
      await srv.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
