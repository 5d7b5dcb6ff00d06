import assert from 'node:assert/strict';
import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { opensslRootCa } from '../../../test/e2e/pki-issuers-openssl.js';
import { createTestDb, dbKinds } from '../../../test/support/test-db.js';
import type { TestDatabase } from '../../../test/support/test-db.js';
import { SecretBox } from '../../secrets/secret-box.js';
import { ManualClock } from '../../shared/clock.js';
import { CertRepo } from '../certs/cert-repo.js';
import { CertService } from '../certs/cert-service.js';
import { MountConfigRepo } from '../config/mount-config-repo.js';
import { MountConfigService } from '../config/mount-config-service.js';
import { buildCertificate, createIssuerContext } from '../crypto/cert-builder.js';
import { parseCertificate } from '../crypto/cert-parser.js';
import { parseCsr } from '../crypto/csr.js';
import { encodeName } from '../crypto/names.js';
import { CaService } from '../issuers/ca-service.js';
import { IssuerRepo } from '../issuers/issuer-repo.js';
import { IssuerService } from '../issuers/issuer-service.js';
import { KeyRepo } from '../keys/key-repo.js';
import { KeyService } from '../keys/key-service.js';
import type { MountInfo } from '../pki-route.js';
import type { PolicyServiceEndpoint, PolicyServiceReply } from './external-policy-client.js';
import { ExternalPolicyRepo } from './external-policy-repo.js';
import { ExternalPolicyService } from './external-policy-service.js';
import type { ExternalPolicyRequest } from './external-policy-service.js';

type Answer = Record<string, unknown>;

