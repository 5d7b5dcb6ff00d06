import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import {
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';
import { dbKinds, createTestDb } from '../../test/support/test-db.js';
import type { TestDatabase } from '../../test/support/test-db.js';
import { systemClock } from '../shared/clock.js';
import type { DomainError } from '../shared/errors.js';
import { uuid } from '../shared/ids.js';
import { ContentSealer, CONTENT_HEADER, FRAME_SHIFT, sealedSize } from '../secrets/content-cipher.js';
import type { DataKey } from '../secrets/content-cipher.js';
import { readSmallBlob } from './blob-store.js';
import type { BlobSealing, BlobStore } from './blob-store.js';
import { DbBlobStore } from './db-blob-store.js';
import { FsBlobStore } from './fs-blob-store.js';
import { writeOffTheEventLoop, writesOffTheEventLoop } from './threaded-write.js';

/** `mb` MiB of deterministic bytes in 256 KiB chunks, hashed as they are produced. */
function generated(mb: number, seed: number): { source: AsyncIterable<Buffer>; digest: () => string } {
  const hash = createHash('sha256');
  async function* gen() {
    const chunk = Buffer.alloc(256 * 1024);
    for (let i = 0; i < mb * 4; i++) {
      chunk.writeUInt32LE(seed, 0);
      chunk.writeUInt32LE(i, 4);
      hash.update(chunk);
      yield Buffer.from(chunk);
    }
  }
  return { source: gen(), digest: () => hash.digest('hex') };
}

async function* failingAfter(bytes: number): AsyncIterable<Buffer> {
  yield Buffer.alloc(bytes, 1);
  throw new Error('client went away');
}

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

/** Peak of live memory (collected every few ms, so garbage does not count) while fn runs. */
async function peakMemoryDuring<T>(fn: () => Promise<T>): Promise<{ result: T; growthMb: number }> {
  gc();
  const base = process.memoryUsage();
  const baseline = base.heapUsed + base.arrayBuffers;
  let peak = baseline;
  const timer = setInterval(() => {
    gc();
    const m = process.memoryUsage();
    peak = Math.max(peak, m.heapUsed + m.arrayBuffers);
  }, 25);
  try {
    const result = await fn();
    return { result, growthMb: (peak - baseline) / 1024 / 1024 };
  } finally {
    clearInterval(timer);
  }
}

const dataKey: DataKey = { id: randomBytes(16), key: randomBytes(32) };
const sealing: BlobSealing = {
  encrypt: true,
  current: () => dataKey,
  lookup: async (id) => {
    if (!id.equals(dataKey.id)) throw new Error('unknown data key');
    return dataKey.key;
  },
};

/** `plain` sealed in frames of 2^shift bytes, fed in pieces of 100 KB. */
function sealedIn(plain: Buffer, shift: number): Buffer {
  const s = new ContentSealer(dataKey, shift);
  const out: Buffer[] = [];
  for (let o = 0; o < plain.length; o += 100_000) out.push(...s.update(plain.subarray(o, o + 100_000)));
  out.push(...s.final());
  return Buffer.concat(out);
}

interface OpenedStore {
  store: BlobStore;
  visibleCount: () => Promise<number>;
  /** Stores these bytes under this name as they are, as an earlier version of the store would have. */
  plant: (sha256: string, size: number, stored: Buffer) => Promise<void>;
}

function contract(name: string, open: () => Promise<OpenedStore>, bigMb: number, sealed = false) {
  describe(name, () => {
    let store: BlobStore;
    let visibleCount: () => Promise<number>;
    let plant: OpenedStore['plant'];
    before(async () => ({ store, visibleCount, plant } = await open()));

    if (sealed) {
      it('reads content sealed in frames of 64 KiB (before frames were 1 MiB), whole and with its size', async () => {
        const plain = randomBytes(3 * 1024 * 1024 + 5);
        const sha = createHash('sha256').update(plain).digest('hex');
        const stored = sealedIn(plain, 16);
        assert.equal(stored.length, CONTENT_HEADER + plain.length + 49 * 16);
        await plant(sha, plain.length, stored);
        assert.deepEqual(await store.stat(sha), { size: plain.length });
        assert.deepEqual(await readSmallBlob(store, sha), plain);
        // Written again now: 1 MiB frames, the same content.
        const again = await store.put([plain.subarray(0, 1_000_000), plain.subarray(1_000_000)]);
        assert.equal(again.sha256, sha);
        await store.delete(sha);
        const fresh = await store.put([plain.subarray(0, 1_000_000), plain.subarray(1_000_000)]);
        assert.deepEqual(await store.stat(fresh.sha256), { size: plain.length });
        assert.deepEqual(await readSmallBlob(store, sha), plain);
      });
    }

    it('stores by SHA-256 and returns the exact bytes with their md5', async () => {
      const body = Buffer.from('{"version":4,"serial":1}');
      const info = await store.put([body]);
      assert.equal(info.sha256, createHash('sha256').update(body).digest('hex'));
      assert.equal(info.md5, createHash('md5').update(body).digest('hex'));
      assert.equal(info.size, body.length);
      assert.deepEqual(await readSmallBlob(store, info.sha256), body);
      assert.deepEqual(await store.stat(info.sha256), { size: body.length });
    });

    it('deduplicates identical content', async () => {
      const before = await visibleCount();
      const tag = randomBytes(8).toString('hex');
      const a = await store.put([Buffer.from('dedupe me'), Buffer.from(` please ${tag}`)]);
      const b = await store.put([Buffer.from(`dedupe me please ${tag}`)]);
      assert.equal(a.sha256, b.sha256);
      assert.equal(await visibleCount(), before + 1);
    });

    it('refuses content over the limit and keeps nothing', async () => {
      const before = await visibleCount();
      await assert.rejects(
        store.put([Buffer.alloc(600), Buffer.alloc(600)], { maxSize: 1000 }),
        (err: DomainError) => err.kind === 'too_large',
      );
      assert.equal(await visibleCount(), before);
    });

    it('keeps nothing when the source fails mid-write', async () => {
      const before = await visibleCount();
      await assert.rejects(store.put(failingAfter(3 * 1024 * 1024)), /client went away/);
      assert.equal(await visibleCount(), before);
    });

    it('answers not_found for unknown or malformed names, and deletes', async () => {
      await assert.rejects(store.get('0'.repeat(64)), (err: DomainError) => err.kind === 'not_found');
      await assert.rejects(store.get('../etc/passwd'), (err: DomainError) => err.kind === 'not_found');
      const info = await store.put([Buffer.from('to be deleted')]);
      await store.delete(info.sha256);
      assert.equal(await store.stat(info.sha256), undefined);
    });

    it(`streams a ${bigMb} MiB blob in and out without holding it in memory`, async () => {
      const g = generated(bigMb, 7);
      const put = await peakMemoryDuring(() => store.put(g.source));
      assert.equal(put.result.sha256, g.digest());
      assert.equal(put.result.size, bigMb * 1024 * 1024);
      assert.ok(put.growthMb < 48, `write grew memory by ${put.growthMb.toFixed(1)} MiB`);
      const read = await peakMemoryDuring(async () => {
        const h = createHash('sha256');
        let n = 0;
        for await (const c of await store.get(put.result.sha256)) {
          h.update(c);
          n += c.length;
        }
        return { sha: h.digest('hex'), n };
      });
      assert.equal(read.result.sha, put.result.sha256);
      assert.equal(read.result.n, bigMb * 1024 * 1024);
      assert.ok(read.growthMb < 48, `read grew memory by ${read.growthMb.toFixed(1)} MiB`);
      await store.delete(put.result.sha256);
    });
  });
}

// With the addon, writes hash and seal on the threadpool; `native: null` keeps them on the event loop.
const fsVariants: Array<[label: string, sealing: BlobSealing | undefined, bigMb: number]> = [
  ['', undefined, 256],
  [', sealed', sealing, 64],
  [', node:crypto', { ...sealing, encrypt: false, native: null }, 64],
  [', sealed, node:crypto', { ...sealing, native: null }, 64],
];
for (const [label, storeSealing, bigMb] of fsVariants) {
  const sealed = storeSealing?.encrypt === true;
  contract(
    `filesystem blob store${label}`,
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'blobs-'));
      const store = await FsBlobStore.open(dir, systemClock, storeSealing);
      const visibleCount = async () => {
        assert.deepEqual(readdirSync(join(dir, 'tmp')), [], 'no temporary file is left behind');
        return readdirSync(join(dir, 'sha256')).reduce(
          (n, shard) => n + readdirSync(join(dir, 'sha256', shard)).length,
          0,
        );
      };
      const plant = async (sha256: string, _size: number, stored: Buffer) => {
        mkdirSync(join(dir, 'sha256', sha256.slice(0, 2)), { recursive: true });
        writeFileSync(join(dir, 'sha256', sha256.slice(0, 2), sha256), stored);
      };
      return { store, visibleCount, plant };
    },
    bigMb,
    sealed,
  );
}

