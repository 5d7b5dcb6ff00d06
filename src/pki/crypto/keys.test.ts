import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createPrivateKey, createPublicKey, sign, verify } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DomainError } from '../../shared/errors.js';
import {
  KeyObjectCache,
  checkKeyAgainstRole,
  describeKey,
  exportPrivateKey,
  parsePrivateKey,
  parsePublicKey,
  publicKeyFromSpki,
  resolveKeyParams,
  samePublicKey,
  spkiDer,
  subjectKeyIdFromSpki,
} from './keys.js';
import { generateKey, generateKeySync } from './key-generation.js';
import type { GeneratedKey, KeyType } from './key-generation.js';
import { KeyPool } from './key-pool.js';
import { nativeEcdsa } from './native-ecdsa.js';

function openssl(args: string[], input?: string | Buffer): { status: number | null; out: string } {
  const r = spawnSync('openssl', args, { input, encoding: 'utf8' });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

const invalid = (re: RegExp) => (e: unknown) => e instanceof DomainError && e.kind === 'invalid' && re.test(e.message);

test('resolveKeyParams applies Vault defaults and limits', () => {
  assert.deepEqual(resolveKeyParams('rsa', 0), { type: 'rsa', bits: 2048 });
  assert.deepEqual(resolveKeyParams('rsa', 8192), { type: 'rsa', bits: 8192 });
  assert.deepEqual(resolveKeyParams('ec', 0), { type: 'ec', bits: 256 });
  assert.deepEqual(resolveKeyParams('ec', 521), { type: 'ec', bits: 521 });
  assert.deepEqual(resolveKeyParams('ed25519', 4096), { type: 'ed25519', bits: 0 });
  assert.deepEqual(resolveKeyParams('any', 0, { allowAny: true }), { type: 'any', bits: 0 });
  assert.throws(() => resolveKeyParams('rsa', 1024), invalid(/^RSA keys < 2048 bits are unsafe and not supported$/));
  assert.throws(() => resolveKeyParams('rsa', 2047 + 1000), invalid(/unsupported bit length for RSA key: 3047/));
  assert.throws(() => resolveKeyParams('ec', 512), invalid(/^unsupported bit length for EC key: 512$/));
  assert.throws(
    () => resolveKeyParams('any', 0),
    invalid(/role key type "any" not allowed for issuing certificates, only signing/),
  );
  assert.throws(() => resolveKeyParams('dsa', 0), invalid(/unknown key type/));
});

test('checkKeyAgainstRole enforces type and minimum size as Vault does', () => {
  assert.equal(checkKeyAgainstRole({ type: 'ec', bits: 256 }, 'rsa', 2048), 'role requires keys of type rsa');
  assert.equal(
    checkKeyAgainstRole({ type: 'rsa', bits: 2048 }, 'rsa', 4096),
    "role requires a minimum of a 4096-bit key, but CSR's key is 2048 bits",
  );
  assert.equal(
    checkKeyAgainstRole({ type: 'rsa', bits: 1024 }, 'any', 0),
    "role requires a minimum of a 2048-bit key, but CSR's key is 1024 bits",
  );
  assert.equal(
    checkKeyAgainstRole({ type: 'ec', bits: 256 }, 'ec', 384),
    "role requires a minimum of a 384-bit key, but CSR's key is 256 bits",
  );
  assert.equal(checkKeyAgainstRole({ type: 'ec', bits: 224 }, 'any', 0), undefined);
  assert.equal(checkKeyAgainstRole({ type: 'ed25519', bits: 0 }, 'any', 0), undefined);
  assert.equal(checkKeyAgainstRole({ type: 'rsa', bits: 3072 }, 'rsa', 2048), undefined);
});

for (const [type, bits, label, check] of [
  ['rsa', 2048, 'RSA PRIVATE KEY', 'rsa'],
  ['ec', 224, 'EC PRIVATE KEY', 'ec'],
  ['ec', 256, 'EC PRIVATE KEY', 'ec'],
  ['ec', 384, 'EC PRIVATE KEY', 'ec'],
  ['ec', 521, 'EC PRIVATE KEY', 'ec'],
  ['ed25519', 0, 'PRIVATE KEY', 'pkey'],
] as const) {
  test(`${type} ${bits}: generated, exported as Vault does and read back by openssl`, async () => {
    const k = await generateKey(type, bits);
    assert.deepEqual(describeKey(k.privateKey), k.description);
    const pem = exportPrivateKey(k.privateKey, { format: 'pem' });
    assert.ok(pem.startsWith(`-----BEGIN ${label}-----\n`) && pem.endsWith(`-----END ${label}-----`), pem.slice(0, 40));
    const r = openssl([check, '-noout', '-text'], pem);
    assert.equal(r.status, 0, r.out);
    if (type === 'rsa') assert.match(r.out, /Private-Key: \(2048 bit/);
    if (type === 'ec') assert.match(r.out, new RegExp(`Private-Key: \\(${bits} bit`));
    if (type === 'ed25519') assert.match(r.out, /ED25519 Private-Key/);

    const pkcs8 = exportPrivateKey(k.privateKey, { format: 'pem', privateKeyFormat: 'pkcs8' });
    assert.match(pkcs8, /^-----BEGIN PRIVATE KEY-----\n/);
    assert.equal(openssl(['pkey', '-noout'], pkcs8).status, 0);

    // format=der gives base64 of the same DER.
    const b64 = exportPrivateKey(k.privateKey, { format: 'der' });
    const der = Buffer.from(b64, 'base64');
    const inform = openssl([check, '-inform', 'DER', '-noout'], der);
    assert.equal(inform.status, 0, inform.out);

    for (const form of [pem, pkcs8, b64, der]) {
      const back = parsePrivateKey(form);
      assert.deepEqual(back.description, k.description);
      assert.ok(samePublicKey(back.key, k.publicKey));
    }
    const pub = parsePublicKey(openssl([check === 'pkey' ? 'pkey' : check, '-pubout'], pem).out);
    assert.deepEqual(pub.description, k.description);
    assert.deepEqual(spkiDer(pub.key), spkiDer(k.privateKey));
  });
}

test('SKID is the SHA-1 of the public key bits as openssl computes it', () => {
  const k = generateKeySync('ec', 256);
  const skid = subjectKeyIdFromSpki(spkiDer(k.publicKey));
  // openssl x509 -req with subjectKeyIdentifier=hash uses RFC 5280 method 1 too.
  const keyPem = exportPrivateKey(k.privateKey, { format: 'pem' });
  const dir = mkdtempSync(join(tmpdir(), 'skid-'));
  writeFileSync(join(dir, 'k.pem'), keyPem);
  const cert = openssl([
    'req',
    '-new',
    '-x509',
    '-key',
    join(dir, 'k.pem'),
    '-subj',
    '/CN=x',
    '-days',
    '1',
    '-addext',
    'subjectKeyIdentifier=hash',
  ]);
  rmSync(dir, { recursive: true });
  const r = openssl(['x509', '-noout', '-ext', 'subjectKeyIdentifier'], cert.out);
  assert.match(
    r.out,
    new RegExp(
      skid
        .toString('hex')
        .toUpperCase()
        .replace(/(..)(?!$)/g, '$1:'),
    ),
  );
});

test('parsing garbage keys throws invalid', () => {
  assert.throws(
    () => parsePrivateKey('-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----'),
    invalid(/error parsing private key/),
  );
  assert.throws(() => parsePrivateKey(Buffer.from('nope')), invalid(/error parsing private key/));
  assert.throws(
    () => parsePublicKey('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----'),
    invalid(/error parsing public key/),
  );
});

test('KeyObjectCache parses once per key id and stays bounded', () => {
  const pems = [0, 1, 2].map(() => exportPrivateKey(generateKeySync('ec', 256).privateKey, { format: 'pem' }));
  const cache = new KeyObjectCache(2);
  let parses = 0;
  const load = (i: number) => () => {
    parses++;
    return pems[i]!;
  };
  const a = cache.get('a', load(0));
  assert.equal(cache.get('a', load(0)), a);
  assert.equal(parses, 1);
  cache.get('b', load(1));
  cache.get('a', load(0)); // a becomes most recent
  cache.get('c', load(2)); // evicts b
  assert.equal(cache.size, 2);
  assert.equal(parses, 3);
  cache.get('b', load(1));
  assert.equal(parses, 4);
  cache.delete('b');
  assert.equal(cache.size, 1);
});

test('KeyPool pre-generates, hands each key out once, refills and stops', async () => {
  let generated = 0;
  const gen = (type: KeyType, bits: number): Promise<GeneratedKey[]> => {
    generated++;
    return generateKey(type, bits).then((k) => [k]);
  };
  const pool = new KeyPool({ kinds: [{ type: 'rsa', bits: 2048, capacity: 2 }], maxPending: 1, generate: gen });
  pool.start([{ type: 'rsa', bits: 2048 }]);
  assert.equal(pool.stats().pending, 1);
  await pool.whenFull();
  assert.deepEqual(pool.stats().ready, { 'rsa-2048': 2 });
  assert.equal(generated, 2);

  const k1 = await pool.take('rsa', 2048);
  const k2 = await pool.take('rsa', 2048);
  assert.equal(k1.description.bits, 2048);
  assert.ok(!samePublicKey(k1.privateKey, k2.privateKey));
  assert.equal(pool.stats().hits, 2);
  assert.ok(pool.stats().pending <= 1, 'never more than maxPending in flight');

  // Drained: the next take generates on demand while the pool refills behind it.
  const k3 = await pool.take('rsa', 2048);
  assert.equal(k3.description.bits, 2048);
  assert.equal(pool.stats().misses, 1);
  // A kind the pool does not keep is generated on demand.
  assert.equal((await pool.take('rsa', 3072)).description.bits, 3072);
  assert.equal((await pool.take('ec', 521)).description.bits, 521);

  await pool.stop();
  assert.equal(pool.stats().pending, 0);
  assert.deepEqual(pool.stats().ready, { 'rsa-2048': 0 });
  const before = generated;
  assert.equal((await pool.take('rsa', 2048)).description.bits, 2048);
  assert.equal(generated, before, 'a stopped pool only generates on demand');
  assert.equal(pool.stats().pending, 0);
});

test('KeyPool keeps a kind ready only from the first key asked of it', async () => {
  const made: string[] = [];
  const gen = (type: KeyType, bits: number): Promise<GeneratedKey[]> => {
    made.push(`${type}-${bits}`);
    return generateKey(type, bits).then((k) => [k]);
  };
  const pool = new KeyPool({
    kinds: [
      { type: 'ec', bits: 256, capacity: 2 },
      { type: 'rsa', bits: 2048, capacity: 2 },
    ],
    maxPending: 2,
    generate: gen,
  });
  pool.start();
  await pool.whenFull();
  assert.equal(made.length, 0, 'nothing is made before a key is asked for');
  assert.deepEqual(pool.stats().ready, { 'ec-256': 0, 'rsa-2048': 0 });

  // The first EC key is made while the caller waits; from then on EC keys are kept ready, RSA still not.
  assert.equal((await pool.take('ec', 256)).description.bits, 256);
  assert.equal(pool.stats().misses, 1);
  await pool.whenFull();
  assert.deepEqual(pool.stats().ready, { 'ec-256': 2, 'rsa-2048': 0 });
  assert.ok(!made.some((k) => k !== 'ec-256'), 'no RSA key was made');
  assert.equal((await pool.take('ec', 256)).description.bits, 256);
  assert.equal(pool.stats().hits, 1);
  // A kind the pool does not keep never starts a background job.
  await pool.take('ec', 521);
  await pool.whenFull();
  assert.ok(!made.includes('ec-521'));
  await pool.stop();
});

test('KeyPool stops refilling after a generator failure until the next take, which still gets a key', async () => {
  let calls = 0;
  const pool = new KeyPool({
    kinds: [{ type: 'ec', bits: 256, capacity: 3 }],
    generate: async () => {
      calls++;
      throw new Error('boom');
    },
  });
  pool.start([{ type: 'ec', bits: 256 }]);
  await pool.whenFull();
  assert.equal(calls, 1);
  assert.equal(pool.stats().failures, 1);
  assert.equal((await pool.take('ec', 256)).description.bits, 256);
  await pool.whenFull();
  assert.equal(calls, 2, 'the take restarted the refill');
  await pool.stop();
});

test(
  'KeyPool keeps EC keys made in batches by the native addon: distinct, whole and usable',
  { skip: nativeEcdsa() === null && 'the addon is not loaded' },
  async () => {
    const pool = new KeyPool({
      kinds: [
        { type: 'ec', bits: 256, capacity: 40 },
        { type: 'ec', bits: 384, capacity: 3 },
      ],
      maxPending: 2,
      native: nativeEcdsa(),
    });
    pool.start([
      { type: 'ec', bits: 256 },
      { type: 'ec', bits: 384 },
    ]);
    await pool.whenFull();
    assert.deepEqual(pool.stats().ready, { 'ec-256': 40, 'ec-384': 3 });
    const seen = new Set<string>();
    for (let i = 0; i < 40; i++) {
      const k = await pool.take('ec', 256);
      assert.deepEqual(k.description, { type: 'ec', bits: 256, curve: 'prime256v1' });
      // Every encoding is read back by node:crypto, and the private key matches the public one.
      const fromSec1 = createPrivateKey({ key: k.privateDer, format: 'der', type: 'sec1' });
      assert.ok(createPublicKey(fromSec1).export({ type: 'spki', format: 'der' }).equals(k.spki));
      assert.ok(spkiDer(k.publicKey).equals(k.spki));
      const sig = sign('sha256', Buffer.from('x'), k.privateKey);
      assert.ok(verify('sha256', Buffer.from('x'), createPublicKey({ key: k.spki, format: 'der', type: 'spki' }), sig));
      seen.add(k.spki.toString('hex'));
    }
    assert.equal(seen.size, 40);
    assert.equal(pool.stats().hits, 40);
    const p384 = await pool.take('ec', 384);
    assert.ok(
      createPublicKey(createPrivateKey({ key: p384.pkcs8, format: 'der', type: 'pkcs8' }))
        .export({ type: 'spki', format: 'der' })
        .equals(p384.spki),
    );
    await pool.stop();
  },
);

test('publicKeyFromSpki imports every key type to the same key, and rejects a point off the curve', () => {
  for (const [type, bits] of [
    ['rsa', 2048],
    ['ec', 224],
    ['ec', 256],
    ['ec', 384],
    ['ec', 521],
    ['ed25519', 0],
  ] as const) {
    const k = generateKeySync(type, bits);
    const spki = spkiDer(k.publicKey);
    const got = publicKeyFromSpki(spki);
    assert.deepEqual(got.description, k.description, `${type} ${bits}`);
    assert.deepEqual(spkiDer(got.key), spki);
  }
  const spki = Buffer.from(spkiDer(generateKeySync('ec', 256).publicKey));
  spki[spki.length - 1]! ^= 1;
  assert.throws(() => parsePublicKey(spki), DomainError);
});

test('generated keys carry SPKI, Vault-container and PKCS#8 encodings identical to what OpenSSL writes', () => {
  const kinds = [
    ['rsa', 2048, 2],
    ['ec', 224, 20],
    ['ec', 256, 300],
    ['ec', 384, 50],
    ['ec', 521, 100],
    ['ed25519', 0, 20],
  ] as const;
  for (const [type, bits, count] of kinds) {
    for (let i = 0; i < count; i++) {
      const k = generateKeySync(type, bits);
      const what = `${type} ${bits}`;
      // Re-import our private encodings with OpenSSL and compare its own output byte for byte.
      const fromPkcs8 = createPrivateKey({ key: k.pkcs8, format: 'der', type: 'pkcs8' });
      assert.deepEqual(fromPkcs8.export({ type: 'pkcs8', format: 'der' }), k.pkcs8, what);
      assert.deepEqual(createPublicKey(fromPkcs8).export({ type: 'spki', format: 'der' }), k.spki, what);
      if (type === 'ec') assert.deepEqual(fromPkcs8.export({ type: 'sec1', format: 'der' }), k.privateDer, what);
      if (type === 'rsa') assert.deepEqual(fromPkcs8.export({ type: 'pkcs1', format: 'der' }), k.privateDer, what);
      assert.deepEqual(spkiDer(k.privateKey), k.spki, what);
      assert.deepEqual(spkiDer(k.publicKey), k.spki, what);
      assert.deepEqual(describeKey(k.privateKey), k.description, what);
    }
  }
  const k = generateKeySync('ec', 256);
  assert.equal(exportPrivateKey(k, { format: 'pem' }), exportPrivateKey(k.privateKey, { format: 'pem' }));
  assert.equal(
    exportPrivateKey(k, { format: 'der', privateKeyFormat: 'pkcs8' }),
    exportPrivateKey(k.privateKey, { format: 'der', privateKeyFormat: 'pkcs8' }),
  );
  const r = openssl(['ec', '-check', '-noout'], exportPrivateKey(k, { format: 'pem' }));
  assert.match(r.out, /Key is valid|EC Key valid/i);
});

test('EC keys generated one after the other are distinct, and each encoding holds its own key', async () => {
  for (const bits of [256, 384]) {
    const keys = await Promise.all(Array.from({ length: 4 }, () => generateKey('ec', bits)));
    const firstKey = keys[0];
    assert.ok(firstKey);
    assert.equal(new Set(keys.map((k) => k.pkcs8.toString('hex'))).size, keys.length);
    assert.equal(new Set(keys.map((k) => k.spki.toString('hex'))).size, keys.length);
    for (const k of keys) {
      // The SPKI and the SEC1 container agree with the PKCS#8 key they were generated with.
      const fromPkcs8 = createPublicKey(createPrivateKey({ key: k.pkcs8, format: 'der', type: 'pkcs8' }));
      assert.ok(fromPkcs8.export({ format: 'der', type: 'spki' }).equals(k.spki));
      const fromSec1 = createPrivateKey({ key: k.privateDer, format: 'der', type: 'sec1' });
      assert.ok(samePublicKey(fromSec1, fromPkcs8));
    }
  }
});
