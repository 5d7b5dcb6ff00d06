import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import {
  CONTENT_HEADER,
  ContentSealer,
  FRAME_SHIFT,
  openBuffer,
  openStream,
  openText,
  sealBuffer,
  plainSizeOf,
  sealedSize,
  sealText,
} from './content-cipher.js';

const key = { id: randomBytes(16), key: randomBytes(32) };
const lookup = async (id: Buffer) => {
  if (!id.equals(key.id)) throw new Error('unknown key');
  return key.key;
};
// Small frames, so that records of many frames stay small; readers take any frame size.
const SHIFT = 12;
const FRAME = 1 << SHIFT;

async function collect(it: AsyncIterable<Buffer>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const p of it) parts.push(p);
  return Buffer.concat(parts);
}

/** Seals `plain` fed in pieces of `piece` bytes, in frames of 2^shift bytes. */
function sealInPieces(plain: Buffer, piece: number, shift = SHIFT): Buffer {
  const s = new ContentSealer(key, shift);
  const out: Buffer[] = [];
  for (let o = 0; o < plain.length; o += piece) out.push(...s.update(plain.subarray(o, o + piece)));
  out.push(...s.final());
  return Buffer.concat(out);
}

/** Splits stored bytes into reads of `piece` bytes. */
function* reads(b: Buffer, piece: number): Generator<Buffer> {
  for (let o = 0; o < b.length; o += piece) yield b.subarray(o, o + piece);
}

describe('content cipher', () => {
  for (const size of [0, 1, FRAME - 1, FRAME, FRAME + 1, 3 * FRAME, 3 * FRAME + 17]) {
    it(`round-trips ${size} bytes, whatever the write and read sizes`, async () => {
      const plain = randomBytes(size);
      for (const piece of [1000, FRAME, 1 << 20]) {
        const sealed = sealInPieces(plain, piece);
        assert.equal(sealed.length, sealedSize(size, SHIFT));
        assert.equal(plainSizeOf(sealed.length, sealed), size);
        for (const r of [7, 4096, 1 << 20])
          assert.deepEqual(await collect(openStream(reads(sealed, r), lookup)), plain);
      }
    });
  }

  it('writes frames of 1 MiB and still reads the 64 KiB frames of earlier records', async () => {
    const plain = randomBytes(3 * (1 << 20) + 100);
    const sealed = sealBuffer(key, plain);
    assert.equal(FRAME_SHIFT, 20);
    assert.equal(sealed.length, sealedSize(plain.length));
    assert.equal(sealed.length, CONTENT_HEADER + plain.length + 4 * 16);
    assert.deepEqual(await openBuffer(sealed, lookup), plain);
    const earlier = sealInPieces(plain, 1 << 16, 16);
    assert.equal(earlier.length, CONTENT_HEADER + plain.length + 49 * 16);
    assert.equal(plainSizeOf(earlier.length, earlier), plain.length);
    assert.deepEqual(await openBuffer(earlier, lookup), plain);
    assert.deepEqual(await collect(openStream(reads(earlier, 1 << 20), lookup)), plain);
  });

  it('never stores the plaintext and uses a fresh salt each time', () => {
    const plain = Buffer.from('{"password":"hunter2-hunter2"}');
    const a = sealBuffer(key, plain);
    const b = sealBuffer(key, plain);
    assert.ok(!a.includes(Buffer.from('hunter2')));
    assert.notDeepEqual(a, b);
  });

  it('passes plain (older) content through unchanged', async () => {
    for (const plain of [Buffer.from('{"version":4}'), Buffer.from('{'), Buffer.alloc(0)]) {
      assert.deepEqual(await collect(openStream(reads(plain, 1), lookup)), plain);
      assert.deepEqual(await openBuffer(plain, lookup), plain);
    }
    assert.equal(await openText('{"a":1}', lookup), '{"a":1}');
  });

  it('detects a flipped bit, a dropped or swapped frame, truncation and extension', async () => {
    const plain = randomBytes(3 * FRAME + 5);
    const sealed = sealInPieces(plain, plain.length);
    const frame = FRAME + 16;
    const f = (i: number) => sealed.subarray(CONTENT_HEADER + i * frame, CONTENT_HEADER + (i + 1) * frame);
    const head = sealed.subarray(0, CONTENT_HEADER);
    const flipped = Buffer.from(sealed);
    flipped[CONTENT_HEADER + 10] = (flipped[CONTENT_HEADER + 10] as number) ^ 1;
    const cases: Record<string, Buffer> = {
      flipped,
      dropped: Buffer.concat([head, f(0), f(2), sealed.subarray(CONTENT_HEADER + 3 * frame)]),
      swapped: Buffer.concat([head, f(1), f(0), f(2), sealed.subarray(CONTENT_HEADER + 3 * frame)]),
      'truncated at a frame boundary': sealed.subarray(0, CONTENT_HEADER + 3 * frame),
      'truncated mid-frame': sealed.subarray(0, sealed.length - 3),
      'header only': head,
      extended: Buffer.concat([sealed, Buffer.alloc(20)]),
    };
    for (const [name, bad] of Object.entries(cases)) {
      await assert.rejects(collect(openStream(reads(bad, 4096), lookup)), /cannot be authenticated/, name);
    }
  });

  it('yields nothing of a frame before its tag is checked', async () => {
    const sealed = sealInPieces(randomBytes(2 * FRAME), 2 * FRAME);
    sealed[sealed.length - 1] = (sealed[sealed.length - 1] as number) ^ 1;
    const got: Buffer[] = [];
    await assert.rejects(async () => {
      for await (const p of openStream([sealed], lookup)) got.push(p);
    });
    assert.equal(Buffer.concat(got).length, FRAME);
  });

  it('refuses another data key', async () => {
    const other = { id: key.id, key: randomBytes(32) };
    await assert.rejects(openBuffer(sealBuffer(other, Buffer.from('x')), lookup), /cannot be authenticated/);
  });

  it('seals texts', async () => {
    const s = sealText(key, '"secret-value"');
    assert.ok(s.startsWith('$sr1$') && !s.includes('secret'));
    assert.equal(await openText(s, lookup), '"secret-value"');
  });
});
