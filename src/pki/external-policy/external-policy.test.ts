import assert from 'node:assert/strict';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { buildCertificate, createIssuerContext } from '../crypto/cert-builder.js';
import { parseCertificate } from '../crypto/cert-parser.js';
import { EXT } from '../crypto/extensions.js';
import { spkiDer } from '../crypto/keys.js';
import { encodeName } from '../crypto/names.js';
import {
  ExternalPolicyFailure,
  buildCiepsRequest,
  goDuration,
  parseCiepsAnswer,
  resignTemplate,
  templateSignatureOptions,
  validateConfig,
} from './external-policy.js';

const UUID = '0c3f1a52-7d44-4d7e-9a0e-2f7b8c1d6e5f';
const ecKey = () => generateKeyPairSync('ec', { namedCurve: 'prime256v1' });

function template(opts: { ca?: boolean; notAfter?: Date; key?: ReturnType<typeof ecKey> } = {}) {
  const signer = createIssuerContext({
    nameDer: encodeName([{ type: 'CN', value: 'tmpl' }]),
    keyId: randomBytes(20),
    privateKey: ecKey().privateKey,
    urls: { ocspServers: ['http://tmpl/ocsp'] },
  });
  const subject = opts.key ?? ecKey();
  const built = buildCertificate(signer, {
    subject: [{ type: 'CN', value: 'a.example.com' }],
    spki: spkiDer(subject.publicKey),
    notBefore: new Date('2026-01-01T00:00:00Z'),
    notAfter: opts.notAfter ?? new Date('2026-02-01T00:00:00Z'),
    subjectAltNames: [{ type: 'dns', value: 'a.example.com' }],
    ...(opts.ca ? { basicConstraints: { ca: true }, keyUsage: ['CertSign'] } : { keyUsage: ['DigitalSignature'] }),
  });
  return { cert: parseCertificate(built.der), spki: spkiDer(subject.publicKey) };
}

