import assert from 'node:assert/strict';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { createTestDb, dbKinds } from '../../../test/support/test-db.js';
import type { TestDatabase } from '../../../test/support/test-db.js';
import { rootRequest } from '../../../test/support/pki-core.js';
import { JobQueue } from '../../jobs/job-queue.js';
import { SecretBox } from '../../secrets/secret-box.js';
import { ManualClock } from '../../shared/clock.js';
import { CertRepo } from '../certs/cert-repo.js';
import { CertService } from '../certs/cert-service.js';
import { MountConfigRepo } from '../config/mount-config-repo.js';
import { MountConfigService } from '../config/mount-config-service.js';
import { parseCertificate } from '../crypto/cert-parser.js';
import { buildCsr } from '../crypto/csr.js';
import { basicConstraintsExt } from '../crypto/extensions.js';
import { encodeName } from '../crypto/names.js';
import type { RootRequest } from '../issuers/ca-request.js';
import { CaService } from '../issuers/ca-service.js';
import { IssuerRepo } from '../issuers/issuer-repo.js';
import { IssuerService } from '../issuers/issuer-service.js';
import { KeyRepo } from '../keys/key-repo.js';
import { KeyService } from '../keys/key-service.js';
import type { MountInfo } from '../pki-route.js';
import { ROLE_FIELDS } from '../roles/role.js';
import { RoleRepo } from '../roles/role-repo.js';
import { RoleService } from '../roles/role-service.js';
import { LeaseRepo } from '../sys/lease-repo.js';
import { LeaseService } from '../sys/lease-service.js';
import { IssuanceService } from './issuance-service.js';
import { SIGN_INTERMEDIATE_FIELDS, SIGN_SELF_ISSUED_FIELDS, SIGN_VERBATIM_FIELDS } from './privileged-signing.js';
import { PrivilegedSigningService } from './privileged-signing-service.js';
import type { PrivilegedRequest } from './privileged-signing-service.js';

const root = (over: Partial<RootRequest> = {}): RootRequest =>
  rootRequest({ commonName: 'Module Root', ttl: 86400 * 100, ...over });

/** Role fields as the roles/:name route parses them. */
const roleInput = (body: Record<string, unknown>) =>
  ROLE_FIELDS.parse(body).values as Parameters<RoleService['write']>[2];

/** A CSR for a fresh EC key, made with the engine's own builder (the e2e tests use openssl ones). */
function csr(cn: string, opts: { ca?: boolean } = {}): string {
  const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  return buildCsr({
    subjectDer: encodeName([{ type: 'CN', value: cn }]),
    privateKey,
    extensions: opts.ca ? [basicConstraintsExt(true)] : [],
  }).pem;
}

