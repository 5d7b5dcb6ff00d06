import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeName, encodeName, nameValues } from '../crypto/names.js';
import { EXT } from '../crypto/extensions.js';
import { certificateData, pemBundle } from './issuance.js';
import {
  SIGN_INTERMEDIATE_FIELDS,
  SIGN_VERBATIM_FIELDS,
  copiedCsrExtensions,
  intermediateKeyUsage,
  intermediatePathLength,
  nameConstraintsFrom,
  notAfterBehavior,
  parseSkid,
  signatureOptionsOf,
  subjectWithUserIds,
  verbatimUsages,
} from './privileged-signing.js';

describe('intermediate path length', () => {
  const cases: [requested: number, signer: number | undefined, expected: number | undefined, warns: boolean][] = [
    [-1, undefined, undefined, false],
    [0, undefined, 0, false],
    [4, undefined, 4, false],
    [-1, 3, 2, false],
    [1, 3, 1, false],
    [0, 3, 0, false],
    [3, 3, 2, true],
    [9, 1, 0, true],
    [-1, 1, 0, false],
  ];
  for (const [requested, signer, expected, warns] of cases) {
    it(`max_path_length ${requested} under signer pathlen ${signer ?? 'none'} gives ${expected ?? 'none'}`, () => {
      const r = intermediatePathLength(requested, signer);
      assert.equal(r.pathLen, expected);
      assert.equal(r.warnings.length > 0, warns);
    });
  }
  it('refuses to sign under a signer with pathlen 0, and values below -1', () => {
    assert.throws(() => intermediatePathLength(-1, 0), /max path length of zero/);
    assert.throws(() => intermediatePathLength(-2, undefined), /max_path_length/);
  });
});

describe('intermediate key usage', () => {
  it('always has CertSign and CRLSign and adds known names once, case-insensitively', () => {
    assert.deepEqual(intermediateKeyUsage([]), ['CertSign', 'CRLSign']);
    assert.deepEqual(intermediateKeyUsage(['digitalsignature', 'KeyUsageCertSign', 'crlsign', 'Bogus']), [
      'CertSign',
      'CRLSign',
      'digitalsignature',
    ]);
    assert.deepEqual(intermediateKeyUsage(['NonRepudiation', 'ContentCommitment']), [
      'CertSign',
      'CRLSign',
      'NonRepudiation',
    ]);
  });
});

describe('skid', () => {
  it('accepts hex with :, - or spaces and refuses anything else', () => {
    assert.equal(parseSkid(''), undefined);
    assert.equal(parseSkid('0a:0B-0c 0d')!.toString('hex'), '0a0b0c0d');
    assert.throws(() => parseSkid('abc'), /skid/);
    assert.throws(() => parseSkid('zz'), /skid/);
  });
});

describe('name constraints', () => {
  const parse = (body: Record<string, unknown>) => SIGN_INTERMEDIATE_FIELDS.parse({ csr: 'x', ...body }).values;
  it('is undefined when no list is given, and carries every list otherwise', () => {
    assert.equal(nameConstraintsFrom(parse({})), undefined);
    const c = nameConstraintsFrom(
      parse({
        permitted_dns_domains: '.a.com,b.com',
        excluded_ip_ranges: ['10.0.0.0/8'],
        permitted_uri_domains: 'x.org',
      }),
    )!;
    assert.deepEqual(c.permittedDnsDomains, ['.a.com', 'b.com']);
    assert.deepEqual(c.excludedIpRanges, ['10.0.0.0/8']);
    assert.deepEqual(c.permittedUriDomains, ['x.org']);
  });
  it('wants IP ranges in CIDR form', () => {
    assert.throws(() => nameConstraintsFrom(parse({ permitted_ip_ranges: '10.0.0.1' })), /CIDR/);
  });
});

describe('copied CSR extensions', () => {
  it('drops Basic Constraints and what the signer writes itself, keeps the rest in order', () => {
    const ext = (oid: string) => ({ oid, critical: false, value: Buffer.from([5, 0]) });
    const all = [
      EXT.basicConstraints,
      EXT.keyUsage,
      EXT.subjectKeyIdentifier,
      EXT.subjectAltName,
      EXT.authorityInfoAccess,
      '1.2.3.4',
      EXT.crlDistributionPoints,
    ].map(ext);
    assert.deepEqual(
      copiedCsrExtensions(all).map((e) => e.oid),
      [EXT.keyUsage, EXT.subjectAltName, '1.2.3.4'],
    );
  });
});

