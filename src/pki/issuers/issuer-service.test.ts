import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { createTestDb, dbKinds } from '../../../test/support/test-db.js';
import type { TestDatabase } from '../../../test/support/test-db.js';
import { rootRequest } from '../../../test/support/pki-core.js';
import { SecretBox } from '../../secrets/secret-box.js';
import { ManualClock } from '../../shared/clock.js';
import { MountConfigRepo } from '../config/mount-config-repo.js';
import { MountConfigService } from '../config/mount-config-service.js';
import { buildCertificate } from '../crypto/cert-builder.js';
import { generateKeyPairSync } from 'node:crypto';
import { spkiDer } from '../crypto/keys.js';
import { KeyRepo } from '../keys/key-repo.js';
import { KeyService } from '../keys/key-service.js';
import { CaService } from './ca-service.js';
import { IssuerRepo } from './issuer-repo.js';
import { IssuerService } from './issuer-service.js';

function opensslVerify(leafPem: string, chainPems: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'issuer-svc-'));
  try {
    writeFileSync(join(dir, 'root.pem'), chainPems[chainPems.length - 1]! + '\n');
    writeFileSync(join(dir, 'untrusted.pem'), chainPems.slice(0, -1).join('\n') + '\n');
    writeFileSync(join(dir, 'leaf.pem'), leafPem);
    const args = ['verify', '-x509_strict', '-CAfile', join(dir, 'root.pem')];
    if (chainPems.length > 1) args.push('-untrusted', join(dir, 'untrusted.pem'));
    return execFileSync('openssl', [...args, join(dir, 'leaf.pem')], { encoding: 'utf8' });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

for (const kind of dbKinds()) {
  describe(`IssuerService signing context [${kind}]`, () => {
    let t: TestDatabase;
    let issuers: IssuerService;
    let ca: CaService;
    let config: MountConfigService;
    const secrets = new SecretBox(randomBytes(32));
    const clock = new ManualClock(new Date());
    const limits = { defaultTtlSeconds: 86400 * 32, maxTtlSeconds: 86400 * 3650 };
    before(async () => {
      t = await createTestDb(kind);
      const db = t.db.kysely;
      config = new MountConfigService({ repo: new MountConfigRepo({ db, units: t.db.units }), clock });
      const keys = new KeyService({ repo: new KeyRepo({ db }), config, secrets, clock });
      issuers = new IssuerService({ repo: new IssuerRepo({ db }), keys, config, clock });
      ca = new CaService({ issuers, clock });
    });
    after(async () => t?.cleanup());

    it('gives issuance a context whose certificates chain to the root under openssl, with the mount URLs', async () => {
      const mountId = 'mount-ctx';
      await config.updateUrls(mountId, {
        issuingCertificates: ['http://aia.example.com/ca'],
        crlDistributionPoints: ['http://aia.example.com/crl'],
      });
      const root = await ca.generateRoot(mountId, limits, rootRequest({ issuerName: 'root' }));
      const ctx = await issuers.getSigningContext(mountId, 'default');
      assert.equal(ctx.issuer.id, root.issuer.id);
      assert.deepEqual(ctx.caChainPems, [root.certificate.pem.trimEnd()]);
      assert.equal(ctx.certificatePem, root.certificate.pem.trimEnd());
      assert.deepEqual(ctx.urls.issuingCertificates, ['http://aia.example.com/ca']);
      assert.equal(ctx.issuer.leafNotAfterBehavior, 'err');
      assert.ok(ctx.issuer.usage.includes('issuing-certificates'));

      const leafKey = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
      const now = clock.now();
      const leaf = buildCertificate(ctx.context, {
        subject: [{ type: 'CN', value: 'leaf.example.com' }],
        spki: spkiDer(leafKey.publicKey),
        notBefore: now,
        notAfter: new Date(now.getTime() + 3600_000),
        keyUsage: ['DigitalSignature'],
        extKeyUsage: ['ServerAuth'],
        subjectAltNames: [{ type: 'dns', value: 'leaf.example.com' }],
      });
      assert.match(opensslVerify(leaf.pem, ctx.caChainPems), /OK/);
      const text = execFileSync('openssl', ['x509', '-noout', '-text'], { input: leaf.pem, encoding: 'utf8' });
      assert.match(text, /CA Issuers - URI:http:\/\/aia\.example\.com\/ca/);
      assert.match(text, /URI:http:\/\/aia\.example\.com\/crl/);

      // The prepared context (and its parsed key) is reused while nothing changes.
      const again = await issuers.getSigningContext(mountId, root.issuer.id);
      assert.equal(again.context, ctx.context);
      // Per-issuer AIA replaces config/urls.
      await issuers.update(mountId, 'root', { issuingCertificates: ['http://issuer.example.com/ca'] });
      const changed = await issuers.getSigningContext(mountId, 'root');
      assert.notEqual(changed.context, ctx.context);
      assert.deepEqual(changed.urls.issuingCertificates, ['http://issuer.example.com/ca']);
      assert.deepEqual(changed.urls.crlDistributionPoints, []);
    });

    it('chains an intermediate to its root and refuses issuers without a key or usage', async () => {
      const mountId = 'mount-chain';
      const root = await ca.generateRoot(mountId, limits, rootRequest({ type: 'exported', issuerName: 'root' }));
      const inter = await ca.generateIntermediate(mountId, {
        ...rootRequest({ commonName: 'Int' }),
        addBasicConstraints: false,
        keyUsage: [],
      });
      // Sign the CSR with the root's context, as sign-intermediate will.
      const rootCtx = await issuers.getSigningContext(mountId, 'root');
      const { parseCsr } = await import('../crypto/csr.js');
      const csr = parseCsr(inter.csr.pem);
      const now = clock.now();
      const cert = buildCertificate(rootCtx.context, {
        subject: csr.subject.der,
        spki: csr.spkiDer,
        notBefore: now,
        notAfter: new Date(now.getTime() + 86400_000),
        basicConstraints: { ca: true },
        keyUsage: ['CertSign', 'CRLSign'],
      });
      const imported = await ca.importBundle(mountId, cert.pem, { allowKeys: false });
      const intId = imported.importedIssuers[0]!;
      assert.equal(imported.mapping[intId], inter.key.id);
      const ctx = await issuers.getSigningContext(mountId, intId);
      assert.deepEqual(ctx.caChainPems, [cert.pem.trimEnd(), root.certificate.pem.trimEnd()]);
      const leafKey = generateKeyPairSync('ed25519');
      const leaf = buildCertificate(ctx.context, {
        subject: [{ type: 'CN', value: 'deep.example.com' }],
        spki: spkiDer(leafKey.publicKey),
        notBefore: now,
        notAfter: new Date(now.getTime() + 3600_000),
      });
      assert.match(opensslVerify(leaf.pem, ctx.caChainPems), /OK/);

      await issuers.update(mountId, intId, { usage: ['read-only', 'crl-signing'] });
      await assert.rejects(issuers.getSigningContext(mountId, intId), /issuing-certificates/);
      assert.ok(await issuers.getSigningContext(mountId, intId, { usage: 'crl-signing' }));
      const other = await ca.importBundle('mount-keyless', root.certificate.pem, { allowKeys: false });
      await assert.rejects(issuers.getSigningContext('mount-keyless', other.importedIssuers[0]!), /no private key/);
      await assert.rejects(
        issuers.getSigningContext(mountId, 'missing'),
        /unable to find PKI issuer for reference: missing/,
      );
    });

    it('tells listeners about changes and revokes issuers out of issuing', async () => {
      const seen: string[] = [];
      issuers.onIssuersChanged((m) => seen.push(m));
      const r = await ca.generateRoot('mount-rev', limits, rootRequest({ issuerName: 'rev' }));
      assert.deepEqual(seen, ['mount-rev']);
      assert.equal(await issuers.markRevoked('mount-rev', r.issuer.id), true);
      assert.equal(await issuers.markRevoked('mount-rev', r.issuer.id), false);
      const after = await issuers.resolve('mount-rev', 'rev');
      assert.ok(after.revokedAt);
      assert.deepEqual(after.usage, ['crl-signing', 'ocsp-signing', 'read-only']);
      await assert.rejects(issuers.getSigningContext('mount-rev', 'rev'), /issuing-certificates/);
      await assert.rejects(issuers.update('mount-rev', 'rev', { usage: ['issuing-certificates'] }), /revoked/);
      await issuers.delete('mount-rev', 'rev');
      assert.deepEqual(seen, ['mount-rev', 'mount-rev', 'mount-rev']);
    });

    it('seals private keys at rest, bound to the key id', async () => {
      const r = await ca.generateRoot('mount-sealed', limits, rootRequest({ type: 'exported' }));
      const row = await t.db.kysely
        .selectFrom('pki_keys')
        .selectAll()
        .where('id', '=', r.key.id)
        .executeTakeFirstOrThrow();
      assert.doesNotMatch(row.sealed_private_key, /PRIVATE KEY/);
      const pem = secrets.open(row.sealed_private_key, `pki-key:${r.key.id}`).toString('utf8');
      assert.match(pem, /^-----BEGIN EC PRIVATE KEY-----/);
      assert.throws(() => secrets.open(row.sealed_private_key, 'pki-key:other'));
    });

    it('keeps keys and issuers of different mounts apart and purges one mount', async () => {
      const a = await ca.generateRoot('mount-a', limits, rootRequest({ issuerName: 'same' }));
      const b = await ca.generateRoot('mount-b', limits, rootRequest({ issuerName: 'same' }));
      assert.notEqual(a.issuer.id, b.issuer.id);
      assert.equal((await issuers.resolve('mount-a', 'same')).id, a.issuer.id);
      await assert.rejects(issuers.resolve('mount-a', b.issuer.id), /unable to find/);
      await issuers.purgeMount('mount-a');
      assert.equal((await issuers.list('mount-a')).issuers.length, 0);
      assert.equal(await issuers.storedCertificate('mount-a', a.certificate.serialHex), undefined);
      assert.equal((await issuers.list('mount-b')).issuers.length, 1);
    });
  });
}
