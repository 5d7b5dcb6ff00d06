import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createPublicKey, generateKeyPairSync, sign, verify } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { createTestDb, dbKinds } from '../../../test/support/test-db.js';
import type { TestDatabase } from '../../../test/support/test-db.js';
import { ROOT_LIMITS, pkiCore, rootRequest } from '../../../test/support/pki-core.js';
import type { PkiCore } from '../../../test/support/pki-core.js';
import { ManualClock } from '../../shared/clock.js';
import { spkiDer } from '../crypto/keys.js';
import { BoundedCache } from './bounded-cache.js';

const pkcs8Pem = (type: 'ec' | 'ed25519' | 'rsa'): string => {
  const pair =
    type === 'ec'
      ? generateKeyPairSync('ec', { namedCurve: 'secp384r1' })
      : type === 'rsa'
        ? generateKeyPairSync('rsa', { modulusLength: 2048 })
        : generateKeyPairSync('ed25519');
  return pair.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
};

/** The stored private key signs, and its signature verifies with the public key the record describes. */
function assertSignsFor(privateKey: KeyObject, spki: Buffer): void {
  const data = Buffer.from('key-service');
  const alg = privateKey.asymmetricKeyType === 'ed25519' ? null : 'sha256';
  const pub = createPublicKey({ key: spki, format: 'der', type: 'spki' });
  assert.ok(verify(alg, data, pub, sign(alg, data, privateKey)));
}