for (const kind of dbKinds()) {
  let tdb: TestDatabase;
  describe(`database blob store [${kind}]`, () => {
    before(async () => (tdb = await createTestDb(kind)));
    after(async () => tdb.cleanup());
    const dbVariants: Array<[label: string, sealing: BlobSealing | undefined, bigMb: number]> = [
      ['contract', undefined, 64],
      ['contract, sealed', sealing, 16],
      ['contract, sealed, node:crypto', { ...sealing, native: null }, 16],
    ];
    for (const [label, storeSealing, bigMb] of dbVariants)
      contract(
        label,
        async () => {
          const store = new DbBlobStore({
            db: tdb.db.kysely,
            units: tdb.db.units,
            clock: systemClock,
            ...(storeSealing ? { sealing: storeSealing } : {}),
          });
          const visibleCount = async () => {
            const blobs = await tdb.db.kysely
              .selectFrom('blobs')
              .select((eb) => eb.fn.countAll<number>().as('n'))
              .executeTakeFirstOrThrow();
            const orphans = await tdb.db.kysely
              .selectFrom('blob_chunks')
              .select((eb) => eb.fn.countAll<number>().as('n'))
              .where('upload_id', 'not in', (eb) => eb.selectFrom('blobs').select('upload_id'))
              .executeTakeFirstOrThrow();
            assert.equal(Number(orphans.n), 0, 'no chunk without its blob row');
            return Number(blobs.n);
          };
          const plant = async (sha256: string, size: number, stored: Buffer) => {
            const uploadId = uuid();
            const chunk = 1024 * 1024;
            for (let seq = 0; seq * chunk < stored.length; seq++) {
              const data = stored.subarray(seq * chunk, (seq + 1) * chunk);
              await tdb.db.kysely.insertInto('blob_chunks').values({ upload_id: uploadId, seq, data }).execute();
            }
            const created_at = new Date().toISOString();
            await tdb.db.kysely.insertInto('blobs').values({ sha256, size, upload_id: uploadId, created_at }).execute();
          };
          return { store, visibleCount, plant };
        },
        bigMb,
        storeSealing?.encrypt === true,
      );
  });
}

