import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ECDH, generateKeyPairSync, sign, verify } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { existsSync } from 'node:fs';
import { ecPublicPoint } from './keys.js';
import { nativeEcdsaIf } from './native-ecdsa.js';
import type { HashName } from './signature.js';

const built = existsSync(new URL('../../../../build/Release/strongroom_native.node', import.meta.url));
const off = process.env['STRONGROOM_NATIVE_CRYPTO'] === 'false';
const nativeEcdsa = nativeEcdsaIf(!off);

test('the native addon is loaded whenever it was built, and only then', () => {
  assert.equal(nativeEcdsa !== null, built && !off);
});

const CURVES = ['prime256v1', 'secp384r1', 'secp521r1'] as const;
const HASHES: HashName[] = ['sha1', 'sha256', 'sha384', 'sha512'];
const skip = nativeEcdsa === null && 'the addon is not loaded';

function pointOf(key: KeyObject): Buffer {
  return ecPublicPoint(key.export({ type: 'spki', format: 'der' }))!.point;
}

test('native verification agrees with node:crypto on every curve and hash', { skip }, async () => {
  const n = nativeEcdsa!;
  for (const curve of CURVES) {
    const a = generateKeyPairSync('ec', { namedCurve: curve });
    const b = generateKeyPairSync('ec', { namedCurve: curve });
    const point = pointOf(a.publicKey);
    const compressed = ECDH.convertKey(point, curve, undefined, undefined, 'compressed') as Buffer;
    for (const hash of HASHES) {
      const data = Buffer.from(`to be signed with ${curve} and ${hash}`);
      const sig = sign(hash, data, a.privateKey);
      const cases: { name: string; point: Buffer; key: KeyObject; data: Buffer; sig: Buffer }[] = [
        { name: 'the signer', point, key: a.publicKey, data, sig },
        { name: 'the signer, compressed point', point: compressed, key: a.publicKey, data, sig },
        { name: 'other data', point, key: a.publicKey, data: Buffer.concat([data, Buffer.from('!')]), sig },
        { name: 'another key', point: pointOf(b.publicKey), key: b.publicKey, data, sig },
        { name: 'a trailing byte', point, key: a.publicKey, data, sig: Buffer.concat([sig, Buffer.from([0])]) },
        { name: 'a truncated signature', point, key: a.publicKey, data, sig: sig.subarray(0, sig.length - 1) },
        { name: 'an empty SEQUENCE', point, key: a.publicKey, data, sig: Buffer.from([0x30, 0x00]) },
      ];
      for (const c of cases) {
        const expected = verify(hash, c.data, c.key, c.sig) ? 'valid' : 'invalid';
        const what = `${curve} ${hash}: ${c.name}`;
        assert.equal(expected, c.name.startsWith('the signer') ? 'valid' : 'invalid', what);
        assert.equal(
          n.verify({ curve, hash, point: c.point, data: c.data, signature: c.sig }),
          expected,
          `${what} (sync)`,
        );
        assert.equal(
          await n.verifyAsync({ curve, hash, point: c.point, data: c.data, signature: c.sig }),
          expected,
          `${what} (async)`,
        );
      }
    }
  }
});

test('points that are not on the curve are reported as bad keys, not as bad signatures', { skip }, async () => {
  const n = nativeEcdsa!;
  const a = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const point = pointOf(a.publicKey);
  const data = Buffer.from('data');
  const sig = sign('sha256', data, a.privateKey);
  const offCurve = Buffer.from(point);
  offCurve[offCurve.length - 1]! ^= 1;
  const bad = [
    offCurve,
    point.subarray(0, 64),
    Buffer.from([0]),
    Buffer.alloc(0),
    Buffer.concat([Buffer.from([0x05]), point.subarray(1)]),
  ];
  for (const p of bad) {
    const check = { curve: 'prime256v1', hash: 'sha256' as const, point: p, data, signature: sig };
    assert.equal(n.verify(check), 'bad-key', p.toString('hex'));
    assert.equal(await n.verifyAsync(check), 'bad-key', p.toString('hex'));
  }
  // A P-256 point is not a P-384 key.
  assert.equal(n.verify({ curve: 'secp384r1', hash: 'sha256', point, data, signature: sig }), 'bad-key');
  assert.equal(n.supportsCurve('secp224r1'), false);
});

