import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  applyIssuerUpdate,
  buildChains,
  formatUsage,
  parseLeafNotAfterBehavior,
  parseRevocationSignatureAlgorithm,
  parseUsage,
} from './issuer.js';
import type { ChainNode, PkiIssuer } from './issuer.js';
import { EMPTY_AIA } from '../config/mount-config.js';
import {
  caKeyUsage,
  parseFormat,
  parseGenerateType,
  parseOtherSan,
  parsePrivateKeyFormat,
  rootValidity,
  subjectAltNames,
} from './ca-request.js';
import type { CaSubjectRequest } from './ca-request.js';

describe('issuer rules', () => {
  it('parses usages, implies read-only and sorts them', () => {
    assert.deepEqual(parseUsage([]), ['read-only']);
    assert.deepEqual(parseUsage(['ocsp-signing', 'Issuing-Certificates']), [
      'issuing-certificates',
      'ocsp-signing',
      'read-only',
    ]);
    assert.equal(formatUsage(parseUsage(['crl-signing'])), 'crl-signing,read-only');
    assert.throws(() => parseUsage(['signing']), /Unknown issuer usage: signing/);
  });

  it('accepts the three leaf NotAfter behaviours only', () => {
    for (const v of ['err', 'truncate', 'permit', 'PERMIT'])
      assert.equal(parseLeafNotAfterBehavior(v), v.toLowerCase());
    assert.throws(() => parseLeafNotAfterBehavior('clip'), /leaf_not_after_behavior/);
  });

  it('canonicalises revocation signature algorithms for the key type', () => {
    const table: [string, 'rsa' | 'ec' | 'ed25519', string | RegExp][] = [
      ['', 'rsa', ''],
      ['sha256withrsa', 'rsa', 'SHA256WithRSA'],
      ['SHA512WithRSAPSS', 'rsa', 'SHA512WithRSAPSS'],
      ['ecdsawithsha384', 'ec', 'ECDSAWithSHA384'],
      ['pureed25519', 'ed25519', 'PureEd25519'],
      ['SHA256WithRSA', 'ec', /Invalid signature algorithm/],
      ['MD5WithRSA', 'rsa', /Unknown signature algorithm/],
    ];
    for (const [input, type, want] of table) {
      if (typeof want === 'string') assert.equal(parseRevocationSignatureAlgorithm(input, type), want, input);
      else assert.throws(() => parseRevocationSignatureAlgorithm(input, type), want, input);
    }
  });

  it('builds chains from subject/issuer names, key identifiers and signatures', () => {
    const name = (s: string) => Buffer.from(s);
    const node = (
      id: string,
      subject: string,
      issuer: string,
      ski: string,
      aki: string,
      seq: number,
      manualChain: string[] | null = null,
    ): ChainNode => ({
      id,
      subjectDer: name(subject),
      issuerDer: name(issuer),
      subjectKeyId: ski,
      authorityKeyId: aki,
      manualChain,
      seq,
    });
    const root = node('root', 'R', 'R', 'r1', 'r1', 1);
    const inter = node('int', 'I', 'R', 'i1', 'r1', 2);
    const leafCa = node('sub', 'S', 'I', 's1', 'i1', 3);
    const impostor = node('fake', 'R', 'R', 'r2', 'r2', 4);
    const crossRoot = node('cross', 'R', 'X', 'r1', 'x1', 5);
    const verifies = (child: ChainNode, parent: ChainNode) => !(child.id === 'int' && parent.id === 'fake');
    const chains = buildChains([root, inter, leafCa, impostor, crossRoot], verifies);
    assert.deepEqual(chains.get('root'), ['root', 'cross']);
    assert.deepEqual(chains.get('int'), ['int', 'root', 'cross']);
    assert.deepEqual(chains.get('sub'), ['sub', 'int', 'root', 'cross']);
    assert.deepEqual(chains.get('fake'), ['fake']);
    const manual = buildChains([root, node('m', 'M', 'R', 'm1', 'r1', 6, ['m', 'gone', 'root'])], () => true);
    assert.deepEqual(manual.get('m'), ['m', 'root']);
  });
});

