import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createTestDb, dbKinds } from '../../test/support/test-db.js';
import type { TestDatabase } from '../../test/support/test-db.js';
import { ManualClock } from '../shared/clock.js';
import { openBuffer, sealBuffer } from './content-cipher.js';
import { DataKeyRepo } from './data-key-repo.js';
import { DataKeyRing } from './data-key-ring.js';
import { SecretBox } from './secret-box.js';

for (const kind of dbKinds()) {
  describe(`data key ring [${kind}]`, () => {
    let t: TestDatabase;
    before(async () => {
      t = await createTestDb(kind);
    });
    after(async () => t.cleanup());

    it('makes a new data key after its uses, and still opens what the old one sealed', async () => {
      const secrets = new SecretBox(randomBytes(32));
      const repo = new DataKeyRepo({ db: t.db.kysely });
      const ring = new DataKeyRing({ repo, secrets, clock: new ManualClock(), maxUses: 3 });
      await ring.init();
      const first = ring.current();
      const plain = Buffer.from('{"version":4}');
      const sealed = sealBuffer(first, plain);
      ring.current();
      // The third use starts a new key; the current one serves until it is stored.
      assert.equal(ring.current(), first);
      for (let i = 0; i < 100 && ring.current().id.equals(first.id); i++) {
        await new Promise((r) => setTimeout(r, 10));
      }
      const second = ring.current();
      assert.ok(!second.id.equals(first.id), 'a new data key');
      assert.ok(await repo.sealed(second.id.toString('hex')), 'stored, sealed by the master key');
      assert.deepEqual(await openBuffer(sealed, ring.lookup), plain);
      // Another process (a fresh ring) opens both from the database.
      const other = new DataKeyRing({ repo, secrets, clock: new ManualClock() });
      assert.deepEqual(await openBuffer(sealed, other.lookup), plain);
      assert.deepEqual(await openBuffer(sealBuffer(second, plain), other.lookup), plain);
    });
  });
}
