/**
 * In-process micro-benchmark of state encryption at rest: the CPU that sealing and opening
 * add to the paths of the state scenarios, each measured with encryption on and off,
 * alternating (on, off, on, off...) so that load on a shared machine hits both alike.
 *
 *   - inline 10 KB: what a create with a 10 KB state does to its content (SHA-256, then seal)
 *     and what reading it back does (open);
 *   - blob put: a stream of 64 KiB chunks (as a socket delivers them) written to a file blob
 *     store (hashing, sealing, writes and the fsync), 200 MB by default;
 *   - blob get: the same blob read back to the end.
 *
 * Encryption on is measured twice when the native addon is built: with its in-place cipher
 * ("on") and with node:crypto ("on, node:crypto"). Prints the median and the least CPU
 * (user + system, every thread) per operation of each.
 *
 *   npx tsc -p . && node dist/bench/micro/content-cipher.js [MB] [rounds]
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FsBlobStore } from '../../src/blob/fs-blob-store.js';
import { NATIVE_GCM, openBuffer, sealBuffer } from '../../src/secrets/content-cipher.js';
import type { ContentSealing, DataKey } from '../../src/secrets/content-cipher.js';

const mb = Number(process.argv[2] ?? 200);
const rounds = Number(process.argv[3] ?? 3);
const key: DataKey = { id: randomBytes(16), key: randomBytes(32) };
let gcm = NATIVE_GCM;
const sealing = (encrypt: boolean): ContentSealing => ({
  encrypt,
  native: gcm,
  current: () => key,
  lookup: () => Promise.resolve(key.key),
});

const cpuUs = async (fn: () => Promise<void> | void): Promise<number> => {
  const c0 = process.cpuUsage();
  await fn();
  const c = process.cpuUsage(c0);
  return c.user + c.system;
};

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

// A state-like 10 KB: JSON text, different each time (a serial and random values).
const inline = (i: number) =>
  Buffer.from(JSON.stringify({ version: 4, serial: i, pad: randomBytes(3800).toString('hex') }), 'utf8');

async function inlineRound(encrypt: boolean, n: number): Promise<{ seal: number; open: number }> {
  const docs = Array.from({ length: n }, (_, i) => inline(i));
  const stored: Buffer[] = [];
  const seal = await cpuUs(() => {
    for (const d of docs) {
      createHash('sha256').update(d).digest('hex');
      stored.push(encrypt ? sealBuffer(key, d, gcm) : d);
    }
  });
  const open = await cpuUs(async () => {
    for (const s of stored) await openBuffer(s, sealing(encrypt).lookup, gcm);
  });
  return { seal: seal / n, open: open / n };
}

// 64 KiB chunks as fresh buffers, like a socket's, cut from a few MB of random bytes.
const source = randomBytes(4 * 1024 * 1024);
async function* chunks(total: number): AsyncGenerator<Buffer> {
  const size = 64 * 1024;
  for (let off = 0; off < total; off += size) {
    const at = off % source.length;
    yield Buffer.from(source.subarray(at, at + Math.min(size, total - off)));
  }
}

async function blobRound(encrypt: boolean, bytes: number): Promise<{ put: number; get: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'cipher-micro-'));
  try {
    const store = await FsBlobStore.open(dir, undefined, sealing(encrypt));
    let sha = '';
    const put = await cpuUs(async () => {
      sha = (await store.put(chunks(bytes))).sha256;
    });
    const get = await cpuUs(async () => {
      let n = 0;
      for await (const c of await store.get(sha)) n += c.length;
      if (n !== bytes) throw new Error(`read ${n} of ${bytes} bytes`);
    });
    return { put, get };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const results = new Map<string, number[]>();
const add = (k: string, v: number) => results.set(k, [...(results.get(k) ?? []), v]);
const modes = NATIVE_GCM ? ['on', 'on, node:crypto', 'off'] : ['on', 'off'];
for (let r = 0; r < rounds; r++) {
  for (const mode of modes) {
    const encrypt = mode !== 'off';
    gcm = mode === 'on' ? NATIVE_GCM : null;
    const tag = mode;
    const i = await inlineRound(encrypt, 5000);
    add(`inline 10 KB seal (µs)  ${tag}`, i.seal);
    add(`inline 10 KB open (µs)  ${tag}`, i.open);
    const b = await blobRound(encrypt, mb * 1024 * 1024);
    add(`blob put ${mb} MB (ms)   ${tag}`, b.put / 1000);
    add(`blob get ${mb} MB (ms)   ${tag}`, b.get / 1000);
  }
}
for (const [k, v] of [...results].sort(([a], [b]) => a.localeCompare(b))) {
  console.log(`${k}  median ${median(v).toFixed(1)}  min ${Math.min(...v).toFixed(1)}`);
}