/** The same key, sealed and opened with node:crypto on the event loop. */
const onTheEventLoop: BlobSealing = { ...sealing, native: null };
const FRAME = 2 ** FRAME_SHIFT;

/** `buf` in pieces of `size` bytes (no copy). */
function pieces(buf: Buffer, size: number): Buffer[] {
  const out: Buffer[] = [];
  for (let o = 0; o < buf.length; o += size) out.push(buf.subarray(o, o + size));
  return out;
}

const built = writesOffTheEventLoop(undefined);

describe('blob writes off the event loop', { skip: !built && 'the native addon is not built' }, () => {
  it('is used with the addon, unless the server uses node:crypto (native_crypto off)', () => {
    assert.equal(writesOffTheEventLoop(sealing), true);
    assert.equal(writesOffTheEventLoop({ ...sealing, encrypt: false }), true);
    assert.equal(writesOffTheEventLoop(onTheEventLoop), false);
  });

  it('stores what node:crypto opens, and opens what node:crypto stored, for sizes around a frame', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'threaded-'));
    const threaded = await FsBlobStore.open(dir, systemClock, sealing);
    const plain = await FsBlobStore.open(dir, systemClock, onTheEventLoop);
    const sizes = [0, 1, 4095, FRAME - 1, FRAME, FRAME + 1, 3 * FRAME, 3 * FRAME + 17];
    for (const [i, size] of sizes.entries()) {
      const content = randomBytes(size);
      const md5 = createHash('md5').update(content).digest('hex');
      const sha256 = createHash('sha256').update(content).digest('hex');
      // Odd piece sizes, so frames end inside pieces; a single piece for some.
      const [writer, reader] = i % 2 === 0 ? [threaded, plain] : [plain, threaded];
      const info = await writer.put(i % 3 === 0 ? [content] : pieces(content, 65_521));
      assert.deepEqual(info, { sha256, md5, size }, `size ${size}`);
      const file = join(dir, 'sha256', sha256.slice(0, 2), sha256);
      assert.equal(statSync(file).size, sealedSize(size), `stored size of ${size} bytes`);
      assert.deepEqual(await readSmallBlob(reader, sha256), content, `read back, ${size} bytes`);
      assert.deepEqual(await readSmallBlob(writer, sha256), content);
      await writer.delete(sha256);
    }
  });

  it('writes plain content as it is, with its digests, in pieces of any size', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'threaded-'));
    const content = randomBytes(2 * FRAME + 333);
    const file = join(dir, 'out');
    const fd = openSync(file, 'w');
    try {
      const info = await writeOffTheEventLoop(fd, [...pieces(content, 1000), 'tail'], undefined);
      const whole = Buffer.concat([content, Buffer.from('tail')]);
      assert.deepEqual(info, {
        sha256: createHash('sha256').update(whole).digest('hex'),
        md5: createHash('md5').update(whole).digest('hex'),
        size: whole.length,
      });
      assert.deepEqual(readFileSync(file), whole);
    } finally {
      closeSync(fd);
    }
  });

  it('seals a fresh header and frames for each write of the same content', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'threaded-'));
    const content = randomBytes(FRAME + 5);
    const stored: Buffer[] = [];
    for (let i = 0; i < 2; i++) {
      const file = join(dir, `out${i}`);
      const fd = openSync(file, 'w');
      try {
        await writeOffTheEventLoop(fd, [content], sealing);
      } finally {
        closeSync(fd);
      }
      stored.push(readFileSync(file));
    }
    const [a, b] = stored as [Buffer, Buffer];
    assert.equal(a.length, sealedSize(content.length));
    assert.notDeepEqual(a.subarray(0, CONTENT_HEADER), b.subarray(0, CONTENT_HEADER), 'each write has its own salt');
    assert.equal(a.indexOf(content.subarray(0, 64)), -1, 'no plaintext is stored');
  });

  it('refuses content over the limit, and reports a failed write with its errno name', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'threaded-'));
    const store = await FsBlobStore.open(dir, systemClock, sealing);
    await assert.rejects(
      store.put(pieces(randomBytes(3 * FRAME), 100_000), { maxSize: 2 * FRAME }),
      /exceeds the limit/,
    );
    assert.deepEqual(readdirSync(join(dir, 'tmp')), [], 'nothing is left behind');
    // A file opened for reading refuses the write; every batch has ended when the call settles.
    const file = join(dir, 'read-only');
    writeFileSync(file, '');
    const fd = openSync(file, 'r');
    try {
      for (const s of [undefined, sealing]) {
        await assert.rejects(writeOffTheEventLoop(fd, pieces(randomBytes(3 * FRAME), 100_000), s), (err: unknown) => {
          assert.equal((err as NodeJS.ErrnoException).code, 'EBADF');
          assert.match(String(err), /EBADF/);
          return true;
        });
      }
    } finally {
      closeSync(fd);
    }
  });
});
