import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SharedReads } from './shared-reads.js';

describe('shared reads in flight', () => {
  const counting = () => {
    let reads = 0;
    const read = async (value: string | null) => {
      reads++;
      await new Promise((r) => setTimeout(r, 5));
      return value;
    };
    return { read, reads: () => reads };
  };

  it('callers under the same stamp share one read, and a finished read is not joined', async () => {
    const shared = new SharedReads<string | null>();
    const c = counting();
    const all = await Promise.all(Array.from({ length: 10 }, () => shared.run('k', 1, () => c.read('v'))));
    assert.deepEqual(new Set(all), new Set(['v']));
    assert.equal(c.reads(), 1);
    assert.equal(shared.size, 0, 'nothing is left once the read is done');
    assert.equal(await shared.run('k', 1, () => c.read('w')), 'w');
    assert.equal(c.reads(), 2);
  });

  it('another key or another stamp starts a read of its own', async () => {
    const shared = new SharedReads<string | null>();
    const c = counting();
    const got = await Promise.all([
      shared.run('k', 1, () => c.read('a')),
      shared.run('other', 1, () => c.read('b')),
      shared.run('k', 2, () => c.read('c')),
      shared.run('k', 2, () => c.read('d')),
    ]);
    assert.deepEqual(got, ['a', 'b', 'c', 'c']);
    assert.equal(c.reads(), 3);
  });

  it('a result that is not shareable is read again by each caller that joined', async () => {
    const shared = new SharedReads<string | null>();
    const c = counting();
    const got = await Promise.all(
      Array.from({ length: 4 }, () =>
        shared.run(
          'k',
          1,
          () => c.read(null),
          (v) => v !== null,
        ),
      ),
    );
    assert.deepEqual(got, [null, null, null, null]);
    assert.equal(c.reads(), 4);
  });

  it('a failed read fails every caller that joined it', async () => {
    const shared = new SharedReads<string>();
    let reads = 0;
    const failing = async () => {
      reads++;
      await new Promise((r) => setTimeout(r, 5));
      throw new Error('database gone');
    };
    const results = await Promise.allSettled(Array.from({ length: 3 }, () => shared.run('k', 1, failing)));
    assert.ok(results.every((r) => r.status === 'rejected' && (r.reason as Error).message === 'database gone'));
    assert.equal(reads, 1);
  });
});