for (const kind of dbKinds()) {
  describe(`ExternalPolicyService [${kind}]`, () => {
    let t: TestDatabase;
    let svc: ExternalPolicyService;
    let repo: ExternalPolicyRepo;
    let certs: CertService;
    let ca: CaService;
    const clock = new ManualClock(new Date());
    const secrets = new SecretBox(randomBytes(32));
    const root = opensslRootCa('Module Root');
    const client = opensslRootCa('Client');
    const templateSigner = createIssuerContext({
      nameDer: encodeName([{ type: 'CN', value: 't' }]),
      keyId: randomBytes(20),
      privateKey: generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey,
    });
    /** The external service: what it was sent, and what it answers (built from the request's CSR). */
    const calls: { ep: PolicyServiceEndpoint; body: Answer }[] = [];
    let answer: (req: Answer, template: string) => Answer = () => ({});

    const post = async (ep: PolicyServiceEndpoint, text: string): Promise<PolicyServiceReply> => {
      const body = JSON.parse(text) as Answer;
      calls.push({ ep, body });
      const csr = parseCsr((body.user_request_key_values as Answer).csr as string);
      const now = clock.now();
      const template = buildCertificate(templateSigner, {
        subject: [{ type: 'CN', value: 'm.example.com' }],
        spki: csr.spkiDer,
        notBefore: now,
        notAfter: new Date(now.getTime() + 3600_000),
      }).pem;
      return {
        status: 200,
        location: undefined,
        body: JSON.stringify({ request_uuid: body.request_uuid, ...answer(body, template) }),
      };
    };

    const mount = (): MountInfo => ({
      id: randomUUID(),
      path: 'pki/',
      type: 'pki',
      defaultLeaseTtlSeconds: 0,
      maxLeaseTtlSeconds: 0,
    });
    const request = (m: MountInfo, over: Partial<ExternalPolicyRequest> = {}): ExternalPolicyRequest => ({
      mount: m,
      mode: 'issue',
      policyName: 'p',
      issuerRef: undefined,
      userValues: { common_name: 'm.example.com' },
      format: 'pem',
      privateKeyFormat: '',
      removeRootsFromChain: false,
      keyType: 'ec',
      keyBits: 0,
      csr: '',
      actor: undefined,
      mountDefaultTtl: 3600,
      mountMaxTtl: 7200,
      ...over,
    });

    before(async () => {
      t = await createTestDb(kind);
      const db = t.db.kysely;
      const config = new MountConfigService({ repo: new MountConfigRepo({ db, units: t.db.units }), clock });
      const keys = new KeyService({ repo: new KeyRepo({ db }), config, secrets, clock });
      const issuers = new IssuerService({ repo: new IssuerRepo({ db }), keys, config, clock });
      certs = new CertService({ repo: new CertRepo({ db, units: t.db.units }), clock });
      repo = new ExternalPolicyRepo({ db });
      svc = new ExternalPolicyService({ repo, issuers, certs, secrets, clock, post });
      ca = new CaService({ issuers, clock });
    });
    after(async () => t?.cleanup());

    async function configured(): Promise<MountInfo> {
      const m = mount();
      await ca.importBundle(m.id, `${root.keyPem}\n${root.certPem}`, { allowKeys: true });
      await svc.updateConfig(m.id, {
        enabled: true,
        serviceUrl: 'https://policy.test/cieps',
        trustedCa: root.certPem,
        clientBundle: `${client.keyPem}\n${client.certPem}`,
      });
      return m;
    }

    it('unseals the client key only for the call, and tracks validated / last successful request', async () => {
      const m = await configured();
      let c = await svc.getConfig(m.id);
      assert.equal(c.hasClientKey, true);
      assert.equal(c.validatedAt, null);
      assert.equal(c.lastSuccessAt, null);
      const row = await t.db.kysely
        .selectFrom('pki_external_policy')
        .selectAll()
        .where('mount_id', '=', m.id)
        .executeTakeFirstOrThrow();
      assert.equal(
        secrets.openString(row.sealed_client_key!, `pki-external-policy-client-key:${m.id}`).trim(),
        client.keyPem,
      );
      assert.throws(
        () => secrets.openString(row.sealed_client_key!, 'pki-external-policy-client-key:other-mount'),
        /cannot be decrypted/,
      );

      answer = (_req, template) => ({ certificate: template, store_certificate: true });
      clock.advance(5);
      const r = await svc.issue(request(m));
      assert.equal(calls.at(-1)!.ep.clientKeyPem?.trim(), client.keyPem);
      assert.equal(calls.at(-1)!.ep.trustedCa, root.certPem + '\n');
      assert.equal(
        parseCertificate(r.data.certificate as string).issuer.der.equals(parseCertificate(root.certPem).subject.der),
        true,
      );
      c = await svc.getConfig(m.id);
      assert.deepEqual(c.lastSuccessAt, clock.now());
      assert.deepEqual(c.validatedAt, clock.now());

      // A timeout change keeps the status; a new URL resets validated but not the last success.
      clock.advance(5);
      c = await svc.updateConfig(m.id, { timeoutSeconds: 30 });
      assert.notEqual(c.validatedAt, null);
      const settingsBefore = c.updatedAt!;
      c = await svc.updateConfig(m.id, { serviceUrl: 'https://policy2.test/cieps' });
      assert.equal(c.validatedAt, null);
      assert.notEqual(c.lastSuccessAt, null);
      // An answer given under the previous settings does not validate the new service.
      clock.advance(5);
      await repo.recordAnswer(m.id, settingsBefore, clock.now());
      c = await svc.getConfig(m.id);
      assert.equal(c.validatedAt, null);
      assert.deepEqual(c.lastSuccessAt, clock.now());
    });

    it('stores only when asked, turns error-with-certificate and generate_lease into warnings', async () => {
      const m = await configured();
      answer = (_req, template) => ({
        certificate: template,
        store_certificate: false,
        error: 'noted',
        generate_lease: true,
        warnings: ['w1'],
      });
      const r = await svc.issue(request(m));
      assert.equal(r.warnings[0], 'w1');
      assert.equal(r.warnings[1], 'noted');
      assert.match(r.warnings[2]!, /carry no lease/);
      await certs.drain();
      const serials = await certs.listSerials(m.id);
      assert.ok(!serials.includes((r.data.serial_number as string).replaceAll(':', '')), 'not stored');

      answer = (_req, template) => ({ certificate: template, store_certificate: true });
      const stored = await svc.issue(request(m));
      await certs.drain();
      assert.ok((await certs.listSerials(m.id)).includes((stored.data.serial_number as string).replaceAll(':', '')));
    });

    it('is refused while disabled, without calling the service', async () => {
      const m = await configured();
      await svc.updateConfig(m.id, { enabled: false });
      const before = calls.length;
      await assert.rejects(svc.issue(request(m)), /not enabled on this mount/);
      assert.equal(calls.length, before);
    });
  });
}
