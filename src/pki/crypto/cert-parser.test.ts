import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DomainError } from '../../shared/errors.js';
import { issuerContextFromCertificate, resignCertificate } from './cert-builder.js';
import {
  isCa,
  isSelfIssued,
  isSelfSigned,
  parseCertificate,
  parseCertificateBundle,
  verifyCertificateSignature,
} from './cert-parser.js';
import { parsePrivateKey } from './keys.js';
import { commonName, nameValues } from './names.js';
import { pemDecodeOne } from './pem.js';

const dir = mkdtempSync(join(tmpdir(), 'cert-parser-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
const path = (name: string): string => join(dir, name);

function openssl(args: string[], input?: string): string {
  const r = spawnSync('openssl', args, { input, encoding: 'utf8' });
  assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
  return r.stdout;
}

// An openssl-made chain: RSA root signing with PSS, EC P-384 intermediate, Ed25519 leaf.
openssl(['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', path('root.key')]);
openssl([
  'req',
  '-x509',
  '-new',
  '-key',
  path('root.key'),
  '-subj',
  '/C=DE/O=Test Org/CN=Test Root',
  '-days',
  '3650',
  '-sha256',
  '-sigopt',
  'rsa_padding_mode:pss',
  '-sigopt',
  'rsa_pss_saltlen:digest',
  '-out',
  path('root.pem'),
  '-addext',
  'basicConstraints=critical,CA:TRUE',
  '-addext',
  'keyUsage=critical,keyCertSign,cRLSign',
]);
openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-384', '-out', path('int.key')]);
openssl(['req', '-new', '-key', path('int.key'), '-subj', '/O=Test Org/CN=Test Intermediate', '-out', path('int.csr')]);
writeFileSync(
  path('int.ext'),
  [
    'basicConstraints=critical,CA:TRUE,pathlen:0',
    'keyUsage=critical,keyCertSign,cRLSign,digitalSignature',
    'subjectKeyIdentifier=hash',
    'authorityKeyIdentifier=keyid',
    'authorityInfoAccess=OCSP;URI:http://ocsp.test/,caIssuers;URI:http://ca.test/root.der',
    'crlDistributionPoints=URI:http://ca.test/root.crl',
  ].join('\n'),
);
openssl([
  'x509',
  '-req',
  '-in',
  path('int.csr'),
  '-CA',
  path('root.pem'),
  '-CAkey',
  path('root.key'),
  '-set_serial',
  '0x00ff01',
  '-days',
  '365',
  '-sha384',
  '-extfile',
  path('int.ext'),
  '-out',
  path('int.pem'),
]);
openssl(['genpkey', '-algorithm', 'ED25519', '-out', path('leaf.key')]);
openssl(['req', '-new', '-key', path('leaf.key'), '-subj', '/CN=leaf.test', '-out', path('leaf.csr')]);
writeFileSync(
  path('leaf.ext'),
  'subjectAltName=DNS:leaf.test,IP:127.0.0.1\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature',
);
openssl([
  'x509',
  '-req',
  '-in',
  path('leaf.csr'),
  '-CA',
  path('int.pem'),
  '-CAkey',
  path('int.key'),
  '-days',
  '30',
  '-sha384',
  '-extfile',
  path('leaf.ext'),
  '-out',
  path('leaf.pem'),
]);

const rootPem = readFileSync(path('root.pem'), 'utf8');
const intPem = readFileSync(path('int.pem'), 'utf8');
const leafPem = readFileSync(path('leaf.pem'), 'utf8');

test('parses openssl certificates: serial, names, validity, key, extensions', () => {
  const int = parseCertificate(intPem);
  assert.equal(int.version, 3);
  assert.equal(int.serialHex, 'ff01');
  assert.equal(commonName(int.subject), 'Test Intermediate');
  assert.deepEqual(nameValues(int.issuer, 'C'), ['DE']);
  assert.deepEqual(int.key, { type: 'ec', bits: 384, curve: 'secp384r1' });
  assert.deepEqual(int.extensions.basicConstraints, { ca: true, pathLen: 0 });
  assert.deepEqual(int.extensions.keyUsage, ['DigitalSignature', 'CertSign', 'CRLSign']);
  assert.deepEqual(int.extensions.ocspServers, ['http://ocsp.test/']);
  assert.deepEqual(int.extensions.issuingCertificates, ['http://ca.test/root.der']);
  assert.deepEqual(int.extensions.crlDistributionPoints, ['http://ca.test/root.crl']);
  assert.equal(int.signatureAlgorithm.name, 'SHA384WithRSA');
  const dates = openssl(['x509', '-noout', '-dates'], intPem);
  assert.match(dates, new RegExp(`notAfter=${int.notAfter.toUTCString().slice(8, 11)}`));
  assert.ok(isCa(int) && !isSelfIssued(int));
  const x = openssl(['x509', '-noout', '-ext', 'subjectKeyIdentifier'], intPem);
  assert.match(
    x,
    new RegExp(
      int.extensions
        .subjectKeyId!.toString('hex')
        .toUpperCase()
        .replace(/(..)(?!$)/g, '$1:'),
    ),
  );

  const leaf = parseCertificate(leafPem);
  assert.deepEqual(leaf.key, { type: 'ed25519', bits: 0 });
  assert.equal(leaf.signatureAlgorithm.name, 'ECDSAWithSHA384');
  assert.deepEqual(leaf.extensions.subjectAltNames, [
    { type: 'dns', value: 'leaf.test' },
    { type: 'ip', value: '127.0.0.1' },
  ]);
  assert.deepEqual(leaf.extensions.extKeyUsage, ['1.3.6.1.5.5.7.3.1']);
  assert.deepEqual(leaf.issuer.der, int.subject.der);
  assert.equal(isCa(leaf), false);
});

test('verifies RSA-PSS, RSA and ECDSA signatures of the openssl chain, and rejects wrong issuers', () => {
  const root = parseCertificate(rootPem);
  const int = parseCertificate(intPem);
  const leaf = parseCertificate(leafPem);
  assert.ok(isSelfSigned(root));
  assert.equal(root.signatureAlgorithm.name, 'SHA256WithRSAPSS');
  assert.equal(verifyCertificateSignature(int, root.publicKey), true);
  assert.equal(verifyCertificateSignature(leaf, int.publicKey), true);
  assert.equal(verifyCertificateSignature(leaf, root.publicKey), false);
  assert.equal(verifyCertificateSignature(int, int.publicKey), false);
  const tampered = Buffer.from(leaf.der);
  const at = tampered.indexOf(Buffer.from('leaf.test'));
  tampered[at] = tampered[at]! ^ 1;
  assert.equal(verifyCertificateSignature(parseCertificate(tampered), int.publicKey), false);
});

test('bundles, base64 DER and malformed input', () => {
  const all = parseCertificateBundle(
    `${leafPem}\n${intPem}-----BEGIN X509 CRL-----\nAAAA\n-----END X509 CRL-----\n${rootPem}`,
  );
  assert.deepEqual(
    all.map((c) => commonName(c.subject)),
    ['leaf.test', 'Test Intermediate', 'Test Root'],
  );
  const der = pemDecodeOne(intPem, ['CERTIFICATE']).der;
  assert.equal(parseCertificate(der.toString('base64')).serialHex, 'ff01');
  const bad = (e: unknown) => e instanceof DomainError && e.kind === 'invalid';
  assert.throws(() => parseCertificate(der.subarray(0, 100)), bad);
  assert.throws(
    () => parseCertificate('-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----'),
    bad,
  );
  assert.throws(() => parseCertificate('@@@'), bad);
});

test('resignCertificate re-issues a self-issued CA under another issuer, keeping its extensions', () => {
  const root = parseCertificate(rootPem);
  const int = parseCertificate(intPem);
  const intKey = parsePrivateKey(readFileSync(path('int.key'), 'utf8')).key;
  // Re-sign the root under the intermediate (as a cross-sign would).
  const ctx = issuerContextFromCertificate(int, intKey, { issuingCertificates: ['http://new.test/ca'] });
  const re = parseCertificate(resignCertificate(ctx, root).der);
  assert.deepEqual(re.serial, root.serial);
  assert.deepEqual(re.subject.der, root.subject.der);
  assert.deepEqual(re.spkiDer, root.spkiDer);
  assert.deepEqual(re.issuer.der, int.subject.der);
  assert.deepEqual(re.extensions.authorityKeyId, int.extensions.subjectKeyId);
  assert.deepEqual(re.extensions.subjectKeyId, root.extensions.subjectKeyId);
  assert.deepEqual(re.extensions.basicConstraints, { ca: true, pathLen: undefined });
  assert.deepEqual(re.extensions.issuingCertificates, ['http://new.test/ca']);
  assert.equal(re.extensions.all.filter((e) => e.oid === '2.5.29.14').length, 1);
  assert.equal(verifyCertificateSignature(re, int.publicKey), true);
  writeFileSync(path('re.pem'), resignCertificate(ctx, root).pem);
  const out = openssl(['verify', '-partial_chain', '-CAfile', path('int.pem'), path('re.pem')]);
  assert.match(out, /OK/);
});
