import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DomainError } from '../../shared/errors.js';
import { buildCsr, parseCsr as parseWith, parseCsrAsync as parseAsyncWith } from './csr.js';
import { basicConstraintsExt, keyUsageExt, subjectAltNameExt } from './extensions.js';
import { generateKeySync } from './key-generation.js';
import { ecPublicPoint } from './keys.js';
import { commonName, encodeSubject, nameValues } from './names.js';
import { pemDecodeOne, pemEncode } from './pem.js';
import { nativeEcdsaIf } from './native-ecdsa.js';

// With the addon when it is built, unless this is the run without it (below).
const native = nativeEcdsaIf(process.env['STRONGROOM_NATIVE_CRYPTO'] !== 'false');
const parseCsr = (input: string | Buffer, opts: { requireValidSignature?: boolean } = {}) =>
  parseWith(input, { native, ...opts });
const parseCsrAsync = (input: string | Buffer, opts: { requireValidSignature?: boolean } = {}) =>
  parseAsyncWith(input, { native, ...opts });

const dir = mkdtempSync(join(tmpdir(), 'csr-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
let n = 0;

function openssl(args: string[], input?: string): { status: number | null; out: string } {
  const r = spawnSync('openssl', args, { input, encoding: 'utf8' });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

/** A CSR made by `openssl req` with a fresh key of the given algorithm. */
function opensslCsr(keyArgs: string[], reqArgs: string[]): string {
  const key = join(dir, `k${n}.pem`);
  const csr = join(dir, `c${n++}.pem`);
  const g = openssl(['genpkey', ...keyArgs, '-out', key]);
  assert.equal(g.status, 0, g.out);
  const r = openssl(['req', '-new', '-key', key, '-out', csr, ...reqArgs]);
  assert.equal(r.status, 0, r.out);
  return readFileSync(csr, 'utf8');
}

const EC256 = ['-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256'];

test('openssl req CSR with SANs and extensions is parsed completely', () => {
  const pem = opensslCsr(EC256, [
    '-subj',
    '/C=US/ST=CA/L=San Francisco/O=Example Inc/OU=Ops/CN=app.example.com/emailAddress=admin@example.com',
    '-addext',
    'subjectAltName=DNS:app.example.com,DNS:*.app.example.com,IP:10.1.2.3,IP:2001:db8::42,' +
      'URI:spiffe://example.com/app,email:app@example.com,otherName:1.3.6.1.4.1.311.20.2.3;UTF8:upn@example.com',
    '-addext',
    'basicConstraints=critical,CA:TRUE,pathlen:2',
    '-addext',
    'keyUsage=critical,digitalSignature,keyEncipherment',
    '-addext',
    'extendedKeyUsage=serverAuth,clientAuth,1.3.6.1.4.1.99999.7',
    '-addext',
    '1.2.3.4.5=ASN1:UTF8String:custom',
  ]);
  const csr = parseCsr(pem);
  assert.equal(csr.signatureValid, true);
  assert.equal(csr.signatureAlgorithm, 'ECDSAWithSHA256');
  assert.deepEqual(csr.key, { type: 'ec', bits: 256, curve: 'prime256v1' });
  assert.equal(commonName(csr.subject), 'app.example.com');
  assert.deepEqual(nameValues(csr.subject, 'C'), ['US']);
  assert.deepEqual(nameValues(csr.subject, 'L'), ['San Francisco']);
  assert.deepEqual(nameValues(csr.subject, 'emailAddress'), ['admin@example.com']);
  assert.deepEqual(csr.extensions.subjectAltNames, [
    { type: 'dns', value: 'app.example.com' },
    { type: 'dns', value: '*.app.example.com' },
    { type: 'ip', value: '10.1.2.3' },
    { type: 'ip', value: '2001:db8::42' },
    { type: 'uri', value: 'spiffe://example.com/app' },
    { type: 'email', value: 'app@example.com' },
    {
      type: 'otherName',
      oid: '1.3.6.1.4.1.311.20.2.3',
      value: 'upn@example.com',
      raw: (csr.extensions.subjectAltNames![6] as { raw: Buffer }).raw,
    },
  ]);
  assert.deepEqual(csr.extensions.basicConstraints, { ca: true, pathLen: 2 });
  assert.deepEqual(csr.extensions.keyUsage, ['DigitalSignature', 'KeyEncipherment']);
  assert.deepEqual(csr.extensions.extKeyUsage, ['1.3.6.1.5.5.7.3.1', '1.3.6.1.5.5.7.3.2', '1.3.6.1.4.1.99999.7']);
  const custom = csr.extensions.all.find((e) => e.oid === '1.2.3.4.5');
  assert.deepEqual(custom?.value, Buffer.from([0x0c, 6, ...Buffer.from('custom')]));
  // Raw subject and SPKI are the exact bytes openssl wrote.
  const spki = openssl(['req', '-in', join(dir, `c${n - 1}.pem`), '-noout', '-pubkey']).out;
  assert.deepEqual(csr.spkiDer, pemDecodeOne(spki, ['PUBLIC KEY']).der);
  assert.ok(csr.der.includes(csr.subject.der));
});

for (const [name, keyArgs, reqArgs, alg, key] of [
  [
    'RSA 2048 PKCS#1 v1.5 SHA-256',
    ['-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048'],
    ['-sha256'],
    'SHA256WithRSA',
    { type: 'rsa', bits: 2048 },
  ],
  [
    'RSA 2048 PSS SHA-384',
    ['-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048'],
    ['-sha384', '-sigopt', 'rsa_padding_mode:pss', '-sigopt', 'rsa_pss_saltlen:digest'],
    'SHA384WithRSAPSS',
    { type: 'rsa', bits: 2048 },
  ],
  [
    'RSA PSS with max salt',
    ['-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048'],
    ['-sha256', '-sigopt', 'rsa_padding_mode:pss', '-sigopt', 'rsa_pss_saltlen:max'],
    'SHA256WithRSAPSS',
    { type: 'rsa', bits: 2048 },
  ],
  [
    'EC P-384 SHA-384',
    ['-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-384'],
    ['-sha384'],
    'ECDSAWithSHA384',
    { type: 'ec', bits: 384, curve: 'secp384r1' },
  ],
  [
    'EC P-521 SHA-512',
    ['-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-521'],
    ['-sha512'],
    'ECDSAWithSHA512',
    { type: 'ec', bits: 521, curve: 'secp521r1' },
  ],
  ['Ed25519', ['-algorithm', 'ED25519'], [], 'PureEd25519', { type: 'ed25519', bits: 0 }],
] as const) {
  test(`verifies the self-signature of an openssl ${name} CSR`, () => {
    const pem = opensslCsr([...keyArgs], ['-subj', '/CN=signer.example.com', ...reqArgs]);
    const csr = parseCsr(pem);
    assert.equal(csr.signatureValid, true);
    assert.equal(csr.signatureAlgorithm, alg);
    assert.deepEqual(csr.key, key);
  });
}

test("a CSR whose signature does not match is rejected with Vault's message", () => {
  const pem = opensslCsr(EC256, ['-subj', '/CN=tamper.example.com']);
  const der = pemDecodeOne(pem, ['CERTIFICATE REQUEST']).der;
  // Change one character of the CN inside the signed part.
  const at = der.indexOf(Buffer.from('tamper'));
  const bad = Buffer.from(der);
  bad[at] = 'd'.charCodeAt(0);
  assert.throws(
    () => parseCsr(pemEncode('CERTIFICATE REQUEST', bad)),
    (e: unknown) => e instanceof DomainError && e.kind === 'invalid' && e.message === 'request signature invalid',
  );
  assert.equal(parseCsr(bad, { requireValidSignature: false }).signatureValid, false);
  // openssl 3.0 exits 0 here but reports the failure.
  assert.match(
    openssl(['req', '-verify', '-noout'], pemEncode('CERTIFICATE REQUEST', bad)).out,
    /verify failure|did not verify/,
  );
});

test('malformed input gives clear invalid errors', () => {
  const isInvalid = (re: RegExp) => (e: unknown) =>
    e instanceof DomainError && e.kind === 'invalid' && re.test(e.message);
  assert.throws(() => parseCsr(''), isInvalid(/csr contains no data/));
  assert.throws(
    () => parseCsr('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n'),
    isInvalid(/csr contains no data/),
  );
  assert.throws(
    () => parseCsr('-----BEGIN CERTIFICATE REQUEST-----\n%%%%\n-----END CERTIFICATE REQUEST-----\n'),
    isInvalid(/base64/),
  );
  assert.throws(() => parseCsr('not base64 at all!'), isInvalid(/base64/));
  assert.throws(
    () => parseCsr(Buffer.from([0x30, 0x03, 0x02, 0x01])),
    isInvalid(/^certificate request could not be parsed: /),
  );
  const good = pemDecodeOne(opensslCsr(EC256, ['-subj', '/CN=x']), ['CERTIFICATE REQUEST']).der;
  assert.throws(() => parseCsr(good.subarray(0, good.length - 5)), isInvalid(/could not be parsed/));
  assert.throws(() => parseCsr(Buffer.concat([good, Buffer.from([0])])), isInvalid(/trailing data/));
});

test('buildCsr output passes openssl req -verify and shows the requested extensions', () => {
  for (const [type, bits] of [
    ['ec', 256],
    ['rsa', 2048],
    ['ed25519', 0],
  ] as const) {
    const k = generateKeySync(type, bits);
    const subjectDer = encodeSubject({ commonName: 'Intermediate CA', organization: ['Example'] });
    const { pem } = buildCsr({
      subjectDer,
      privateKey: k.privateKey,
      signatureBits: 384,
      extensions: [
        basicConstraintsExt(true),
        keyUsageExt(['CertSign', 'CRLSign'])!,
        subjectAltNameExt([{ type: 'dns', value: 'int.example.com' }], false)!,
      ],
    });
    const r = openssl(['req', '-verify', '-noout', '-text'], pem);
    assert.equal(r.status, 0, r.out);
    assert.match(r.out, /self-signature verify OK/);
    assert.match(r.out, /CA:TRUE/);
    assert.match(r.out, /Certificate Sign, CRL Sign/);
    assert.match(r.out, /DNS:int\.example\.com/);
    assert.match(r.out, /Subject: O ?= ?Example, CN ?= ?Intermediate CA/);
    if (type === 'rsa') assert.match(r.out, /sha384WithRSAEncryption/);
    const back = parseCsr(pem);
    assert.deepEqual(back.subject.der, subjectDer);
    assert.deepEqual(back.extensions.basicConstraints, { ca: true, pathLen: undefined });
  }
});

test('a CSR with an RSA-PSS SubjectPublicKeyInfo is refused as unsupported', () => {
  const pem = opensslCsr(['-algorithm', 'RSA-PSS', '-pkeyopt', 'rsa_keygen_bits:2048'], ['-subj', '/CN=pss-key']);
  assert.throws(
    () => parseCsr(pem),
    (e: unknown) =>
      e instanceof DomainError && /could not be parsed: .*unsupported key algorithm rsa-pss/.test(e.message),
  );
});

test('a CSR whose EC point is not on the curve is a parse error, not a bad signature', async () => {
  const der = pemDecodeOne(opensslCsr(EC256, ['-subj', '/CN=off-curve.example.com']), ['CERTIFICATE REQUEST']).der;
  const point = ecPublicPoint(parseCsr(der).spkiDer)!.point;
  const bad = Buffer.from(der);
  bad[der.indexOf(point) + point.length - 1]! ^= 1;
  const offCurve = (e: unknown): boolean =>
    e instanceof DomainError &&
    e.kind === 'invalid' &&
    /^certificate request could not be parsed: error parsing public key/.test(e.message);
  assert.throws(() => parseCsr(bad), offCurve);
  await assert.rejects(parseCsrAsync(bad), offCurve);
});

test('parseCsrAsync gives the same answers as parseCsr', async () => {
  const good = opensslCsr(EC256, ['-subj', '/CN=async.example.com']);
  assert.equal((await parseCsrAsync(good)).signatureValid, true);
  const der = Buffer.from(pemDecodeOne(good, ['CERTIFICATE REQUEST']).der);
  der[der.indexOf(Buffer.from('async'))] = 'b'.charCodeAt(0);
  await assert.rejects(
    parseCsrAsync(der),
    (e: unknown) => e instanceof DomainError && e.message === 'request signature invalid',
  );
  assert.equal((await parseCsrAsync(der, { requireValidSignature: false })).signatureValid, false);
});

// The checks above ran with the native addon when it is built; run this file again without it.
test(
  'the CSR checks pass on the node:crypto path too',
  { skip: process.env['STRONGROOM_NATIVE_CRYPTO'] === 'false' && 'this is that run' },
  () => {
    const env: NodeJS.ProcessEnv = { ...process.env, STRONGROOM_NATIVE_CRYPTO: 'false' };
    delete env['NODE_TEST_CONTEXT'];
    const r = spawnSync(process.execPath, [new URL(import.meta.url).pathname], {
      env,
      encoding: 'utf8',
    });
    assert.equal(r.status, 0, `${r.stdout}${r.stderr}`.slice(-3000));
    assert.match(r.stdout, /# pass [1-9]/);
    assert.match(r.stdout, /# fail 0/);
  },
);
