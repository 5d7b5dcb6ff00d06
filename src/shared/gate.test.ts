import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Gate } from './gate.js';

describe('Gate', () => {
  it('runs at most its limit at once, the rest in arrival order, and frees a turn on failure', async () => {
    const gate = new Gate(2);
    let running = 0;
    let peak = 0;
    const order: number[] = [];
    const releases: Array<() => void> = [];
    const tasks = Array.from({ length: 6 }, (_, i) =>
      gate
        .run(async () => {
          running++;
          peak = Math.max(peak, running);
          order.push(i);
          await new Promise<void>((done) => releases.push(done));
          running--;
          if (i === 1) throw new Error('boom');
          return i;
        })
        .catch((err: Error) => err.message),
    );
    while (order.length < 6) {
      await new Promise((done) => setImmediate(done));
      releases.shift()?.();
    }
    releases.forEach((r) => r());
    assert.deepEqual(await Promise.all(tasks), [0, 'boom', 2, 3, 4, 5]);
    assert.deepEqual(order, [0, 1, 2, 3, 4, 5]);
    assert.equal(peak, 2);
    assert.equal(gate.waiting, 0);
  });
});
