import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { createTestDb, dbKinds } from '../../../test/support/test-db.js';
import type { TestDatabase } from '../../../test/support/test-db.js';
import { JobQueue } from '../../jobs/job-queue.js';
import { SecretBox } from '../../secrets/secret-box.js';
import { ManualClock } from '../../shared/clock.js';
import { CertRepo } from '../certs/cert-repo.js';
import { CertService } from '../certs/cert-service.js';
import { MountConfigRepo } from '../config/mount-config-repo.js';
import { MountConfigService } from '../config/mount-config-service.js';
import { ExternalPolicyRepo } from '../external-policy/external-policy-repo.js';
import { ExternalPolicyService } from '../external-policy/external-policy-service.js';
import { IssuanceService } from '../issuance/issuance-service.js';
import { PrivilegedSigningService } from '../issuance/privileged-signing-service.js';
import { IssuerRepo } from '../issuers/issuer-repo.js';
import { IssuerService } from '../issuers/issuer-service.js';
import { KeyRepo } from '../keys/key-repo.js';
import { KeyService } from '../keys/key-service.js';
import type { MountInfo } from '../pki-route.js';
import { CrlService } from '../revocation/crl-service.js';
import { RevocationRepo } from '../revocation/revocation-repo.js';
import { RevocationService } from '../revocation/revocation-service.js';
import { RoleRepo } from '../roles/role-repo.js';
import { RoleService } from '../roles/role-service.js';
import { LeaseRepo } from '../sys/lease-repo.js';
import { LeaseService } from '../sys/lease-service.js';
import { AcmeError, acmeError } from './acme.js';
import type { AcmeAccount } from './acme.js';
import { AcmeRepo } from './acme-repo.js';
import { AcmeService } from './acme-service.js';
import type { AcmeDirectory } from './acme-service.js';
import type { ValidationTarget } from './acme-validator.js';

/** Reads until `done` holds (validations run in the background), with a generous deadline. */
async function settled<T>(read: () => Promise<T>, done: (v: T) => boolean): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const v = await read();
    if (done(v) || Date.now() > deadline) return v;
    await new Promise((r) => setTimeout(r, 20));
  }
}

const typeOf = async (p: Promise<unknown>): Promise<string> => {
  try {
    await p;
  } catch (err) {
    if (err instanceof AcmeError) return err.acmeType;
    return `kind:${(err as { kind?: string }).kind}`;
  }
  return 'none';
};