describe('external policy rules', () => {
  it('formats TTLs as Go durations', () => {
    assert.deepEqual([0, 5, 90, 3600, 768 * 3600, 3661].map(goDuration), [
      '0s',
      '5s',
      '1m30s',
      '1h0m0s',
      '768h0m0s',
      '1h1m1s',
    ]);
  });

  it('validates the configuration', () => {
    const base = {
      enabled: true,
      serviceUrl: 'https://p.example:8443/x',
      timeoutSeconds: 15,
      trustedCa: 'ca',
      trustedLeafBundle: '',
    };
    validateConfig(base);
    validateConfig({ ...base, enabled: false, serviceUrl: '', trustedCa: '' });
    const bad: [object, RegExp][] = [
      [{ serviceUrl: 'http://p.example' }, /https/],
      [{ serviceUrl: 'https://u:p@p.example' }, /credentials/],
      [{ serviceUrl: '' }, /required to enable/],
      [{ trustedCa: '' }, /one of trusted_ca/],
      [{ trustedLeafBundle: 'x' }, /only one of/],
      [{ timeoutSeconds: 0 }, /timeout/],
      [{ timeoutSeconds: 301 }, /timeout/],
    ];
    for (const [patch, msg] of bad)
      assert.throws(() => validateConfig({ ...base, ...patch }), msg, JSON.stringify(patch));
  });

  it('builds the version 1 request with the trusted values apart from the user values', () => {
    const body = buildCiepsRequest({
      uuid: UUID,
      mode: 'issue',
      policyName: '',
      mountPath: 'pki/',
      userValues: { common_name: 'x', csr: 'CSR' },
      identity: undefined,
      requestedIssuer: undefined,
      mountDefaultTtlSeconds: 3600,
      mountMaxTtlSeconds: 7200,
    });
    assert.deepEqual(Object.keys(body), [
      'request_version',
      'request_uuid',
      'synchronous',
      'user_request_key_values',
      'vault_request_values',
    ]);
    const vr = body.vault_request_values as Record<string, unknown>;
    assert.equal('policy_name' in vr, false);
    assert.equal(vr.vault_generated_private_key, true);
    assert.equal(vr.requested_issuer_id, '');
    assert.deepEqual((vr.requested_issuance_config as Record<string, unknown>).mount_max_ttl, '2h0m0s');
  });

  it('reads answers strictly', () => {
    const ok = parseCiepsAnswer(
      JSON.stringify({
        request_uuid: UUID,
        certificate: 'PEM',
        warnings: ['w'],
        issuer_ref: 'r',
        store_certificate: true,
        error: null,
      }),
      UUID,
    );
    assert.deepEqual(ok, {
      requestUuid: UUID,
      error: '',
      warnings: ['w'],
      certificate: 'PEM',
      issuerRef: 'r',
      storeCertificate: true,
      generateLease: false,
    });
    const bad: [string, RegExp][] = [
      ['nope', /not JSON/],
      ['[]', /not a JSON object/],
      [JSON.stringify({ request_uuid: UUID, error: 'x', extra: 1 }), /unknown keys: extra/],
      [JSON.stringify({ request_uuid: 'other', error: 'x' }), /for request "other"/],
      [JSON.stringify({ error: 'x' }), /for request ""/],
      [JSON.stringify({ request_uuid: UUID }), /neither a certificate nor an error/],
      [JSON.stringify({ request_uuid: UUID, error: 'x', warnings: 'w' }), /warnings/],
      [JSON.stringify({ request_uuid: UUID, error: 'x', store_certificate: 'yes' }), /store_certificate/],
    ];
    for (const [text, msg] of bad) {
      assert.throws(
        () => parseCiepsAnswer(text, UUID),
        (e: unknown) => e instanceof ExternalPolicyFailure && msg.test(e.message),
        text,
      );
    }
  });

  it('re-signs only what belongs to the subject; the issuer-bound extensions are dropped', () => {
    const { cert, spki } = template();
    const issuer = {
      issuerKey: { type: 'ec' as const, bits: 256 },
      issuerNotAfter: new Date('2027-01-01T00:00:00Z'),
      leafNotAfterBehavior: 'err',
    };
    const { template: t, warnings } = resignTemplate({ mode: 'sign', template: cert, requestSpki: spki, ...issuer });
    assert.deepEqual(warnings, []);
    assert.equal(t.serial, undefined, 'a fresh serial');
    assert.deepEqual(t.subject, cert.subject.der);
    const oids = t.extraExtensions!.map((e) => e.oid);
    assert.ok(oids.includes(EXT.subjectAltName) && oids.includes(EXT.keyUsage));
    assert.ok(!oids.includes(EXT.authorityKeyIdentifier) && !oids.includes(EXT.authorityInfoAccess));

    assert.throws(
      () => resignTemplate({ mode: 'sign', template: cert, requestSpki: spkiDer(ecKey().publicKey), ...issuer }),
      /different public key/,
    );
    assert.throws(() => resignTemplate({ mode: 'ica', template: cert, requestSpki: spki, ...issuer }), /must be a CA/);
    const ca = template({ ca: true });
    assert.throws(
      () => resignTemplate({ mode: 'issue', template: ca.cert, requestSpki: ca.spki, ...issuer }),
      /use sign-intermediate/,
    );

    const long = template({ notAfter: new Date('2030-01-01T00:00:00Z') });
    assert.throws(
      () => resignTemplate({ mode: 'sign', template: long.cert, requestSpki: long.spki, ...issuer }),
      /beyond the expiration/,
    );
    const truncated = resignTemplate({
      mode: 'sign',
      template: long.cert,
      requestSpki: long.spki,
      ...issuer,
      leafNotAfterBehavior: 'truncate',
    });
    assert.deepEqual(truncated.template.notAfter, issuer.issuerNotAfter);
    assert.equal(truncated.warnings.length, 1);
    const permitted = resignTemplate({
      mode: 'sign',
      template: long.cert,
      requestSpki: long.spki,
      ...issuer,
      leafNotAfterBehavior: 'permit',
    });
    assert.deepEqual(permitted.template.notAfter, long.cert.notAfter);
  });

  it('keeps an RSA signature hash only for RSA issuers', () => {
    const rsa384 = { name: 'SHA384WithRSA', kind: 'rsa' as const, hash: 'sha384' as const };
    const pss = { name: 'SHA512WithRSAPSS', kind: 'rsa-pss' as const, hash: 'sha512' as const, saltLength: 64 };
    assert.deepEqual(templateSignatureOptions(rsa384, { type: 'rsa', bits: 2048 }), {
      signatureBits: 384,
      usePss: false,
    });
    assert.deepEqual(templateSignatureOptions(pss, { type: 'rsa', bits: 2048 }), { signatureBits: 512, usePss: true });
    assert.equal(templateSignatureOptions(rsa384, { type: 'ec', bits: 256 }), undefined);
    assert.equal(
      templateSignatureOptions({ name: 'SHA1WithRSA', kind: 'rsa', hash: 'sha1' }, { type: 'rsa', bits: 2048 }),
      undefined,
    );
  });
});
