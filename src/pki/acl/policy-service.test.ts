import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDb, dbKinds } from '../../../test/support/test-db.js';
import type { TestDatabase } from '../../../test/support/test-db.js';
import { ManualClock } from '../../shared/clock.js';
import { PolicyRepo } from './policy-repo.js';
import { PolicyService } from './policy-service.js';

const ISSUER =
  'path "pki/issue/web" { capabilities = ["update"] }\npath "pki/roles/*" { capabilities = ["read", "list"] }';

for (const kind of dbKinds()) {
  describe(`PolicyService [${kind}]`, () => {
    let t: TestDatabase;
    const clock = new ManualClock(new Date('2030-01-01T00:00:00Z'));
    /** A node on the test database with its own ACL cache. */
    const node = () => new PolicyService({ repo: new PolicyRepo({ db: t.db.kysely }), clock });
    let policies: PolicyService;
    before(async () => {
      t = await createTestDb(kind);
      policies = node();
    });
    after(async () => t?.cleanup());

    it('lists the built-ins, stores HCL, JSON and base64 texts, and reads them back', async () => {
      assert.deepEqual(await policies.list(), ['default', 'root']);
      assert.deepEqual(await policies.read('root'), { name: 'root', text: '' });
      assert.match((await policies.read('default'))!.text, /auth\/token\/lookup-self/);
      await policies.write('Issuer', ISSUER);
      assert.deepEqual(await policies.read('issuer'), { name: 'issuer', text: ISSUER }, 'names are lower-cased');
      const json = JSON.stringify({ path: { 'sys/mounts': { capabilities: ['read'] } } });
      await policies.write('json', json);
      await policies.write('b64', Buffer.from(ISSUER).toString('base64'));
      assert.equal((await policies.read('b64'))?.text, ISSUER, 'base64 is stored decoded');
      assert.deepEqual(await policies.list(), ['b64', 'default', 'issuer', 'json', 'root']);
      assert.equal(await policies.exists('missing'), false);
      assert.equal(await policies.read('missing'), undefined);
    });

    it('refuses texts that do not parse and the root policy; deleting a missing policy succeeds', async () => {
      await assert.rejects(policies.write('bad', 'path "x" { capabilities = '), { kind: 'invalid' });
      await assert.rejects(policies.write('bad', 'path "x" { capabilities = ["fly"] }'), { kind: 'invalid' });
      assert.equal(await policies.exists('bad'), false);
      await assert.rejects(policies.write('root', ISSUER), { kind: 'invalid' });
      await assert.rejects(policies.delete('root'), { kind: 'invalid' });
      await assert.rejects(policies.delete('default'), { kind: 'invalid' });
      await policies.delete('never-written');
    });

    it('compiles ACLs from several policies; unknown names grant nothing; root grants everything', async () => {
      await policies.write('issuer', ISSUER);
      await policies.write('mounts', 'path "sys/mounts" { capabilities = ["read"] }');
      const acl = await policies.aclFor(['issuer', 'mounts', 'no-such-policy']);
      assert.equal(acl.check('pki/issue/web', 'update').allowed, true);
      assert.equal(acl.check('pki/issue/other', 'update').allowed, false);
      assert.equal(acl.check('pki/roles/web', 'read').allowed, true);
      assert.equal(acl.check('pki/roles/web', 'update').allowed, false);
      assert.equal(acl.check('sys/mounts', 'read').allowed, true);
      assert.equal((await policies.aclFor(['no-such-policy'])).check('sys/mounts', 'read').allowed, false);
      const root = await policies.aclFor(['root']);
      assert.equal(root.isRoot, true);
      assert.equal(root.check('anything/at/all', 'delete').allowed, true);
      const dflt = await policies.aclFor(['default']);
      assert.equal(dflt.check('auth/token/lookup-self', 'read').allowed, true);
      assert.equal(dflt.check('sys/mounts', 'read').allowed, false);
    });

    it('a change applies at once on the node that made it and within a second on another', async () => {
      const a = node();
      const b = node();
      await a.write('moving', 'path "pki/issue/one" { capabilities = ["update"] }');
      const names = ['moving'];
      assert.equal((await a.aclFor(names)).check('pki/issue/one', 'update').allowed, true);
      assert.equal((await b.aclFor(names)).check('pki/issue/one', 'update').allowed, true);
      assert.ok(b.aclForNow(names), 'the other node now answers from its cache without waiting');

      await a.write('moving', 'path "pki/issue/two" { capabilities = ["update"] }');
      assert.equal((await a.aclFor(names)).check('pki/issue/one', 'update').allowed, false);
      assert.equal((await b.aclFor(names)).check('pki/issue/one', 'update').allowed, true, 'cached on b');
      clock.advance(1);
      assert.equal(b.aclForNow(names), undefined);
      assert.equal((await b.aclFor(names)).check('pki/issue/one', 'update').allowed, false);
      assert.equal((await b.aclFor(names)).check('pki/issue/two', 'update').allowed, true);

      await a.delete('moving');
      assert.equal((await a.aclFor(names)).check('pki/issue/two', 'update').allowed, false);
    });
  });
}
