import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { DomainError } from '../../shared/errors.js';
import {
  DerReader,
  TAG,
  bitString,
  boolean,
  decodeBigInt,
  decodeBitString,
  decodeBoolean,
  decodeNamedBits,
  decodeOid,
  decodeSmallInt,
  decodeString,
  decodeTime,
  decodeUnsignedBytes,
  enumerated,
  explicit,
  generalizedTime,
  ia5String,
  implicitPrimitive,
  integer,
  namedBits,
  nullValue,
  octetString,
  oid,
  parseDer,
  printableString,
  retagImplicit,
  sequence,
  set,
  setOf,
  tlv,
  utcTime,
  utf8String,
  x509Time,
} from './der.js';
import { bytesToIp, decodeGeneralNames, encodeGeneralNames, ipToBytes } from './general-names.js';
import { decodeName, encodeName, encodeSubject, nameToString } from './names.js';
import { decodeBase64Strict, pemDecodeAll, pemDecodeOne, pemEncode, splitPemBundle } from './pem.js';
import { formatSerial, normalizeSerial, randomSerial, serialToHex } from './serial.js';

const hex = (b: Buffer): string => b.toString('hex');

function asn1parse(der: Buffer): string {
  const r = spawnSync('openssl', ['asn1parse', '-inform', 'DER', '-i'], { input: der, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout;
}

test('INTEGER encodes numbers, bigints and unsigned buffers minimally', () => {
  const cases: [number | bigint | Buffer, string][] = [
    [0, '020100'],
    [1, '020101'],
    [127, '02017f'],
    [128, '02020080'],
    [256, '02020100'],
    [-1, '0201ff'],
    [-128, '020180'],
    [-129, '0202ff7f'],
    [65537, '0203010001'],
    [2n ** 64n, '0209010000000000000000'],
    [-(2n ** 63n), '02088000000000000000'],
    [Buffer.from('00000080', 'hex'), '02020080'],
    [Buffer.from('7f', 'hex'), '02017f'],
    [Buffer.from('0000', 'hex'), '020100'],
  ];
  for (const [v, want] of cases) {
    const enc = integer(v);
    assert.equal(hex(enc), want, String(v));
    const back = decodeBigInt(parseDer(enc));
    const expect = Buffer.isBuffer(v) ? BigInt('0x' + (hex(v) || '0')) : BigInt(v);
    assert.equal(back, expect);
  }
  assert.equal(hex(decodeUnsignedBytes(parseDer(integer(Buffer.from('ff01', 'hex'))))), 'ff01');
  assert.throws(() => decodeUnsignedBytes(parseDer(integer(-5))), DomainError);
  assert.equal(hex(enumerated(1)), '0a0101');
});

test('lengths use the long form past 127 bytes', () => {
  for (const len of [0, 127, 128, 255, 256, 65535, 65536]) {
    const enc = octetString(Buffer.alloc(len, 7));
    const el = parseDer(enc);
    assert.equal(el.length, len);
    assert.equal(el.content().length, len);
  }
  assert.equal(hex(octetString(Buffer.alloc(200)).subarray(0, 3)), '0481c8');
  assert.equal(hex(octetString(Buffer.alloc(300)).subarray(0, 4)), '0482012c');
});

test('OIDs encode from dotted text (cached) and decode back', () => {
  for (const o of [
    '1.2.840.113549.1.1.11',
    '2.5.29.17',
    '0.9.2342.19200300.100.1.1',
    '2.999.3',
    '1.3.6.1.4.1.311.20.2.3',
    '2.25.329800735698586629295641978511506172918',
  ]) {
    const enc = oid(o);
    assert.equal(oid(o), enc, 'cached instance');
    assert.equal(decodeOid(parseDer(enc)), o);
  }
  assert.equal(hex(oid('1.2.840.113549')), '06062a864886f70d');
  assert.match(asn1parse(oid('1.2.840.10045.4.3.2')), /ecdsa-with-SHA256/);
  for (const bad of ['1', '3.1', '1.40', '1.2.', 'a.b', '1.02']) assert.throws(() => oid(bad), DomainError, bad);
});

test('strings, booleans, null, bit strings and named bits', () => {
  assert.equal(hex(boolean(true)), '0101ff');
  assert.equal(decodeBoolean(parseDer(boolean(false))), false);
  assert.equal(hex(nullValue()), '0500');
  assert.equal(decodeString(parseDer(utf8String('héllo ✓'))), 'héllo ✓');
  assert.equal(decodeString(parseDer(printableString("Ab 1'()+,-./:=?"))), "Ab 1'()+,-./:=?");
  assert.throws(() => printableString('a*b'), DomainError);
  assert.throws(() => ia5String('é'), DomainError);
  assert.equal(decodeString(parseDer(tlv(TAG.BMP_STRING, Buffer.from([0, 0x41, 0x26, 0x13])))), 'A☓');
  assert.equal(hex(bitString(Buffer.from([0xa0]), 5)), '030205a0');
  assert.deepEqual(decodeBitString(parseDer(bitString(Buffer.from([1, 2])))).bytes, Buffer.from([1, 2]));
  // KeyUsage digitalSignature+keyEncipherment+keyAgreement = bits 0,2,4 -> a8 with 3 unused bits.
  assert.equal(hex(namedBits([0, 2, 4])), '030203a8');
  assert.equal(hex(namedBits([5, 6])), '03020106');
  assert.equal(hex(namedBits([8])), '0303070080');
  assert.deepEqual(decodeNamedBits(parseDer(namedBits([0, 8, 4]))), [0, 4, 8]);
});

test('times follow RFC 5280: UTCTime 1950..2049, GeneralizedTime otherwise, whole seconds', () => {
  const d = new Date('2049-12-31T23:59:59.999Z');
  assert.equal(parseDer(utcTime(d)).content().toString(), '491231235959Z');
  assert.equal(x509Time(d)[0], TAG.UTC_TIME);
  assert.equal(x509Time(new Date('2050-01-01T00:00:00Z'))[0], TAG.GENERALIZED_TIME);
  assert.equal(x509Time(new Date('1949-12-31T23:59:59Z'))[0], TAG.GENERALIZED_TIME);
  assert.equal(
    parseDer(generalizedTime(new Date('9999-12-31T23:59:59Z')))
      .content()
      .toString(),
    '99991231235959Z',
  );
  assert.throws(() => utcTime(new Date('2050-01-01T00:00:00Z')), RangeError);
  for (const iso of [
    '1950-01-01T00:00:00.000Z',
    '2026-06-15T08:09:10.000Z',
    '2049-12-31T23:59:59.000Z',
    '2050-01-01T00:00:00.000Z',
    '9999-12-31T23:59:59.000Z',
  ]) {
    assert.equal(decodeTime(parseDer(x509Time(new Date(iso)))).toISOString(), iso);
  }
  assert.match(
    asn1parse(sequence(x509Time(new Date('2030-01-02T03:04:05Z')), x509Time(new Date('2051-01-02T03:04:05Z')))),
    /UTCTIME\s+:300102030405Z[\s\S]*GENERALIZEDTIME\s+:20510102030405Z/,
  );
});

test('constructed types, tags and the zero-copy reader', () => {
  const inner = sequence(integer(5), utf8String('x'));
  const doc = sequence(
    inner,
    explicit(0, integer(2)),
    implicitPrimitive(2, Buffer.from('a.example')),
    retagImplicit(1, utf8String('y')),
    set(nullValue()),
  );
  assert.match(asn1parse(doc), /cont \[ 0 \][\s\S]*cont \[ 2 \]/);
  const r = parseDer(doc).children();
  const s = r.expect(TAG.SEQUENCE);
  assert.equal(s.raw().buffer, doc.buffer, 'subarray of the input');
  assert.deepEqual(s.raw(), inner);
  const sr = s.children();
  assert.equal(decodeBigInt(sr.next()), 5n);
  assert.equal(decodeString(sr.next()), 'x');
  sr.done();
  const e = r.expect(0xa0);
  assert.ok(e.isContext(0) && e.constructed);
  assert.equal(decodeBigInt(e.children().next()), 2n);
  assert.equal(r.optional(0x30), undefined);
  assert.equal(r.expect(0x82).content().toString(), 'a.example');
  assert.equal(r.next().tag, 0x81);
  assert.equal(r.peekTag(), TAG.SET);
  r.next();
  assert.equal(r.hasMore(), false);
  assert.throws(() => r.expect(TAG.SET), /end of data/);
  // SET OF is sorted, SET keeps order.
  assert.deepEqual(setOf(integer(2), integer(1)), set(integer(1), integer(2)));
  assert.equal(new DerReader(Buffer.alloc(0)).hasMore(), false);
});

test('the decoder rejects malformed DER with invalid errors', () => {
  const bad = ['30', '3005020101', '3080020101 0000', '30 85 0100000000', '1f2100', '3003020101ff'].map((h) =>
    Buffer.from(h.replace(/ /g, ''), 'hex'),
  );
  for (const b of bad)
    assert.throws(
      () => parseDer(b),
      (e: unknown) => e instanceof DomainError && e.kind === 'invalid' && /malformed DER/.test(e.message),
      hex(b),
    );
  assert.throws(() => parseDer(integer(1)).children(), /not constructed/);
});

test('names: Go-style subject order, string types, raw round trip, openssl agrees', () => {
  const der = encodeSubject({
    commonName: '*.example.com',
    country: ['US'],
    province: ['CA'],
    locality: ['SF'],
    streetAddress: ['1 Main St'],
    postalCode: ['94000'],
    organization: ['Example, Inc.'],
    ou: ['Web', 'Ops'],
    serialNumber: 'SN-1',
    userIds: ['alice'],
  });
  const r = spawnSync('openssl', ['asn1parse', '-inform', 'DER'], { input: der, encoding: 'utf8' });
  assert.match(r.stdout, /:countryName[\s\S]*PRINTABLESTRING\s+:US/);
  assert.match(r.stdout, /:commonName\s*\n.*UTF8STRING\s+:\*\.example\.com/, 'wildcards are not PrintableString');
  const n = decodeName(der);
  assert.deepEqual(n.der, der);
  assert.equal(
    nameToString(n),
    'C=US,ST=CA,L=SF,street=1 Main St,postalCode=94000,O=Example\\, ' +
      'Inc.,OU=Ops+OU=Web,CN=*.example.com,serialNumber=SN-1,UID=alice',
  );
  const email = decodeName(
    encodeName([
      { type: 'emailAddress', value: 'a@b.example' },
      { type: '2.5.4.97', value: 'VAT-1' },
    ]),
  );
  assert.equal(email.rdns[0]![0]!.tag, TAG.IA5_STRING);
  assert.equal(email.rdns[1]![0]!.oid, '2.5.4.97');
  assert.throws(() => encodeName([{ type: 'Nope', value: 'x' }]), RangeError);
});

test('general names and IP text forms', () => {
  assert.equal(hex(ipToBytes('192.0.2.1')), 'c0000201');
  assert.equal(hex(ipToBytes('::1')), '00000000000000000000000000000001');
  assert.equal(hex(ipToBytes('2001:db8::8:800:200c:417a')), '20010db8000000000008080020 0c417a'.replace(' ', ''));
  assert.equal(hex(ipToBytes('::ffff:192.0.2.1')), '00000000000000000000ffffc0000201');
  assert.equal(bytesToIp(ipToBytes('2001:0db8:0000:0000:0001:0000:0000:0001')), '2001:db8::1:0:0:1');
  assert.equal(bytesToIp(ipToBytes('fe80::')), 'fe80::');
  assert.equal(bytesToIp(ipToBytes('1:2:3:4:5:6:7:8')), '1:2:3:4:5:6:7:8');
  assert.throws(() => ipToBytes('300.1.1.1'), DomainError);
  const names = [
    { type: 'dns', value: 'a.example' },
    { type: 'email', value: 'x@a.example' },
    { type: 'uri', value: 'urn:x' },
    { type: 'ip', value: '10.0.0.1' },
    { type: 'registeredId', value: '1.2.3' },
  ] as const;
  assert.deepEqual(decodeGeneralNames(parseDer(encodeGeneralNames(names))), names);
  assert.throws(() => encodeGeneralNames([{ type: 'dns', value: 'bücher.example' }]), DomainError);
});

test('PEM: encode with 64-column lines, decode bundles, strict base64', () => {
  const der = Buffer.alloc(100, 1);
  const pem = pemEncode('CERTIFICATE', der);
  assert.equal(pem.split('\n')[1]!.length, 64);
  const key = pemEncode('EC PRIVATE KEY', Buffer.from([1, 2, 3]));
  const bundle = `junk\n${pem}${key}\r\n${pemEncode('X509 CRL', Buffer.from([9]))}`;
  const blocks = pemDecodeAll(bundle.replace(/\n/g, '\r\n'));
  assert.deepEqual(
    blocks.map((b) => b.label),
    ['CERTIFICATE', 'EC PRIVATE KEY', 'X509 CRL'],
  );
  assert.deepEqual(blocks[0]!.der, der);
  assert.equal(splitPemBundle(bundle).length, 3);
  assert.deepEqual(pemDecodeOne(bundle, ['EC PRIVATE KEY']).der, Buffer.from([1, 2, 3]));
  assert.throws(() => pemDecodeOne(bundle, ['PUBLIC KEY']), DomainError);
  assert.throws(() => pemDecodeAll('-----BEGIN A-----\nAAAA\n-----END B-----'), DomainError);
  assert.throws(() => decodeBase64Strict('AA=A'), DomainError);
  assert.throws(() => decodeBase64Strict('A'), DomainError);
  assert.deepEqual(decodeBase64Strict(' AQID\n'), Buffer.from([1, 2, 3]));
});

test('serials: the time, then 112 random bits; 20 positive bytes; colon and hyphen forms', () => {
  const seen = new Set<string>();
  const at = Date.UTC(2026, 11, 2, 12, 0, 0, 123);
  for (const now of [at, 2 ** 40, 2 ** 47 - 1, 0, 2 ** 48, Number.NaN]) {
    for (let i = 0; i < 200; i++) {
      const s = randomSerial(now);
      assert.equal(s.length, 20);
      assert.ok((s[0]! & 0x80) === 0 && s[0]! !== 0, 'in [2^152, 2^159): positive, never shorter than 20 bytes');
      assert.equal(integer(s).length, 22, 'exactly 20 content octets');
      assert.equal(formatSerial(s).length, 59);
      seen.add(s.toString('hex'));
    }
  }
  assert.equal(seen.size, 1200, 'no two alike, even within one millisecond');
  const s = randomSerial(at);
  assert.equal(s.readUIntBE(0, 6), at, 'the issue time leads');
  const rest = new Set(Array.from({ length: 64 }, () => randomSerial(at).subarray(6).toString('hex')));
  assert.equal(rest.size, 64, 'the last 14 bytes are random');
  const later = randomSerial(at + 1);
  assert.ok(Buffer.compare(s, later) < 0, 'a later serial sorts after');
  assert.ok(serialToHex(s) < serialToHex(later), 'so does its stored form');
  assert.ok(Math.abs(randomSerial().readUIntBE(0, 6) - Date.now()) < 60_000, 'the default is the clock');
  assert.equal(formatSerial(Buffer.from('0039dd2e', 'hex')), '39:dd:2e');
  assert.equal(serialToHex(Buffer.from('000102', 'hex')), '0102');
  assert.equal(normalizeSerial('39:DD:2E:90'), '39dd2e90');
  assert.equal(normalizeSerial('39-dd-2e-90'), '39dd2e90');
  assert.equal(normalizeSerial('0:1:a'), '010a');
  assert.equal(normalizeSerial('39dd2e9'), '039dd2e9');
  assert.equal(formatSerial('39-dd-2e-90'), '39:dd:2e:90');
  for (const bad of ['', 'xyz', '39::dd', '123:4567']) assert.throws(() => normalizeSerial(bad), DomainError, bad);
});

test('decodeOid answers the same text when it decodes an OID again, and each OID its own', () => {
  const oids = [
    '1.2.840.10045.2.1',
    '1.2.840.10045.3.1.7',
    '1.2.840.10045.3.1.6',
    '2.5.4.3',
    '2.5.4.5',
    '2.25.329800735698586629295641978511506172918',
  ];
  for (let round = 0; round < 3; round++) {
    for (const o of oids) assert.equal(decodeOid(parseDer(Buffer.from(oid(o)))), o);
  }
  // A truncated arc is refused every time, not remembered.
  for (let round = 0; round < 2; round++)
    assert.throws(() => decodeOid(parseDer(Buffer.from('06022a86', 'hex'))), DomainError);
});

test('decodeSmallInt reads small and large INTEGERs, negative ones too', () => {
  const values = [
    0,
    1,
    127,
    128,
    255,
    256,
    -1,
    -128,
    -129,
    -256,
    65535,
    -65536,
    2 ** 40 + 3,
    -(2 ** 40) - 7,
    Number.MAX_SAFE_INTEGER,
    Number.MIN_SAFE_INTEGER,
  ];
  for (const v of values) assert.equal(decodeSmallInt(parseDer(integer(v))), v, String(v));
  assert.throws(() => decodeSmallInt(parseDer(integer(2n ** 64n))), DomainError);
});