test('the async check copies its input, so the caller may reuse its buffers at once', { skip }, async () => {
  const n = nativeEcdsa!;
  const a = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const data = Buffer.from('reused buffer');
  const sig = sign('sha256', data, a.privateKey);
  const pending = Array.from({ length: 16 }, () => {
    const d = Buffer.from(data);
    const p = n.verifyAsync({
      curve: 'prime256v1',
      hash: 'sha256',
      point: pointOf(a.publicKey),
      data: d,
      signature: sig,
    });
    d.fill(0);
    return p;
  });
  assert.deepEqual(
    await Promise.all(pending),
    Array.from({ length: 16 }, () => 'valid'),
  );
});

const scalarOf = (key: KeyObject): Buffer => Buffer.from(key.export({ format: 'jwk' }).d as string, 'base64url');

test(
  'signatures made with a loaded key verify with node:crypto on every curve and hash, sync and async',
  { skip },
  async () => {
    const n = nativeEcdsa!;
    for (const curve of CURVES) {
      const k = generateKeyPairSync('ec', { namedCurve: curve });
      const signer = n.signer(curve, scalarOf(k.privateKey));
      for (const hash of HASHES) {
        const data = Buffer.from(`tbs ${curve} ${hash}`);
        const sigs = [n.sign(signer, hash, data), await n.signAsync(signer, hash, data)];
        for (const sig of sigs) {
          assert.ok(sig && verify(hash, data, k.publicKey, sig), `${curve} ${hash}`);
          assert.ok(!verify(hash, Buffer.concat([data, Buffer.from('!')]), k.publicKey, sig!));
        }
        // ECDSA draws a fresh nonce every time.
        assert.notDeepEqual(sigs[0], sigs[1]);
      }
    }
  },
);

test('a scalar that is no key of the curve is refused', { skip }, () => {
  const n = nativeEcdsa!;
  const order256 = Buffer.from('ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551', 'hex');
  for (const bad of [Buffer.alloc(32), order256, Buffer.alloc(0)]) {
    assert.throws(() => n.signer('prime256v1', bad), /not a usable private key/, bad.toString('hex'));
  }
});

test('verifyThenSignAsync signs only what follows a check that holds', { skip }, async () => {
  const n = nativeEcdsa!;
  const issuer = generateKeyPairSync('ec', { namedCurve: 'secp384r1' });
  const signer = n.signer('secp384r1', scalarOf(issuer.privateKey));
  const requester = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const info = Buffer.from('certification request info');
  const check = {
    curve: 'prime256v1',
    hash: 'sha256' as const,
    point: pointOf(requester.publicKey),
    data: info,
    signature: sign('sha256', info, requester.privateKey),
  };
  const tbs = Buffer.from('to be signed');
  const sig = await n.verifyThenSignAsync(check, signer, 'sha384', tbs);
  assert.ok(Buffer.isBuffer(sig) && verify('sha384', tbs, issuer.publicKey, sig));
  assert.equal(
    await n.verifyThenSignAsync({ ...check, data: Buffer.from('other info') }, signer, 'sha384', tbs),
    'invalid',
  );
  const offCurve = Buffer.from(check.point);
  offCurve[offCurve.length - 1]! ^= 1;
  assert.equal(await n.verifyThenSignAsync({ ...check, point: offCurve }, signer, 'sha384', tbs), 'bad-key');
  // The job copies what it is given: buffers changed right after the call do not matter.
  const mutable = Buffer.from(tbs);
  const pending = n.verifyThenSignAsync(check, signer, 'sha384', mutable);
  mutable.fill(0);
  const late = await pending;
  assert.ok(Buffer.isBuffer(late) && verify('sha384', tbs, issuer.publicKey, late));
});
