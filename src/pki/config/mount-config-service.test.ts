import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createTestDb, dbKinds } from '../../../test/support/test-db.js';
import type { TestDatabase } from '../../../test/support/test-db.js';
import { ManualClock } from '../../shared/clock.js';
import { EMPTY_AIA } from './mount-config.js';
import { MountConfigRepo } from './mount-config-repo.js';
import { MountConfigService } from './mount-config-service.js';

for (const kind of dbKinds()) {
  describe(`MountConfigService [${kind}]`, () => {
    let t: TestDatabase;
    let config: MountConfigService;
    const changed: string[] = [];
    const clock = new ManualClock(new Date('2030-01-01T00:00:00Z'));
    let n = 0;
    const mountId = () => `cfg-${++n}`;
    before(async () => {
      t = await createTestDb(kind);
      config = new MountConfigService({ repo: new MountConfigRepo({ db: t.db.kysely, units: t.db.units }), clock });
      config.onChange((m) => changed.push(m));
    });
    after(async () => t?.cleanup());

    it('config/urls: empty until written, then changed key by key; a refused write changes nothing', async () => {
      const m = mountId();
      assert.deepEqual(await config.getUrls(m), EMPTY_AIA);
      const first = await config.updateUrls(m, { issuingCertificates: ['http://a.example/ca'] });
      assert.deepEqual(first, { urls: { ...EMPTY_AIA, issuingCertificates: ['http://a.example/ca'] }, warnings: [] });
      await config.updateUrls(m, { ocspServers: ['http://a.example/ocsp'] });
      assert.deepEqual(await config.getUrls(m), {
        ...EMPTY_AIA,
        issuingCertificates: ['http://a.example/ca'],
        ocspServers: ['http://a.example/ocsp'],
      });
      assert.deepEqual(changed.filter((c) => c === m).length, 2, 'each committed change is announced');
      await assert.rejects(config.updateUrls(m, { crlDistributionPoints: ['not a url'] }), { kind: 'invalid' });
      assert.deepEqual((await config.getUrls(m)).crlDistributionPoints, []);
      assert.equal(changed.filter((c) => c === m).length, 2, 'a refused change is not announced');
      assert.deepEqual(await config.getUrls(mountId()), EMPTY_AIA, 'mounts do not share settings');
    });

    it('templated URLs warn until the cluster paths they use are set', async () => {
      const m = mountId();
      const { warnings } = await config.updateUrls(m, {
        enableTemplating: true,
        ocspServers: ['{{cluster_path}}/ocsp'],
      });
      assert.equal(warnings.length, 1);
      assert.deepEqual(await config.updateCluster(m, { path: 'https://pki.example/v1/pki' }), {
        path: 'https://pki.example/v1/pki',
        aiaPath: '',
      });
      assert.deepEqual((await config.updateUrls(m, {})).warnings, []);
      assert.deepEqual(await config.updateCluster(m, { aiaPath: 'http://aia.example/v1/pki' }), {
        path: 'https://pki.example/v1/pki',
        aiaPath: 'http://aia.example/v1/pki',
      });
      await assert.rejects(config.updateCluster(m, { path: 'relative/path' }), { kind: 'invalid' });
      const signing = await config.getSigningSettings(m);
      assert.deepEqual(signing.cluster, { path: 'https://pki.example/v1/pki', aiaPath: 'http://aia.example/v1/pki' });
      assert.deepEqual(signing.urls.ocspServers, ['{{cluster_path}}/ocsp']);
      assert.equal(signing.defaultIssuerId, '');
    });

    it('default issuer and key: set only if unset, cleared only if unchanged, in the caller transaction', async () => {
      const m = mountId();
      const ex = config.executor;
      assert.deepEqual(await config.getDefaults(m), {
        defaultIssuerId: '',
        defaultFollowsLatestIssuer: false,
        defaultKeyId: '',
      });
      assert.equal(await config.setDefaultIssuerIfUnset(ex, m, 'i1'), true);
      assert.equal(await config.setDefaultIssuerIfUnset(ex, m, 'i2'), false);
      assert.equal(await config.setDefaultKeyIfUnset(ex, m, 'k1'), true);
      await config.setDefaultFollowsLatestIssuer(ex, m, true);
      assert.deepEqual(await config.getDefaults(m), {
        defaultIssuerId: 'i1',
        defaultFollowsLatestIssuer: true,
        defaultKeyId: 'k1',
      });
      assert.equal(await config.clearDefaultIssuerIf(ex, m, 'i2'), false);
      assert.equal(await config.clearDefaultIssuerIf(ex, m, 'i1'), true);
      assert.equal(await config.clearDefaultKeyIf(ex, m, 'k1'), true);
      assert.equal((await config.getDefaults(m)).defaultIssuerId, '');

      // A transaction that fails leaves nothing behind.
      await assert.rejects(
        config.transaction(async (tx) => {
          await config.setDefaultKey(tx, m, 'k-rolled-back');
          throw new Error('abort');
        }),
        /abort/,
      );
      assert.equal((await config.getDefaults(m)).defaultKeyId, '');
      await config.transaction(async (tx) => {
        await config.setDefaultIssuer(tx, m, 'i3');
        await config.setDefaultKey(tx, m, 'k3');
      });
      assert.deepEqual(
        [(await config.getDefaults(m)).defaultIssuerId, (await config.getDefaults(m)).defaultKeyId],
        ['i3', 'k3'],
      );
      await config.clearDefaults(ex, m);
      assert.equal((await config.getDefaults(m)).defaultKeyId, '');
    });

    it('settings of other modules: stored JSON, put-if-absent once, purged with the mount', async () => {
      const m = mountId();
      assert.equal(await config.getSetting(m, 'acme'), undefined);
      assert.equal(await config.putSetting(m, 'acme', { enabled: true }, { onlyIfAbsent: true }), true);
      assert.equal(await config.putSetting(m, 'acme', { enabled: false }, { onlyIfAbsent: true }), false);
      assert.deepEqual(await config.getSetting(m, 'acme'), { enabled: true });
      assert.equal(await config.putSetting(m, 'acme', { enabled: false }), true);
      assert.deepEqual(await config.getSetting(m, 'acme'), { enabled: false });
      await config.updateUrls(m, { issuingCertificates: ['http://a.example/ca'] });
      await config.purge(config.executor, m);
      assert.equal(await config.getSetting(m, 'acme'), undefined);
      assert.deepEqual(await config.getUrls(m), EMPTY_AIA);
    });
  });
}
