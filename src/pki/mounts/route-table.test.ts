import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { VaultOperation } from '../pki-route.js';
import { RouteTable } from './route-table.js';

interface R {
  pattern: string;
  operations: VaultOperation[];
  id: string;
}

describe('route table', () => {
  const table = new RouteTable<R>();
  table.addAll([
    { pattern: 'issue/:role', operations: ['update'], id: 'issue' },
    { pattern: 'issuer/:ref', operations: ['read', 'update', 'delete'], id: 'issuer' },
    { pattern: 'issuer/default', operations: ['read'], id: 'issuer-default' },
    { pattern: 'issuer/:ref/crl/pem', operations: ['read'], id: 'issuer-crl-pem' },
    { pattern: 'issuers', operations: ['list'], id: 'issuers' },
    { pattern: 'ocsp/*req', operations: ['read'], id: 'ocsp-get' },
    { pattern: 'ocsp', operations: ['update'], id: 'ocsp-post' },
    { pattern: 'cert/ca', operations: ['read'], id: 'cert-ca' },
    { pattern: 'cert/:serial', operations: ['read'], id: 'cert' },
  ]);
  const cases: Array<[string, VaultOperation, string | undefined, Record<string, string>?]> = [
    ['issue/web', 'update', 'issue', { role: 'web' }],
    ['issuer/default', 'read', 'issuer-default', {}],
    // The static segment only serves reads; other operations fall back to the parameter.
    ['issuer/default', 'delete', 'issuer', { ref: 'default' }],
    ['issuer/abc/crl/pem', 'read', 'issuer-crl-pem', { ref: 'abc' }],
    ['issuers', 'list', 'issuers', {}],
    ['ocsp/MEow/a+b==', 'read', 'ocsp-get', { req: 'MEow/a+b==' }],
    ['ocsp', 'update', 'ocsp-post', {}],
    ['cert/ca', 'read', 'cert-ca', {}],
    ['cert/01:02', 'read', 'cert', { serial: '01:02' }],
    ['issue', 'update', undefined],
    ['issue/web/extra', 'update', undefined],
    ['issuer/', 'read', undefined],
  ];
  for (const [path, op, id, params] of cases) {
    it(`${op} ${path} -> ${id ?? 'nothing'}`, () => {
      const r = table.lookup(path, op);
      assert.equal(r.found?.route.id, id);
      if (params) assert.deepEqual(r.found?.params, params);
    });
  }

  it('tells an unsupported operation on a known path from an unknown path', () => {
    assert.deepEqual(table.lookup('issue/web', 'delete'), { found: undefined, pathExists: true });
    assert.deepEqual(table.lookup('ocsp/xyz', 'delete'), { found: undefined, pathExists: true });
    assert.deepEqual(table.lookup('nothing/here', 'read'), { found: undefined, pathExists: false });
  });

  it('refuses a rest segment that is not last', () => {
    assert.throws(() => new RouteTable<R>().add({ pattern: 'a/*x/b', operations: ['read'], id: 'bad' }));
  });
});