for (const kind of dbKinds()) {
  describe(`AcmeService [${kind}]`, () => {
    let t: TestDatabase;
    const clock = new ManualClock(new Date('2031-01-01T00:00:00Z'));
    const secrets = new SecretBox(randomBytes(32));
    const mount: MountInfo = {
      id: 'm1',
      path: 'pki/',
      type: 'pki',
      defaultLeaseTtlSeconds: 0,
      maxLeaseTtlSeconds: 0,
    };
    /** What the validator is asked, and how it answers next. */
    const asked: ValidationTarget[] = [];
    let answer: (t: ValidationTarget) => Promise<void> = async () => {};

    /** The service as the composition root builds it, on this test's database. */
    const build = (nonceScope: 'shared' | 'process' = 'shared'): AcmeService => {
      const db = t.db.kysely;
      const mountConfig = new MountConfigService({ repo: new MountConfigRepo({ db, units: t.db.units }), clock });
      const keys = new KeyService({ repo: new KeyRepo({ db }), config: mountConfig, secrets, clock });
      const issuers = new IssuerService({ repo: new IssuerRepo({ db }), keys, config: mountConfig, clock });
      const jobs = new JobQueue({ db: t.db, clock });
      const leases = new LeaseService({ db, repo: new LeaseRepo({ db, kind: t.db.kind }), clock, jobs });
      const certs = new CertService({ repo: new CertRepo({ db, units: t.db.units }), clock, leases });
      const roles = new RoleService({ repo: new RoleRepo({ db, units: t.db.units }), issuers, clock });
      const issuance = new IssuanceService({ roles, issuers, certs, leases, clock });
      const privileged = new PrivilegedSigningService({ issuers, roles, certs, issuance, clock });
      const externalPolicy = new ExternalPolicyService({
        repo: new ExternalPolicyRepo({ db }),
        issuers,
        certs,
        secrets,
        clock,
      });
      const revocationRepo = new RevocationRepo({ db, units: t.db.units });
      const crls = new CrlService({ repo: revocationRepo, issuers, jobs, clock, logger: pino({ level: 'silent' }) });
      const revocation = new RevocationService({ repo: revocationRepo, crls, issuers, certs, clock });
      return new AcmeService({
        repo: new AcmeRepo({ db, units: t.db.units }),
        clock,
        secrets,
        mountConfig,
        roles,
        issuance,
        privileged,
        externalPolicy,
        revocation,
        validate: async (target) => {
          asked.push(target);
          await answer(target);
        },
        nonceScope,
      });
    };
    let acme: AcmeService;
    let dir: AcmeDirectory;
    const jwk = () => ({ kty: 'OKP', crv: 'Ed25519', x: randomBytes(32).toString('base64url') });
    const account = async (): Promise<AcmeAccount> => {
      const key = jwk();
      const r = await acme.newAccount(dir, {
        jwk: key,
        thumbprint: randomBytes(32).toString('base64url'),
        contact: [],
        termsOfServiceAgreed: true,
        onlyReturnExisting: false,
        eab: undefined,
      });
      return r.account;
    };

    before(async () => {
      t = await createTestDb(kind);
      acme = build();
      const mc = new MountConfigService({ repo: new MountConfigRepo({ db: t.db.kysely, units: t.db.units }), clock });
      await mc.updateCluster(mount.id, { path: 'https://ca.example/v1/pki' });
      await acme.updateConfig(mount.id, { enabled: true });
      dir = await acme.directory(mount, { issuerRef: undefined, role: undefined });
    });
    after(async () => {
      await acme.close();
      await t.cleanup();
    });

    it('config: defaults, partial updates, disabled means not found', async () => {
      const other: MountInfo = { ...mount, id: 'm2' };
      assert.equal((await acme.getConfig(other.id)).enabled, false);
      assert.equal(await typeOf(acme.directory(other, { issuerRef: undefined, role: undefined })), 'kind:not_found');
      const c = await acme.updateConfig(other.id, { enabled: true, eabPolicy: 'always-required' });
      assert.deepEqual(c.allowedRoles, ['*']);
      assert.equal(c.eabPolicy, 'always-required');
      assert.equal(await typeOf(acme.directory(other, { issuerRef: undefined, role: undefined })), 'serverInternal');
      assert.equal(dir.baseUrl, 'https://ca.example/v1/pki/acme/');
    });

    /** Checks a nonce as the edge does, then uses it up. */
    const useNonce = async (svc: AcmeService, nonce: string, mountId = mount.id): Promise<void> => {
      const checked = await svc.checkNonce(mountId, nonce);
      if (!checked) throw acmeError('badNonce', 'not ours');
      await svc.useNonce(checked);
    };

    it('nonces shared through the database: single use across two services, refused once expired', async () => {
      const second = build();
      const n1 = await acme.newNonce(mount.id);
      await useNonce(acme, n1);
      assert.equal(await typeOf(useNonce(second, n1)), 'badNonce');
      assert.equal(await typeOf(acme.useNonce({ nonce: 'n-2', expiresAt: clock.now(), seq: 0 })), 'badNonce');
      // Concurrent uses of one nonce: exactly one wins.
      const n3 = await second.newNonce(mount.id);
      const results = await Promise.all(
        Array.from({ length: 5 }, (_, i) => typeOf(useNonce(i % 2 ? second : acme, n3))),
      );
      assert.deepEqual(results.filter((r) => r === 'none').length, 1);
      await second.close();
    });

    it('process nonces: single use, refused by another process or mount, older ones still good', async () => {
      const one = build('process');
      const other = build('process');
      const n = await one.newNonce(mount.id);
      assert.equal(await typeOf(useNonce(other, n)), 'badNonce');
      assert.equal(await typeOf(useNonce(one, n, 'another-mount')), 'badNonce');
      const results = await Promise.all(Array.from({ length: 5 }, () => typeOf(useNonce(one, n))));
      assert.deepEqual(results.filter((r) => r === 'none').length, 1);
      const older = await one.newNonce(mount.id);
      const newer = await Promise.all(Array.from({ length: 1000 }, () => one.newNonce(mount.id)));
      await useNonce(one, newer[999]!);
      await useNonce(one, older);
      assert.equal(await typeOf(useNonce(one, older)), 'badNonce');
      assert.equal(
        await typeOf(one.useNonce({ nonce: older, expiresAt: new Date(clock.now().getTime() - 1), seq: 2 })),
        'badNonce',
      );
      await Promise.all([one.close(), other.close()]);
    });

    it('accounts: one per key, EAB single use and bound to its directory', async () => {
      const key = jwk();
      const input = {
        jwk: key,
        thumbprint: 'thumb-1',
        contact: ['mailto:a@example.com'],
        termsOfServiceAgreed: true,
        onlyReturnExisting: false,
        eab: undefined,
      };
      const [a, b] = await Promise.all([acme.newAccount(dir, input), acme.newAccount(dir, input)]);
      assert.equal(a.account.id, b.account.id);
      assert.deepEqual([a.created, b.created].sort(), [false, true]);
      assert.equal(await typeOf(acme.newAccount(dir, { ...input, contact: ['tel:1'] })), 'none');
      assert.equal(
        await typeOf(acme.newAccount(dir, { ...input, thumbprint: 'x', contact: ['tel:1'] })),
        'unsupportedContact',
      );
      const eab = await acme.newEab(mount, { issuerRef: undefined, role: 'web' });
      const withEab = (thumbprint: string, ok = true) => ({
        ...input,
        thumbprint,
        eab: { kid: eab.id, verify: (k: Buffer) => ok && k.equals(Buffer.from(eab.key, 'base64url')) },
      });
      assert.equal(await typeOf(acme.newAccount(dir, withEab('t-2'))), 'unauthorized');
      const roleDir = await acme.directory(mount, { issuerRef: undefined, role: 'web' });
      assert.equal(await typeOf(acme.newAccount(roleDir, withEab('t-3', false))), 'unauthorized');
      const made = await acme.newAccount(roleDir, withEab('t-4'));
      assert.equal(made.account.eab?.id, eab.id);
      assert.equal(await typeOf(acme.newAccount(roleDir, withEab('t-5'))), 'unauthorized');
      assert.deepEqual(await acme.listEab(mount.id), []);
    });

    it('validation: retried, decided once, the order ready when all authorizations are valid', async () => {
      const acct = await account();
      const { order, authzs } = await acme.newOrder(dir, acct, {
        identifiers: [
          { type: 'dns', value: 'a.example.com' },
          { type: 'dns', value: 'b.example.com' },
        ],
      });
      asked.length = 0;
      let failures = 1;
      answer = async () => {
        if (failures-- > 0) throw new AcmeError('connection', 'not yet');
      };
      await acme.respondToChallenge(dir, acct, authzs[0]!.id, 'http-01');
      // A second response while it runs changes nothing.
      await acme.respondToChallenge(dir, acct, authzs[0]!.id, 'dns-01');
      await acme.validations.close();
      // close() stopped the retry; a fresh service resumes it once the lease has run out.
      acme = build();
      clock.advance(40);
      const abandoned = await acme.authorization(dir, acct, authzs[0]!.id);
      assert.equal(abandoned.challenges.find((c) => c.type === 'http-01')?.status, 'processing');
      const done = await settled(
        () => acme.authorization(dir, acct, authzs[0]!.id),
        (a) => a.status !== 'pending',
      );
      assert.equal(done.status, 'valid');
      assert.equal(done.challenges.find((c) => c.type === 'dns-01')?.status, 'pending');
      assert.deepEqual(
        asked.map((a) => [a.type, a.identifier.value, a.keyAuthorization.startsWith(`${authzs[0]!.token}.`)]),
        [
          ['http-01', 'a.example.com', true],
          ['http-01', 'a.example.com', true],
        ],
      );
      assert.equal((await acme.order(dir, acct, order.id)).status, 'pending');
      await acme.respondToChallenge(dir, acct, authzs[1]!.id, 'dns-01');
      const ready = await settled(
        () => acme.order(dir, acct, order.id),
        (o) => o.status !== 'pending',
      );
      assert.equal(ready.status, 'ready');
    });

    it('validation failing every attempt makes the authorization and the order invalid', async () => {
      const acct = await account();
      const { order, authzs } = await acme.newOrder(dir, acct, { identifiers: [{ type: 'ip', value: '10.0.0.1' }] });
      answer = async () => {
        throw new AcmeError('incorrectResponse', 'wrong key authorization');
      };
      await acme.respondToChallenge(dir, acct, authzs[0]!.id, 'http-01');
      // Three attempts, 1 s and 3 s apart (real timers): wait for the outcome.
      const a = await settled(
        () => acme.authorization(dir, acct, authzs[0]!.id),
        (x) => x.status !== 'pending',
      );
      assert.equal(a.status, 'invalid');
      const c = a.challenges.find((x) => x.type === 'http-01')!;
      assert.equal(c.attempts, 3);
      assert.deepEqual(c.error, { type: 'incorrectResponse', detail: 'wrong key authorization' });
      const o = await acme.order(dir, acct, order.id);
      assert.equal(o.status, 'invalid');
      assert.equal(o.error?.type, 'incorrectResponse');
    });

    it("another account's order or authorization is not found; deactivation invalidates the order", async () => {
      const a = await account();
      const b = await account();
      const { order, authzs } = await acme.newOrder(dir, a, { identifiers: [{ type: 'dns', value: 'c.example.com' }] });
      assert.equal(await typeOf(acme.order(dir, b, order.id)), 'kind:not_found');
      assert.equal(await typeOf(acme.authorization(dir, b, authzs[0]!.id)), 'kind:not_found');
      const d = await acme.deactivateAuthorization(dir, a, authzs[0]!.id);
      assert.equal(d.status, 'deactivated');
      assert.equal((await acme.order(dir, a, order.id)).status, 'invalid');
      assert.equal(await typeOf(acme.deactivateAuthorization(dir, a, authzs[0]!.id)), 'malformed');
    });
  });
}
