import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BatchQueue } from './batch-queue.js';

/** A write that stays open until released, recording the batches it was given. */
function gatedWriter() {
  const batches: number[][] = [];
  const gates: (() => void)[] = [];
  let open = 0;
  let maxOpen = 0;
  const write = async (batch: number[]) => {
    batches.push(batch);
    open++;
    maxOpen = Math.max(maxOpen, open);
    await new Promise<void>((r) => gates.push(r));
    open--;
  };
  const releaseAll = () => gates.splice(0).forEach((g) => g());
  return { batches, write, releaseAll, maxOpen: () => maxOpen };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('group commit queue', () => {
  it('with one write in flight, items that arrive during it form the next batch', async () => {
    const w = gatedWriter();
    const q = new BatchQueue<number>(w.write, 100);
    q.push(1);
    await tick();
    for (let i = 2; i <= 5; i++) q.push(i);
    await tick();
    assert.deepEqual(w.batches, [[1]]);
    w.releaseAll();
    await tick();
    await tick();
    assert.deepEqual(w.batches, [[1], [2, 3, 4, 5]]);
    w.releaseAll();
    await q.drain();
    assert.equal(w.maxOpen(), 1);
  });

  it('with several in flight, starts new batches while earlier ones wait, never more than allowed', async () => {
    const w = gatedWriter();
    const q = new BatchQueue<number>(w.write, 2, 3);
    for (let i = 1; i <= 9; i++) q.push(i);
    await tick();
    assert.deepEqual(w.batches, [
      [1, 2],
      [3, 4],
      [5, 6],
    ]);
    w.releaseAll();
    for (let i = 0; i < 5; i++) await tick();
    assert.deepEqual(w.batches.slice(3), [[7, 8], [9]]);
    w.releaseAll();
    await q.drain();
    assert.equal(w.maxOpen(), 3);
    assert.deepEqual(w.batches.flat(), [1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });
});