describe('not-after behaviour', () => {
  it('truncates unless told to follow the issuer', () => {
    assert.equal(notAfterBehavior(false, 'err'), 'truncate');
    assert.equal(notAfterBehavior(false, 'permit'), 'truncate');
    assert.equal(notAfterBehavior(true, 'permit'), 'permit');
    assert.equal(notAfterBehavior(true, 'err'), 'err');
  });
});

describe('sign-verbatim usages', () => {
  const defaults = SIGN_VERBATIM_FIELDS.parse({ csr: 'x' }).values;
  it('uses the request values only for what the CSR lacks', () => {
    assert.deepEqual(verbatimUsages({ keyUsage: undefined, extKeyUsage: undefined }, defaults), {
      keyUsage: ['DigitalSignature', 'KeyAgreement', 'KeyEncipherment'],
      extKeyUsage: [],
    });
    assert.deepEqual(verbatimUsages({ keyUsage: ['CertSign'], extKeyUsage: ['1.3.6.1.5.5.7.3.1'] }, defaults), {
      keyUsage: undefined,
      extKeyUsage: undefined,
    });
  });
  it('orders EKU names the Vault way, case-insensitively, then custom OIDs', () => {
    const v = {
      key_usage: [''],
      ext_key_usage: ['timestamping', 'SERVERAUTH', 'ExtKeyUsageClientAuth'],
      ext_key_usage_oids: ['1.2.3.4'],
    };
    assert.deepEqual(verbatimUsages({ keyUsage: undefined, extKeyUsage: undefined }, v), {
      keyUsage: [],
      extKeyUsage: ['ServerAuth', 'ClientAuth', 'TimeStamping', '1.2.3.4'],
    });
  });
  it('refuses malformed OIDs', () => {
    assert.throws(
      () =>
        verbatimUsages({ keyUsage: undefined, extKeyUsage: undefined }, { ...defaults, ext_key_usage_oids: ['1.2.x'] }),
      /not a valid OID/,
    );
  });
});

describe('subject with user ids', () => {
  it('appends UID attributes not already present, keeping the original bytes otherwise', () => {
    const subject = decodeName(
      encodeName([
        { type: 'CN', value: 'a' },
        { type: 'UID', value: 'u1' },
      ]),
    );
    assert.equal(subjectWithUserIds(subject, []), subject.der);
    assert.equal(subjectWithUserIds(subject, ['u1']), subject.der);
    const out = decodeName(subjectWithUserIds(subject, ['u2', 'u1', 'u2']));
    assert.deepEqual(nameValues(out, 'UID'), ['u1', 'u2']);
    assert.deepEqual(nameValues(out, 'CN'), ['a']);
  });
});

describe('pem bundle and signature options', () => {
  it('appends the issuing CA unless it is a self-signed root', () => {
    assert.equal(pemBundle('C', 'I', true), 'C');
    assert.equal(pemBundle('C', 'I', false), 'C\nI');
  });
  it('certificateData: pem_bundle holds native key and certificate on issue, pemBundle on the signing paths', () => {
    const r = { certificatePem: 'C', issuingCaPem: 'I', chainPems: ['I', 'R'], serialNumber: '01', expiration: 1 };
    const key = { pem: 'P8', base64: 'b', type: 'rsa', bundlePem: 'K' };
    assert.equal(certificateData({ ...r, privateKey: key }, 'pem_bundle').certificate, 'K\nC');
    assert.equal(certificateData({ ...r, issuerIsSelfSigned: () => false }, 'pem_bundle').certificate, 'C\nI');
    assert.equal(certificateData({ ...r, issuerIsSelfSigned: () => true }, 'pem_bundle').certificate, 'C');
    let asked = false;
    certificateData({ ...r, issuerIsSelfSigned: () => (asked = true) }, 'pem');
    assert.equal(asked, false, 'no self-signed check outside pem_bundle');
  });
  it('keeps the hash of the submitted certificate and PSS, never SHA-1', () => {
    assert.deepEqual(signatureOptionsOf({ kind: 'rsa', hash: 'sha384' }), { signatureBits: 384, usePss: false });
    assert.deepEqual(signatureOptionsOf({ kind: 'rsa-pss', hash: 'sha512' }), { signatureBits: 512, usePss: true });
    assert.deepEqual(signatureOptionsOf({ kind: 'rsa', hash: 'sha1' }), { signatureBits: 0, usePss: false });
    assert.deepEqual(signatureOptionsOf({ kind: 'ed25519', hash: null }), { signatureBits: 0, usePss: false });
  });
});
