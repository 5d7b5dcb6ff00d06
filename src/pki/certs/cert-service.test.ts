import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { createTestDb, dbKinds } from '../../../test/support/test-db.js';
import type { TestDatabase } from '../../../test/support/test-db.js';
import { ManualClock } from '../../shared/clock.js';
import { CertRepo, fixedChunks } from './cert-repo.js';
import { CertService } from './cert-service.js';
import type { IssuedCertificate } from './cert.js';

const cert = (mountId: string, serial = randomBytes(20).toString('hex')): IssuedCertificate => ({
  mountId,
  serial,
  issuerId: 'issuer-1',
  der: randomBytes(300),
  notAfter: new Date('2031-01-01T00:00:00Z'),
  createdAt: new Date('2030-01-01T00:00:00Z'),
});

describe('fixed insert chunks', () => {
  it('splits any count into the few fixed sizes, keeping order', () => {
    const items = Array.from({ length: 347 }, (_, i) => i);
    const chunks = fixedChunks(items);
    assert.deepEqual(
      chunks.map((c) => c.length),
      [256, 64, 16, 4, 4, 1, 1, 1],
    );
    assert.deepEqual(chunks.flat(), items);
    assert.deepEqual(fixedChunks([]), []);
  });
});

for (const kind of dbKinds()) {
  describe(`certificate storage [${kind}]`, () => {
    let t: TestDatabase;
    let certs: CertService;
    const clock = new ManualClock(new Date('2030-06-01T00:00:00Z'));
    before(async () => {
      t = await createTestDb(kind);
      certs = new CertService({ repo: new CertRepo({ db: t.db.kysely, units: t.db.units }), clock });
    });
    after(async () => t?.cleanup());

    it('stores concurrent certificates durably in shared commits, each resolving once written', async () => {
      const items = Array.from({ length: 300 }, () => cert('m1'));
      await Promise.all(items.map((c) => certs.store(c)));
      const listed = await certs.listSerials('m1');
      assert.deepEqual(listed, items.map((c) => c.serial).sort());
    });

    it('a duplicate serial fails alone; its neighbours in the same batch are stored', async () => {
      const existing = cert('m2');
      await certs.store(existing);
      const others = [cert('m2'), cert('m2')];
      const results = await Promise.allSettled([
        certs.store(others[0]!),
        certs.store({ ...existing, der: randomBytes(10) }),
        certs.store(others[1]!),
      ]);
      assert.equal(results[0]!.status, 'fulfilled');
      assert.equal(results[1]!.status, 'rejected');
      assert.match(String((results[1] as PromiseRejectedResult).reason), /already exists/);
      assert.equal(results[2]!.status, 'fulfilled');
      assert.equal((await certs.listSerials('m2')).length, 3);
    });

    it('pages serials with after and limit, per mount', async () => {
      const items = Array.from({ length: 7 }, () => cert('m3'));
      for (const c of items) await certs.store(c);
      await certs.store(cert('m4'));
      const all = items.map((c) => c.serial).sort();
      assert.deepEqual(await certs.listSerials('m3', { limit: 3 }), all.slice(0, 3));
      assert.deepEqual(await certs.listSerials('m3', { after: all[2], limit: 3 }), all.slice(3, 6));
      assert.deepEqual(await certs.listSerials('m3', { after: all[6] }), []);
    });

    it('marks a certificate revoked once, keeping the first revocation time', async () => {
      const c = cert('m5');
      await certs.store(c);
      const first = await certs.markRevoked('m5', c.serial);
      assert.deepEqual(first, { exists: true, revokedAt: new Date('2030-06-01T00:00:00Z') });
      clock.advance(60);
      assert.deepEqual(await certs.markRevoked('m5', c.serial), first);
      assert.deepEqual(await certs.markRevoked('m5', 'ab'), { exists: false, revokedAt: null });
    });

    it('keeps cert_metadata beside the serial and removes it with the mount', async () => {
      const c = cert('m6');
      await certs.store(c, {
        mountId: 'm6',
        serial: c.serial,
        issuerId: 'issuer-1',
        role: 'web',
        notAfter: c.notAfter,
        metadata: 'e30=',
      });
      assert.deepEqual(await certs.metadata('m6', c.serial), {
        mountId: 'm6',
        serial: c.serial,
        issuerId: 'issuer-1',
        role: 'web',
        notAfter: c.notAfter,
        metadata: 'e30=',
      });
      assert.deepEqual(await certs.metadataSerials('m6'), [c.serial]);
      await certs.purgeMount('m6');
      assert.equal(await certs.metadata('m6', c.serial), undefined);
    });
  });
}