for (const kind of dbKinds()) {
  describe(`KeyService [${kind}]`, () => {
    let t: TestDatabase;
    let core: PkiCore;
    const clock = new ManualClock(new Date('2030-01-01T00:00:00Z'));
    let n = 0;
    const mountId = () => `keys-${++n}`;
    before(async () => {
      t = await createTestDb(kind);
      core = pkiCore(t.db, clock);
    });
    after(async () => t?.cleanup());

    it('generates keys of each type, the first becoming the default, and seals them at rest', async () => {
      const m = mountId();
      const ec = await core.keys.generate(m, { keyType: 'ec', keyBits: 0, keyName: 'first' });
      assert.deepEqual([ec.key.type, ec.key.bits, ec.key.name], ['ec', 256, 'first']);
      const ed = await core.keys.generate(m, { keyType: 'ed25519', keyBits: 0, keyName: '' });
      assert.deepEqual([ed.key.type, ed.key.bits], ['ed25519', 0]);
      assert.equal(await core.keys.getDefaultKeyId(m), ec.key.id);
      assert.deepEqual((await core.keys.list(m)).map((k) => k.id).sort(), [ec.key.id, ed.key.id].sort());

      const row = await t.db.kysely
        .selectFrom('pki_keys')
        .select('sealed_private_key')
        .where('id', '=', ec.key.id)
        .executeTakeFirstOrThrow();
      assert.doesNotMatch(row.sealed_private_key, /PRIVATE KEY|^MI/);
      const pem = ec.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
      assert.ok(!row.sealed_private_key.includes(pem.split('\n')[1]!), 'no line of the PEM is stored as it is');
    });

    it('reads a stored private key back through a second service on the same database (another node)', async () => {
      const m = mountId();
      const made = await core.keys.generate(m, { keyType: 'ec', keyBits: 384, keyName: '' });
      const other = pkiCore(t.db, clock, core.secrets);
      const read = await other.keys.privateKey(m, made.key.id);
      assertSignsFor(read, spkiDer(made.privateKey));
      // Another master key cannot open it.
      const stranger = pkiCore(t.db, clock);
      await assert.rejects(stranger.keys.privateKey(m, made.key.id));
      await assert.rejects(core.keys.privateKey(m, '00000000-0000-4000-8000-000000000000'), { kind: 'not_found' });
    });

    it('imports a key once: the same key again answers the existing record', async () => {
      const m = mountId();
      const pem = pkcs8Pem('ec');
      const first = await core.keys.importKey(m, pem, 'imported');
      assert.equal(first.existing, false);
      assert.deepEqual([first.key.type, first.key.bits], ['ec', 384]);
      const again = await core.keys.importKey(m, pem, 'other-name');
      assert.deepEqual([again.existing, again.key.id, again.key.name], [true, first.key.id, 'imported']);
      assertSignsFor(await core.keys.privateKey(m, first.key.id), spkiDer(createPublicKey(pem)));
      // The same key in another mount is another record.
      const elsewhere = await core.keys.importKey(mountId(), pem, '');
      assert.equal(elsewhere.existing, false);
      assert.notEqual(elsewhere.key.id, first.key.id);
    });

    it('refuses bundles without exactly one plain private key, and bad names', async () => {
      const m = mountId();
      await assert.rejects(core.keys.importKey(m, '', ''), { kind: 'invalid' });
      await assert.rejects(core.keys.importKey(m, pkcs8Pem('ec') + pkcs8Pem('ed25519'), ''), {
        kind: 'invalid',
        message: /exactly one/,
      });
      await assert.rejects(core.keys.importKey(m, pkcs8Pem('ed25519'), 'default'), { kind: 'invalid' });
      await assert.rejects(core.keys.generate(m, { keyType: 'ec', keyBits: 0, keyName: 'a b' }), { kind: 'invalid' });
      await assert.rejects(core.keys.generate(m, { keyType: 'dsa', keyBits: 0, keyName: '' }), { kind: 'invalid' });
      assert.deepEqual(await core.keys.list(m), []);
    });

    it('resolves default, id and name; renames; moves the default', async () => {
      const m = mountId();
      const a = (await core.keys.generate(m, { keyType: 'ed25519', keyBits: 0, keyName: 'a' })).key;
      const b = (await core.keys.generate(m, { keyType: 'ed25519', keyBits: 0, keyName: 'b' })).key;
      assert.equal((await core.keys.resolve(m, 'default'))?.id, a.id);
      assert.equal((await core.keys.resolve(m, b.id))?.id, b.id);
      assert.equal((await core.keys.resolve(m, 'b'))?.id, b.id);
      assert.equal(await core.keys.find(m, 'missing'), undefined);
      await assert.rejects(core.keys.resolve(m, 'missing'), { kind: 'invalid' });

      assert.equal((await core.keys.rename(m, 'b', 'renamed')).name, 'renamed');
      assert.equal((await core.keys.find(m, 'renamed'))?.id, b.id);
      assert.equal(await core.keys.find(m, 'b'), undefined);
      await assert.rejects(core.keys.rename(m, 'renamed', 'a'), { kind: 'conflict', message: /already in use/ });

      assert.equal(await core.keys.setDefault(m, 'renamed'), b.id);
      assert.equal(await core.keys.getDefaultKeyId(m), b.id);
      await assert.rejects(core.keys.setDefault(m, 'default'), { kind: 'invalid' });
      await assert.rejects(core.keys.setDefault(m, ''), { kind: 'invalid' });
    });

    it('deletes an unused key (clearing the default), refuses one an issuer uses, ignores unknown ones', async () => {
      const m = mountId();
      const root = await core.ca.generateRoot(m, ROOT_LIMITS, rootRequest({ keyName: 'root-key' }));
      const used = await core.keys.resolve(m, 'root-key');
      assert.equal(root.issuer.keyId, used.id);
      await assert.rejects(core.keys.delete(m, 'root-key'), { kind: 'invalid', message: /in use/ });

      const spare = (await core.keys.generate(m, { keyType: 'ec', keyBits: 256, keyName: 'spare' })).key;
      await core.keys.setDefault(m, 'spare');
      assert.deepEqual(await core.keys.delete(m, 'spare'), { deleted: true, wasDefault: true });
      assert.equal(await core.keys.getDefaultKeyId(m), '');
      await assert.rejects(core.keys.privateKey(m, spare.id), { kind: 'not_found' });
      assert.deepEqual(await core.keys.delete(m, 'spare'), { deleted: false, wasDefault: false });
      assert.deepEqual(
        (await core.keys.list(m)).map((k) => k.name),
        ['root-key'],
      );
    });
  });
}

describe('BoundedCache', () => {
  it('keeps the most recently used entries up to its bound', () => {
    const c = new BoundedCache<number>(2);
    c.set('a', 1);
    c.set('b', 2);
    assert.equal(c.get('a'), 1); // a is now the most recent
    c.set('c', 3); // evicts b
    assert.deepEqual([c.has('a'), c.has('b'), c.has('c'), c.size], [true, false, true, 2]);
    c.set('a', 10);
    assert.equal(c.get('a'), 10);
    c.delete('a');
    assert.equal(c.get('a'), undefined);
  });

  it('drops entries by prefix', () => {
    const c = new BoundedCache<string>(10);
    for (const k of ['m1|x', 'm1|y', 'm2|x']) c.set(k, k);
    c.deletePrefix('m1|');
    assert.deepEqual([c.has('m1|x'), c.has('m1|y'), c.has('m2|x')], [false, false, true]);
  });
});
