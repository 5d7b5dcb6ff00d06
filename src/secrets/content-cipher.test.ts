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
  NATIVE_GCM,
  RECORD_HEADER,
} from './content-cipher.js';
import type { NativeGcm } from './content-cipher.js';

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
function sealInPieces(plain: Buffer, piece: number, shift = SHIFT, gcm: NativeGcm | null = NATIVE_GCM): Buffer {
  const s = new ContentSealer(key, shift, gcm);
  const out: Buffer[] = [];
  for (let o = 0; o < plain.length; o += piece) out.push(...s.update(plain.subarray(o, o + piece)));
  out.push(...s.final());
  return Buffer.concat(out);
}

/** Splits stored bytes into reads of `piece` bytes, each a buffer of its own (as a store's reads are). */
function* reads(b: Buffer, piece: number): Generator<Buffer> {
  for (let o = 0; o < b.length; o += piece) yield Buffer.from(b.subarray(o, o + piece));
}

/** Both ciphers: the native addon's in place (when it is built) and node:crypto's. */
for (const gcm of NATIVE_GCM ? [NATIVE_GCM, null] : [null]) {
  describe(`content cipher (${gcm ? 'native, in place' : 'node:crypto'})`, () => {
    for (const size of [0, 1, FRAME - 1, FRAME, FRAME + 1, 3 * FRAME, 3 * FRAME + 17]) {
      it(`round-trips ${size} bytes, whatever the write and read sizes`, async () => {
        const plain = randomBytes(size);
        for (const piece of [1000, FRAME, 1 << 20]) {
          const sealed = sealInPieces(plain, piece, SHIFT, gcm);
          assert.equal(sealed.length, sealedSize(size, SHIFT));
          assert.equal(plainSizeOf(sealed.length, sealed), size);
          for (const r of [7, 4096, FRAME + 16, 1 << 20]) {
            assert.deepEqual(await collect(openStream(reads(sealed, r), lookup, gcm)), plain);
            // Knowing the stored size, frames are opened as soon as they are complete.
            assert.deepEqual(await collect(openStream(reads(sealed, r), lookup, gcm, sealed.length)), plain);
          }
        }
      });
    }

    it('writes frames of 1 MiB and still reads the 64 KiB frames of earlier records', async () => {
      const plain = randomBytes(3 * (1 << 20) + 100);
      const sealed = sealInPieces(plain, 1 << 16, FRAME_SHIFT, gcm);
      assert.equal(FRAME_SHIFT, 20);
      assert.equal(sealed.length, sealedSize(plain.length));
      assert.equal(sealed.length, CONTENT_HEADER + plain.length + 4 * 16);
      assert.deepEqual(await openBuffer(sealed, lookup, gcm), plain);
      const earlier = sealInPieces(plain, 1 << 16, 16, gcm);
      assert.equal(earlier.length, CONTENT_HEADER + plain.length + 49 * 16);
      assert.equal(plainSizeOf(earlier.length, earlier), plain.length);
      assert.deepEqual(await openBuffer(earlier, lookup, gcm), plain);
      assert.deepEqual(await collect(openStream(reads(earlier, 1 << 20), lookup, gcm)), plain);
    });

    it('seals a whole record in one piece (format 2) of its size and 50 bytes, whatever its size', async () => {
      for (const size of [0, 1, 10_240, 3 * (1 << 20) + 100]) {
        const plain = randomBytes(size);
        const sealed = sealBuffer(key, plain, gcm);
        assert.equal(sealed[4], 2);
        assert.equal(sealed.length, RECORD_HEADER + size + 16);
        const before = Buffer.from(sealed);
        assert.deepEqual(await openBuffer(sealed, lookup, gcm), plain);
        assert.deepEqual(sealed, before, 'the stored buffer is left as it is');
      }
    });

    it('detects any change to a record sealed whole: header, ciphertext, tag, length', async () => {
      const sealed = sealBuffer(key, Buffer.from('{"version":4,"password":"hunter2"}'), gcm);
      const at = (i: number) => {
        const b = Buffer.from(sealed);
        b[i] = (b[i] as number) ^ 1;
        return b;
      };
      const cases: Record<string, Buffer> = {
        'reserved byte': at(5),
        nonce: at(RECORD_HEADER - 1),
        ciphertext: at(RECORD_HEADER + 3),
        tag: at(sealed.length - 1),
        truncated: sealed.subarray(0, sealed.length - 1),
        'header and tag only': Buffer.concat([sealed.subarray(0, RECORD_HEADER), sealed.subarray(-16)]),
        'header only': sealed.subarray(0, RECORD_HEADER),
        extended: Buffer.concat([sealed, Buffer.alloc(1)]),
        'key id': at(6),
      };
      for (const [name, bad] of Object.entries(cases)) {
        await assert.rejects(
          openBuffer(bad, async () => key.key, gcm),
          /cannot be authenticated/,
          name,
        );
      }
    });

    it('reads records sealed whole in frames (format 1) by earlier versions', async () => {
      // Written by the format 1 sealBuffer and sealText, under the data key below.
      const old = { id: Buffer.from('000102030405060708090a0b0c0d0e0f', 'hex'), key: Buffer.alloc(32, 7) };
      const oldLookup = async (id: Buffer) => {
        assert.deepEqual(id, old.id);
        return old.key;
      };
      const record = Buffer.from(
        'AFNSRQEUAAECAwQFBgcICQoLDA0OD0FUqTOEr5ALQSfrhzGqY3RpFKfPxcTV6rXza+Zd45z6xHwDh1QMMd/3+6mgK3ArR911cCIWNXejDj' +
          'tJAmwicl5SSi/LkGCivDhFUc6EBm/A4rbpthYY348i6XDwdg==',
        'base64',
      );
      assert.equal(record[4], 1);
      assert.equal(
        (await openBuffer(record, oldLookup, gcm)).toString(),
        '{"version":4,"serial":1,"outputs":{"pw":{"value":"hunter2"}}}',
      );
      const text = '$sr1$AFNSRQEUAAECAwQFBgcICQoLDA0OD1Gwzxp9GeeVb147VzfUGZAAXESjcqWjTuPtdjZ4/dCJ9Bwtf2pWMRE=';
      assert.equal(await openText(text, oldLookup, gcm), '"s3cret"');
      // And what the stream sealer writes today, whole.
      const plain = randomBytes(5000);
      assert.deepEqual(await openBuffer(sealInPieces(plain, 1000, FRAME_SHIFT, gcm), lookup, gcm), plain);
    });

    it('never stores the plaintext and uses a fresh salt each time', () => {
      const plain = Buffer.from('{"password":"hunter2-hunter2"}');
      const a = sealBuffer(key, plain, gcm);
      const b = sealBuffer(key, plain, gcm);
      assert.ok(!a.includes(Buffer.from('hunter2')));
      assert.notDeepEqual(a, b);
    });

    it('passes plain (older) content through unchanged', async () => {
      for (const plain of [Buffer.from('{"version":4}'), Buffer.from('{'), Buffer.alloc(0)]) {
        assert.deepEqual(await collect(openStream(reads(plain, 1), lookup, gcm)), plain);
        assert.deepEqual(await openBuffer(plain, lookup, gcm), plain);
      }
      assert.equal(await openText('{"a":1}', lookup, gcm), '{"a":1}');
    });

    it('detects a flipped bit, a dropped or swapped frame, truncation and extension', async () => {
      const plain = randomBytes(3 * FRAME + 5);
      const sealed = sealInPieces(plain, plain.length, SHIFT, gcm);
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
        await assert.rejects(collect(openStream(reads(bad, 4096), lookup, gcm)), /cannot be authenticated/, name);
      }
    });

    it('opens each whole frame as it arrives when the stored size is known, and refuses a wrong size', async () => {
      const plain = randomBytes(3 * FRAME + 5);
      const sealed = sealInPieces(plain, 1000, SHIFT, gcm);
      const frames = [sealed.subarray(0, CONTENT_HEADER), ...reads(sealed.subarray(CONTENT_HEADER), FRAME + 16)];
      const it = openStream(
        (function* () {
          for (const f of frames) yield Buffer.from(f);
        })(),
        lookup,
        gcm,
        sealed.length,
      );
      // The first frame comes out before the second is read.
      assert.equal((await it.next()).value?.length, FRAME);
      // A size short of the record's makes a frame the last that is not: it fails, as does what follows.
      for (const size of [sealed.length - 1, sealed.length - 5 - 16, CONTENT_HEADER + FRAME + 16]) {
        await assert.rejects(
          collect(openStream(reads(sealed, 4096), lookup, gcm, size)),
          /cannot be authenticated/,
          `stored size ${size}`,
        );
      }
      const extended = Buffer.concat([sealed, Buffer.alloc(20)]);
      await assert.rejects(
        collect(openStream(reads(extended, 4096), lookup, gcm, sealed.length)),
        /cannot be authenticated/,
      );
    });

    it('yields nothing of a frame before its tag is checked', async () => {
      const sealed = sealInPieces(randomBytes(2 * FRAME), 2 * FRAME, SHIFT, gcm);
      sealed[sealed.length - 1] = (sealed[sealed.length - 1] as number) ^ 1;
      const got: Buffer[] = [];
      await assert.rejects(async () => {
        for await (const p of openStream([sealed], lookup, gcm)) got.push(p);
      });
      assert.equal(Buffer.concat(got).length, FRAME);
    });

    it('refuses another data key', async () => {
      const other = { id: key.id, key: randomBytes(32) };
      await assert.rejects(
        openBuffer(sealBuffer(other, Buffer.from('x'), gcm), lookup, gcm),
        /cannot be authenticated/,
      );
    });

    it('seals texts', async () => {
      const s = sealText(key, '"secret-value"', gcm);
      assert.ok(s.startsWith('$sr1$') && !s.includes('secret'));
      assert.equal(await openText(s, lookup, gcm), '"secret-value"');
    });
  });
}

