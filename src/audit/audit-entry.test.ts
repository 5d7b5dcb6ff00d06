import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { auditHasher, auditHmac, elideList, formatEntry, hashedJson, saltedHmac } from './audit-entry.js';
import type { AuditAuth, VaultAuditRecord } from './audit-entry.js';

const SALT = '3f0a9c1e-2b7d-4c55-9e1a-0d2f6b8c7a41';
const AUTH: AuditAuth = {
  clientToken: 'tok',
  accessor: 'acc',
  displayName: 'root',
  policies: ['root'],
  tokenPolicies: ['root'],
  metadata: null,
  tokenType: 'service',
  tokenTtl: 0,
};
const expected = (v: string) => `hmac-sha256:${createHmac('sha256', SALT).update(v).digest('hex')}`;

describe('audit entries', () => {
  it('hashes as HMAC-SHA256 keyed by the salt, through the addon, the one-shot digests and a Hmac alike', () => {
    const paths = [auditHasher(SALT), auditHasher(SALT, null), saltedHmac(SALT), saltedHmac(SALT, null)];
    const values = ['root', 'a.example.com', 'é€😀 unicode', '\ud800 lone', 'x'.repeat(10_000), 'y'.repeat(20_000)];
    for (const v of [...values, '-----BEGIN CERTIFICATE-----\n']) {
      for (const h of paths) {
        assert.equal(h(v), expected(v));
        assert.equal(h(v), expected(v), 'remembered values hash the same');
        assert.equal(h(v), expected(v));
      }
      assert.equal(auditHmac(SALT, v), expected(v));
    }
    assert.equal(paths[0]!(''), '');
    // A salt longer than a block takes the plain path.
    const long = 'k'.repeat(100);
    assert.equal(auditHasher(long)('v'), `hmac-sha256:${createHmac('sha256', long).update('v').digest('hex')}`);
  });

  it('hashes every string at any depth, never keys, numbers or booleans, in JSON text', () => {
    const H = (s: string) => (s === '' ? '' : `H-${s.length}`);
    const value = {
      a: 'x',
      n: 1.5,
      b: true,
      z: null,
      list: ['y', 2, { deep: 'zz' }, undefined],
      gone: undefined,
      inf: Infinity,
      empty: '',
      bytes: Buffer.from('hi'),
      when: new Date('2026-01-01T00:00:00Z'),
      'odd "key"': false,
    };
    const text = hashedJson(value, H);
    assert.deepEqual(JSON.parse(text), {
      a: 'H-1',
      n: 1.5,
      b: true,
      z: null,
      list: ['H-1', 2, { deep: 'H-2' }, null],
      inf: null,
      empty: '',
      bytes: 'H-4',
      when: 'H-24',
      'odd "key"': false,
    });
    // The same key order and layout as JSON.stringify.
    assert.equal(hashedJson({ b: 'x', a: [1, 'y'] }, H), JSON.stringify({ b: 'H-1', a: [1, 'H-1'] }));
  });

  it('elides list answers to counts', () => {
    assert.deepEqual(elideList({ keys: ['a', 'b'], key_info: { a: {}, b: {} } }), { keys: 2, key_info: 2 });
    assert.deepEqual(elideList({ other: 1 }), { other: 1 });
  });

  it('writes Vault’s request entry with the token and accessor hashed and the prefix first', () => {
    const record: VaultAuditRecord = {
      type: 'request',
      time: new Date('2026-01-01T00:00:00Z'),
      auth: AUTH,
      request: {
        id: 'req-1',
        operation: 'update',
        mountPoint: 'pki/',
        mountType: 'pki',
        mountAccessor: 'pki_1',
        path: 'pki/issue/web',
        data: { common_name: 'a.example.com', ttl: 3600 },
        remoteAddress: '127.0.0.1',
        remotePort: 1234,
        clientToken: 'tok',
        clientTokenAccessor: 'acc',
      },
      error: '',
      isList: false,
    };
    const base = { hash: auditHasher(SALT), logRaw: false, elideListResponses: false };
    const line = formatEntry(record, { ...base, hmacAccessor: false, prefix: 'P ' });
    assert.ok(line.startsWith('P {'));
    const e = JSON.parse(line.slice(2));
    assert.equal(e.type, 'request');
    assert.equal(e.time, '2026-01-01T00:00:00.000Z');
    assert.equal(e.auth.client_token, expected('tok'));
    assert.equal(e.auth.accessor, 'acc');
    assert.equal(e.request.client_token_accessor, 'acc');
    assert.deepEqual(e.request.data, { common_name: expected('a.example.com'), ttl: 3600 });
    assert.equal(e.error, '');
    const raw = JSON.parse(formatEntry(record, { ...base, logRaw: true, hmacAccessor: true, prefix: '' }));
    assert.equal(raw.auth.client_token, 'tok');
    assert.equal(raw.request.data.common_name, 'a.example.com');
  });

  it('writes the same lines when the request and auth text of a request are reused, per device', () => {
    const base = {
      time: new Date('2026-01-01T00:00:00Z'),
      auth: { ...AUTH, metadata: { role: 'ci' }, tokenTtl: 60, tokenIssueTime: '2026-01-01T00:00:00.000Z' },
      request: {
        id: 'req-2',
        operation: 'update',
        mountPoint: 'pki/',
        mountType: 'pki',
        mountAccessor: 'pki_1',
        path: 'pki/sign/web',
        data: { csr: '-----BEGIN CERTIFICATE REQUEST-----\nMIIB\n', list: ['a', 1, { b: 'c' }], n: null },
        remoteAddress: '127.0.0.1',
        remotePort: 1234,
        clientToken: 'tok',
        clientTokenAccessor: 'acc',
      },
      error: 'a "quoted" error',
      isList: false,
    };
    const response = {
      status: 200,
      data: { certificate: 'PEM\n', ca_chain: ['CA', 'CA'], serial_number: '01:02' },
      warnings: ['w'],
      auth: { client_token: 'new', accessor: 'newacc', policies: ['p'] },
    };
    const devices = [
      { hash: auditHasher(SALT), logRaw: false, hmacAccessor: true, elideListResponses: false, prefix: '' },
      { hash: auditHasher('other'), logRaw: false, hmacAccessor: false, elideListResponses: true, prefix: 'P ' },
      { hash: auditHasher(SALT), logRaw: true, hmacAccessor: true, elideListResponses: false, prefix: '' },
    ];
    const memo = new Map();
    for (const f of devices) {
      for (const record of [
        { ...base, type: 'request' as const },
        { ...base, type: 'response' as const, response },
      ]) {
        const plain = formatEntry(record, f);
        assert.equal(formatEntry({ ...record, memo }, f), plain);
        const e = JSON.parse(plain.slice(f.prefix.length));
        assert.deepEqual(Object.keys(e), [
          'time',
          'type',
          'auth',
          'request',
          ...(record.type === 'response' ? ['response'] : []),
          'error',
        ]);
        assert.equal(e.error, 'a "quoted" error');
      }
    }
    assert.equal(memo.size, devices.length, 'one text per device');
  });

  it('writes names as JSON.stringify does, also when they recur, and each entry its own time', () => {
    const f = { hash: auditHasher(SALT), logRaw: false, hmacAccessor: true, elideListResponses: false, prefix: '' };
    const odd = 'é "x"\n\u2028\\';
    const times = [
      '2026-01-01T00:00:00.000Z',
      '2026-01-01T00:00:00.000Z',
      '2026-01-01T00:00:00.001Z',
      '2026-01-01T00:00:00.000Z',
    ];
    for (const time of times) {
      const line = formatEntry(
        {
          type: 'request',
          time: new Date(time),
          auth: AUTH,
          request: {
            id: 'req-3',
            operation: 'update',
            mountPoint: `${odd}/`,
            mountType: 'pki',
            mountAccessor: odd,
            path: `${odd}/sign`,
            data: { [odd]: 'v' },
            remoteAddress: '127.0.0.1',
            remotePort: 1,
            clientToken: 'tok',
            clientTokenAccessor: 'acc',
          },
          error: odd,
          isList: false,
        },
        f,
      );
      const e = JSON.parse(line);
      assert.equal(e.time, time);
      assert.equal(e.request.mount_point, `${odd}/`);
      assert.equal(e.request.mount_accessor, odd);
      assert.equal(e.request.path, `${odd}/sign`);
      assert.deepEqual(Object.keys(e.request.data), [odd]);
      assert.equal(e.error, odd);
      assert.ok(line.includes(`"path":${JSON.stringify(`${odd}/sign`)}`));
    }
  });
});