for (const kind of dbKinds()) {
  describe(`PrivilegedSigningService [${kind}]`, () => {
    let t: TestDatabase;
    let ca: CaService;
    let certs: CertService;
    let roles: RoleService;
    let leases: LeaseService;
    let service: PrivilegedSigningService;
    const clock = new ManualClock(new Date('2030-01-01T00:00:00Z'));
    const limits = { defaultTtlSeconds: 86400, maxTtlSeconds: 86400 * 365 };
    let n = 0;
    const mount = (): MountInfo => ({
      id: `m-${++n}`,
      path: `pki${n}/`,
      type: 'pki',
      defaultLeaseTtlSeconds: 0,
      maxLeaseTtlSeconds: 0,
    });
    const request = (m: MountInfo, path: string, issuerRef?: string): PrivilegedRequest => ({
      mount: m,
      path,
      issuerRef,
      tokenAccessor: undefined,
      mountDefaultTtl: limits.defaultTtlSeconds,
      mountMaxTtl: limits.maxTtlSeconds,
    });

    before(async () => {
      t = await createTestDb(kind);
      const db = t.db.kysely;
      const config = new MountConfigService({ repo: new MountConfigRepo({ db, units: t.db.units }), clock });
      const keys = new KeyService({
        repo: new KeyRepo({ db }),
        config,
        secrets: new SecretBox(randomBytes(32)),
        clock,
      });
      const issuers = new IssuerService({ repo: new IssuerRepo({ db }), keys, config, clock });
      ca = new CaService({ issuers, clock });
      leases = new LeaseService({ db, repo: new LeaseRepo({ db }), clock, jobs: new JobQueue({ db: t.db, clock }) });
      certs = new CertService({ repo: new CertRepo({ db, units: t.db.units }), clock, leases });
      roles = new RoleService({ repo: new RoleRepo({ db, units: t.db.units }), issuers, clock });
      const issuance = new IssuanceService({ roles, issuers, certs, leases, clock });
      service = new PrivilegedSigningService({ issuers, roles, certs, issuance, clock });
    });
    after(async () => t?.cleanup());

    it('signs an intermediate with exact validity from the clock, truncated to the signer, and stores it', async () => {
      const m = mount();
      const r = await ca.generateRoot(m.id, limits, root());
      const v = SIGN_INTERMEDIATE_FIELDS.parse({ csr: csr('Int'), ttl: '1h', not_before_duration: '90s' }).values;
      const out = await service.signIntermediate(request(m, 'root/sign-intermediate'), v);
      const cert = parseCertificate(out.data.certificate as string);
      assert.equal(cert.notBefore.toISOString(), '2029-12-31T23:58:30.000Z');
      assert.equal(cert.notAfter.toISOString(), '2030-01-01T01:00:00.000Z');
      assert.deepEqual(cert.extensions.basicConstraints, { ca: true, pathLen: undefined });
      assert.deepEqual({ leaseId: out.leaseId, leaseDuration: out.leaseDuration }, { leaseId: '', leaseDuration: 0 });
      assert.deepEqual(await certs.listSerials(m.id), [r.certificate.serialHex, cert.serialHex].sort());

      const long = await service.signIntermediate(
        request(m, 'root/sign-intermediate'),
        SIGN_INTERMEDIATE_FIELDS.parse({ csr: csr('Int'), ttl: '200d' }).values,
      );
      assert.equal(
        parseCertificate(long.data.certificate as string).notAfter.getTime(),
        r.certificate.notAfter.getTime(),
      );
      assert.match(long.warnings.join('\n'), /truncated/);
    });

    it('re-signs a self-issued CA without storing it', async () => {
      const m = mount();
      const first = await ca.generateRoot(m.id, limits, root({ issuerName: 'first' }));
      const second = await ca.generateRoot(m.id, limits, root({ issuerName: 'second', commonName: 'Second' }));
      const before = await certs.listSerials(m.id);
      const out = await service.signSelfIssued(
        { mount: m, issuerRef: 'first' },
        SIGN_SELF_ISSUED_FIELDS.parse({ certificate: second.certificate.pem }).values,
      );
      const cert = parseCertificate(out.data.certificate as string);
      assert.deepEqual(cert.issuer.der, parseCertificate(first.certificate.der).subject.der);
      assert.deepEqual(cert.serial, second.certificate.serial);
      assert.deepEqual(await certs.listSerials(m.id), before);
    });

    it('sign-verbatim: lease and metadata with a role (even no_store), none without; refusals store none', async () => {
      const m = mount();
      await ca.generateRoot(m.id, limits, root());
      await roles.write(m.id, 'keep', roleInput({ ttl: '2h' }));
      await roles.write(m.id, 'drop', roleInput({ ttl: '2h', no_store: true }));

      const withRole = await service.signVerbatim(
        { ...request(m, 'sign-verbatim/keep'), roleName: 'keep' },
        SIGN_VERBATIM_FIELDS.parse({ csr: csr('a'), cert_metadata: 'bWV0YQ==' }).values,
      );
      assert.match(withRole.leaseId, /^pki\d+\/sign-verbatim\/keep\//);
      assert.equal(withRole.leaseDuration, 7200);
      const lease = await leases.lookup(withRole.leaseId);
      assert.equal(lease.id, withRole.leaseId);
      const serial = parseCertificate(withRole.data.certificate as string).serialHex;
      assert.equal((await certs.metadata(m.id, serial))?.metadata, 'bWV0YQ==');

      const noStore = await service.signVerbatim(
        { ...request(m, 'sign-verbatim/drop'), roleName: 'drop' },
        SIGN_VERBATIM_FIELDS.parse({ csr: csr('b'), cert_metadata: 'Yg==' }).values,
      );
      const noStoreSerial = parseCertificate(noStore.data.certificate as string).serialHex;
      assert.notEqual(noStore.leaseId, '');
      assert.ok(!(await certs.listSerials(m.id)).includes(noStoreSerial));
      assert.equal((await certs.metadata(m.id, noStoreSerial))?.role, 'drop');

      const noRole = await service.signVerbatim(
        { ...request(m, 'sign-verbatim'), roleName: undefined },
        SIGN_VERBATIM_FIELDS.parse({ csr: csr('c') }).values,
      );
      assert.deepEqual(
        { leaseId: noRole.leaseId, leaseDuration: noRole.leaseDuration },
        { leaseId: '', leaseDuration: 0 },
      );
      assert.ok(
        (await certs.listSerials(m.id)).includes(parseCertificate(noRole.data.certificate as string).serialHex),
      );

      const stored = await certs.listSerials(m.id);
      const metadata = await certs.metadataSerials(m.id);
      await assert.rejects(
        service.signVerbatim(
          { ...request(m, 'sign-verbatim'), roleName: undefined },
          SIGN_VERBATIM_FIELDS.parse({ csr: csr('d', { ca: true }) }).values,
        ),
        /CA certificate/,
      );
      await assert.rejects(
        service.signVerbatim(
          { ...request(m, 'sign-verbatim'), roleName: undefined },
          SIGN_VERBATIM_FIELDS.parse({ csr: csr('e'), cert_metadata: 'Yg==' }).values,
        ),
        /needs a role/,
      );
      assert.deepEqual(await certs.listSerials(m.id), stored);
      assert.deepEqual(await certs.metadataSerials(m.id), metadata);
    });
  });
}