describe('content cipher: native and node:crypto', { skip: !NATIVE_GCM && 'the native addon is not built' }, () => {
  it('each opens what the other sealed, streamed and whole', async () => {
    for (const [writer, reader] of [
      [NATIVE_GCM, null],
      [null, NATIVE_GCM],
    ]) {
      const plain = randomBytes(5 * FRAME + 3);
      const streamed = sealInPieces(plain, 1000, SHIFT, writer);
      const whole = sealBuffer(key, plain, writer);
      assert.deepEqual(await collect(openStream(reads(streamed, 777), lookup, reader)), plain);
      assert.deepEqual(await openBuffer(whole, lookup, reader), plain);
      assert.deepEqual(await openBuffer(sealInPieces(plain, 1000, FRAME_SHIFT, writer), lookup, reader), plain);
    }
  });

  it('keeps one key set up between records and changes it when the key changes', async () => {
    // The native cipher skips the key schedule when a call has the key of the call before.
    const other = { id: randomBytes(16), key: randomBytes(32) };
    const both = async (id: Buffer) => (id.equals(key.id) ? key.key : other.key);
    const plain = Buffer.from('{"a":1}');
    const sealed: Buffer[] = [];
    for (let i = 0; i < 6; i++) {
      sealed.push(sealBuffer(i % 3 === 2 ? other : key, plain, NATIVE_GCM));
      sealed.push(sealInPieces(plain, 3, SHIFT, NATIVE_GCM));
    }
    for (const s of [...sealed].reverse()) assert.deepEqual(await openBuffer(s, both, NATIVE_GCM), plain);
    for (const s of sealed) assert.deepEqual(await openBuffer(s, both, null), plain);
    const forged = Buffer.from(sealed[0] as Buffer);
    forged.set(other.id, 6);
    await assert.rejects(openBuffer(forged, both, NATIVE_GCM), /cannot be authenticated/);
  });

  it('refuses record buffers of the wrong sizes', () => {
    const gcm = NATIVE_GCM as NonNullable<typeof NATIVE_GCM>;
    assert.throws(() => gcm.sealRecord(key.key, Buffer.alloc(5), Buffer.alloc(RECORD_HEADER + 5 + 15)), /expected/);
    assert.throws(() => gcm.openRecord(key.key, Buffer.alloc(RECORD_HEADER + 15), Buffer.alloc(0)), /expected/);
    assert.throws(() => gcm.sealRecord(key.key.subarray(1), Buffer.alloc(5), Buffer.alloc(RECORD_HEADER + 21)));
  });

  it('copies what it seals: a chunk may change once update returns, and released frames are reused', async () => {
    const plain = randomBytes(6 * FRAME + 9);
    const s = new ContentSealer(key, SHIFT, NATIVE_GCM);
    const out: Buffer[] = [];
    const frames = new Set<ArrayBufferLike>();
    for (let o = 0; o < plain.length; o += 1500) {
      const chunk = Buffer.from(plain.subarray(o, o + 1500));
      const parts = s.update(chunk);
      chunk.fill(0);
      // What is handed back is written first (copied here), as a store does.
      out.push(...parts.map((p) => Buffer.from(p)));
      for (const p of parts) if (p.length > CONTENT_HEADER) frames.add(p.buffer);
      s.release(parts);
    }
    out.push(...s.final());
    const sealed = Buffer.concat(out);
    assert.ok(frames.size < 6, `${frames.size} frame buffers for 6 frames`);
    assert.deepEqual(await collect(openStream(reads(sealed, 4096), lookup, NATIVE_GCM)), plain);
  });

  it('opens stored chunks in place and zeroes a frame that fails', async () => {
    const plain = randomBytes(FRAME);
    const stored = Buffer.from(sealInPieces(plain, FRAME, SHIFT, NATIVE_GCM));
    stored[stored.length - 1] = (stored[stored.length - 1] as number) ^ 1;
    await assert.rejects(collect(openStream([stored], lookup, NATIVE_GCM)), /cannot be authenticated/);
    assert.ok(stored.subarray(CONTENT_HEADER, CONTENT_HEADER + FRAME).every((b) => b === 0));
  });
});