describe('issuer updates', () => {
  const issuer = (over: Partial<PkiIssuer> = {}): PkiIssuer => ({
    id: 'i1',
    mountId: 'm',
    name: 'old',
    keyId: 'k',
    certificateDer: Buffer.alloc(0),
    certificateSha256: '',
    serial: '01',
    subjectDer: Buffer.alloc(0),
    issuerDer: Buffer.alloc(0),
    publicKeySha256: '',
    keyType: 'ec',
    subjectKeyId: '',
    authorityKeyId: '',
    notBefore: new Date(0),
    notAfter: new Date(0),
    leafNotAfterBehavior: 'err',
    usage: parseUsage(['issuing-certificates', 'crl-signing']),
    manualChain: null,
    caChain: ['i1'],
    revocationSignatureAlgorithm: '',
    aia: { ...EMPTY_AIA },
    revokedAt: null,
    createdAt: new Date(0),
    seq: 1,
    ...over,
  });

  it('changes only the fields given and never the original', () => {
    const cur = issuer();
    const next = applyIssuerUpdate(
      cur,
      { leafNotAfterBehavior: 'truncate', ocspServers: ['http://ocsp.example.com'] },
      () => true,
    );
    assert.equal(next.name, 'old');
    assert.equal(next.leafNotAfterBehavior, 'truncate');
    assert.deepEqual(next.aia.ocspServers, ['http://ocsp.example.com']);
    assert.deepEqual(cur.aia.ocspServers, []);
  });

  it('refuses crl-signing without CRLSign, re-enabling issuing on revoked issuers, and bad URLs', () => {
    assert.throws(() => applyIssuerUpdate(issuer(), { usage: ['crl-signing'] }, () => false), /CRLSign/);
    const revoked = issuer({ revokedAt: new Date(0), usage: parseUsage(['crl-signing']) });
    assert.throws(() => applyIssuerUpdate(revoked, { usage: ['issuing-certificates'] }, () => true), /revoked/);
    assert.throws(() => applyIssuerUpdate(issuer(), { issuingCertificates: ['nope'] }, () => true), /invalid URL/);
    assert.doesNotThrow(() =>
      applyIssuerUpdate(
        issuer(),
        { enableAiaUrlTemplating: true, issuingCertificates: ['{{cluster_path}}/ca'] },
        () => true,
      ),
    );
  });
});

describe('CA request rules', () => {
  const base: CaSubjectRequest = {
    commonName: '',
    altNames: [],
    ipSans: [],
    uriSans: [],
    otherSans: [],
    excludeCnFromSans: false,
    ou: [],
    organization: [],
    country: [],
    locality: [],
    province: [],
    streetAddress: [],
    postalCode: [],
    serialNumber: '',
  };

  it('puts host-name and e-mail common names into the SANs unless excluded', () => {
    assert.deepEqual(
      subjectAltNames({ ...base, commonName: 'ca.example.com', altNames: ['ca.example.com', 'x@y.z'] }),
      [
        { type: 'dns', value: 'ca.example.com' },
        { type: 'email', value: 'x@y.z' },
      ],
    );
    assert.deepEqual(subjectAltNames({ ...base, commonName: 'My Root CA' }), []);
    assert.deepEqual(subjectAltNames({ ...base, commonName: 'ca.example.com', excludeCnFromSans: true }), []);
    assert.throws(() => subjectAltNames({ ...base, ipSans: ['999.1.1.1'] }), /IP address/);
  });

  it('parses other SANs in the oid;UTF8:value notation', () => {
    assert.deepEqual(parseOtherSan('1.2.3.4;UTF8:hello:world'), {
      type: 'otherName',
      oid: '1.2.3.4',
      value: 'hello:world',
      raw: Buffer.alloc(0),
    });
    for (const bad of ['1.2.3.4:x', 'abc;UTF8:x', '1.2.3;INT:5'])
      assert.throws(() => parseOtherSan(bad), /other_sans/, bad);
  });

  it('validates formats and generation types', () => {
    assert.equal(parseFormat('pem_bundle'), 'pem_bundle');
    assert.throws(() => parseFormat('p12'), /format/);
    assert.equal(parsePrivateKeyFormat(''), 'der');
    assert.throws(() => parsePrivateKeyFormat('jks'), /private_key_format/);
    assert.equal(parseGenerateType('existing'), 'existing');
    assert.throws(() => parseGenerateType('kms'), /managed keys/);
    assert.throws(() => parseGenerateType('other'), /internal/);
    assert.deepEqual(caKeyUsage([]), ['CertSign', 'CRLSign']);
    assert.deepEqual(caKeyUsage(['digitalsignature']), ['DigitalSignature', 'CertSign', 'CRLSign']);
  });

  it('computes validity from ttl, not_after and the mount limits', () => {
    const now = new Date('2026-01-01T00:00:00Z');
    const mount = { defaultTtlSeconds: 3600, maxTtlSeconds: 7200 };
    let v = rootValidity({ ttl: undefined, notAfter: '', notBeforeDuration: 30 }, now, mount);
    assert.equal(v.notBefore.toISOString(), '2025-12-31T23:59:30.000Z');
    assert.equal(v.notAfter.toISOString(), '2026-01-01T01:00:00.000Z');
    v = rootValidity({ ttl: 10_000, notAfter: '', notBeforeDuration: 0 }, now, mount);
    assert.equal(v.notAfter.toISOString(), '2026-01-01T02:00:00.000Z');
    assert.equal(v.warnings.length, 1);
    v = rootValidity({ ttl: 10_000, notAfter: '2030-05-01T00:00:00Z', notBeforeDuration: 30 }, now, mount);
    assert.equal(v.notAfter.toISOString(), '2030-05-01T00:00:00.000Z');
    assert.throws(
      () => rootValidity({ ttl: 0, notAfter: '2020-01-01T00:00:00Z', notBeforeDuration: 30 }, now, mount),
      /future/,
    );
    assert.throws(() => rootValidity({ ttl: 0, notAfter: 'soon', notBeforeDuration: 30 }, now, mount), /not_after/);
  });
});
