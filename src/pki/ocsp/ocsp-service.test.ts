import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { createTestDb, dbKinds } from '../../../test/support/test-db.js';
import type { TestDatabase } from '../../../test/support/test-db.js';
import { ROOT_LIMITS, pkiCore, rootRequest } from '../../../test/support/pki-core.js';
import type { PkiCore } from '../../../test/support/pki-core.js';
import { JobQueue } from '../../jobs/job-queue.js';
import { ManualClock } from '../../shared/clock.js';
import { CertRepo } from '../certs/cert-repo.js';
import { CertService } from '../certs/cert-service.js';
import { ISSUE_FIELDS } from '../issuance/issuance.js';
import { IssuanceService } from '../issuance/issuance-service.js';
import type { MountInfo } from '../pki-route.js';
import { CrlService } from '../revocation/crl-service.js';
import { RevocationRepo } from '../revocation/revocation-repo.js';
import { RevocationService } from '../revocation/revocation-service.js';
import { ROLE_FIELDS, ROLE_FIELD_NAMES } from '../roles/role.js';
import { RoleRepo } from '../roles/role-repo.js';
import { RoleService } from '../roles/role-service.js';
import { LeaseRepo } from '../sys/lease-repo.js';
import { LeaseService } from '../sys/lease-service.js';
import { ocspSettings } from './ocsp.js';
import { OcspService } from './ocsp-service.js';

const dir = mkdtempSync(join(tmpdir(), 'ocsp-svc-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const file = (content: string | Buffer): string => {
  const p = join(dir, `f${++files}`);
  writeFileSync(p, content);
  return p;
};

/** An OCSP request made by openssl for `serialHex` under `issuerPem`. */
function opensslRequest(issuerPem: string, serialHex: string, nonce: boolean): Buffer {
  const out = join(dir, `req${++files}.der`);
  const args = ['ocsp', '-issuer', file(issuerPem), '-serial', `0x${serialHex}`, '-reqout', out];
  const r = spawnSync('openssl', [...args, nonce ? '-nonce' : '-no_nonce'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return readFileSync(out);
}

/** The nonce openssl prints in the text of a request or response, or undefined. */
const nonceIn = (text: string): string | undefined => /OCSP Nonce:\s*\n\s*([0-9A-F]+)/.exec(text)?.[1];

/**
 * openssl's reading of the response to `request`, its signature verified against the issuer:
 * the certificate status, and whether the response carries the request's nonce.
 */
function opensslStatus(request: Buffer, response: Buffer, issuerPem: string, serialHex: string): string {
  const issuer = file(issuerPem);
  // -no_nonce: openssl would add a nonce of its own to the request it reads.
  const args = ['ocsp', '-reqin', file(request), '-respin', file(response), '-issuer', issuer, '-CAfile', issuer];
  const r = spawnSync('openssl', [...args, '-serial', `0x${serialHex}`, '-no_nonce'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /Response verify OK/);
  const text = (opts: string[]) => spawnSync('openssl', ['ocsp', ...opts], { encoding: 'utf8' }).stdout;
  const sent = nonceIn(text(['-reqin', file(request), '-req_text']));
  const echoed = nonceIn(text(['-respin', file(response), '-resp_text', '-noverify']));
  assert.equal(echoed, sent, 'the nonce is echoed, and only when sent');
  return (r.stdout.match(/^0x[0-9A-Fa-f]+: (\w+)/m) ?? [])[1] ?? r.stdout;
}

for (const kind of dbKinds()) {
  describe(`OcspService [${kind}]`, () => {
    let t: TestDatabase;
    let core: PkiCore;
    let issuance: IssuanceService;
    let revocation: RevocationService;
    let crls: CrlService;
    // openssl checks validity against the real time.
    const clock = new ManualClock(new Date());
    let n = 0;
    const newMount = (): MountInfo => ({
      id: `ocsp-${++n}`,
      path: `pki${n}/`,
      type: 'pki',
      defaultLeaseTtlSeconds: 0,
      maxLeaseTtlSeconds: 0,
    });
    /** A node's responder on the test database. */
    const responder = () =>
      new OcspService({
        issuers: core.issuers,
        clock,
        sources: {
          revocationStatuses: (mountId, serials) => revocation.statusMany(mountId, serials),
          settings: async (mountId) => ocspSettings(await crls.getConfig(mountId)),
        },
      });

    before(async () => {
      t = await createTestDb(kind);
      const db = t.db.kysely;
      core = pkiCore(t.db, clock);
      const jobs = new JobQueue({ db: t.db, clock });
      const leases = new LeaseService({ db, repo: new LeaseRepo({ db, kind: t.db.kind }), clock, jobs });
      const certs = new CertService({ repo: new CertRepo({ db, units: t.db.units }), clock, leases });
      const roles = new RoleService({ repo: new RoleRepo({ db, units: t.db.units }), issuers: core.issuers, clock });
      issuance = new IssuanceService({ roles, issuers: core.issuers, certs, leases, clock });
      const revocationRepo = new RevocationRepo({ db, units: t.db.units });
      crls = new CrlService({
        repo: revocationRepo,
        issuers: core.issuers,
        jobs,
        clock,
        logger: pino({ level: 'silent' }),
      });
      revocation = new RevocationService({ repo: revocationRepo, crls, issuers: core.issuers, certs, clock });
      const { values } = ROLE_FIELDS.parse({ allow_any_name: true, key_type: 'ec', key_bits: 256, ttl: '1h' });
      roleInput = Object.fromEntries(ROLE_FIELD_NAMES.map((k) => [k, values[k]])) as typeof roleInput;
      roleService = roles;
    });
    after(async () => t?.cleanup());

    let roleInput: Parameters<RoleService['write']>[2];
    let roleService: RoleService;
    /** A mount with a root and a role, and one certificate issued from it. */
    async function issued(): Promise<{ mount: MountInfo; rootPem: string; serialHex: string }> {
      const mount = newMount();
      const root = await core.ca.generateRoot(mount.id, ROOT_LIMITS, rootRequest());
      await roleService.write(mount.id, 'any', roleInput);
      const input = ISSUE_FIELDS.parse({ common_name: 'leaf.example.com' }).values;
      const r = await issuance.issue({
        mount,
        path: 'issue/any',
        roleName: 'any',
        issuerRef: undefined,
        input,
        tokenAccessor: undefined,
        mountDefaultTtl: 86400,
        mountMaxTtl: 86400 * 30,
      });
      const serialHex = String(r.data.serial_number).replaceAll(':', '');
      return { mount, rootPem: root.certificate.pem, serialHex };
    }

    it('answers good, then revoked at once after a revocation, signed by the issuer', async () => {
      const { mount, rootPem, serialHex } = await issued();
      const ocsp = responder();
      const request = opensslRequest(rootPem, serialHex, false);
      const first = await ocsp.answer(mount.id, request);
      assert.equal(first.status, 'successful');
      assert.equal(first.hasNonce, false);
      assert.equal(opensslStatus(request, first.body, rootPem, serialHex), 'good');
      const again = await ocsp.answer(mount.id, request);
      assert.deepEqual(again.body, first.body, 'an unchanged status is answered with the same signed response');

      await revocation.revoke(mount.id, { serialNumber: serialHex }, { requireKey: false });
      const after = await ocsp.answer(mount.id, request);
      assert.equal(opensslStatus(request, after.body, rootPem, serialHex), 'revoked');
      // Another node, with nothing cached, says the same.
      assert.equal(
        opensslStatus(request, (await responder().answer(mount.id, request)).body, rootPem, serialHex),
        'revoked',
      );
    });

    it('answers good for a serial the mount never stored (as Vault does), and echoes a nonce', async () => {
      const { mount, rootPem } = await issued();
      const serial = '0123456789abcdef';
      const request = opensslRequest(rootPem, serial, true);
      const a = await responder().answer(mount.id, request);
      assert.equal(a.status, 'successful');
      assert.equal(a.hasNonce, true);
      const text = spawnSync('openssl', ['ocsp', '-respin', file(a.body), '-resp_text', '-noverify'], {
        encoding: 'utf8',
      });
      assert.ok(nonceIn(text.stdout), 'the response carries a nonce');
      assert.equal(opensslStatus(request, a.body, rootPem, serial), 'good');
    });

    it('answers malformedRequest to bytes that are not a request, and unauthorized when OCSP is disabled', async () => {
      const { mount, rootPem, serialHex } = await issued();
      const ocsp = responder();
      for (const bad of [undefined, Buffer.alloc(0), Buffer.from('not der at all')]) {
        const a = await ocsp.answer(mount.id, bad);
        assert.equal(a.status, 'malformedRequest');
        assert.ok(a.body.length > 0, 'still an OCSPResponse');
      }
      await crls.updateConfig(mount.id, { ocspDisable: true });
      ocsp.forgetMount(mount.id);
      assert.equal((await ocsp.answer(mount.id, opensslRequest(rootPem, serialHex, false))).status, 'unauthorized');
    });
  });
}
