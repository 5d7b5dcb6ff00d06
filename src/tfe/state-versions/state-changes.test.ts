import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { StateChanges } from './state-changes.js';

/** A unit of work that runs until `end()` is called, reporting `ids` as it starts. */
function unit(changes: StateChanges, ids: string[]): { done: Promise<void>; end: () => void } {
  let end!: () => void;
  const ended = new Promise<void>((resolve) => (end = resolve));
  const done = changes.reportingAfter(async () => {
    changes.changed(ids);
    await ended;
  });
  return { done, end };
}

describe('StateChanges', () => {
  it('reports again, once a unit has ended, what was reported while it ran', async () => {
    const changes = new StateChanges();
    const heard: string[][] = [];
    changes.onChange((ids) => heard.push([...ids].sort()));
    const a = unit(changes, ['ws-a']);
    const b = unit(changes, ['ws-b']);
    changes.changed(['ws-c']);
    heard.length = 0;
    a.end();
    await a.done;
    // a's run saw its own change, b's and one made outside any unit.
    assert.deepEqual(heard, [['ws-a', 'ws-b', 'ws-c']]);
    heard.length = 0;
    b.end();
    await b.done;
    assert.deepEqual(heard, [['ws-b', 'ws-c']]);
    assert.equal(changes.logLength, 0);
  });

  it('keeps the log bounded under a steady load where some unit always runs', async () => {
    const changes = new StateChanges();
    changes.onChange(() => undefined);
    const running: Array<{ done: Promise<void>; end: () => void }> = [];
    let longest = 0;
    for (let i = 0; i < 20_000; i++) {
      running.push(unit(changes, [`ws-${i % 64}`]));
      // 64 units overlap at all times; the oldest ends as each new one starts.
      if (running.length > 64) {
        const oldest = running.shift()!;
        oldest.end();
        await oldest.done;
      }
      longest = Math.max(longest, changes.logLength);
    }
    // Only the changes of running units are kept (64, plus the slack of cutting in steps).
    assert.ok(longest <= 64 + 256, `the log grew to ${longest} entries`);
    for (const u of running) u.end();
    await Promise.all(running.map((u) => u.done));
    assert.equal(changes.logLength, 0);
  });

  it('a unit that ends late still hears what was reported since it started', async () => {
    const changes = new StateChanges();
    const heard: string[][] = [];
    changes.onChange((ids) => heard.push([...ids].sort()));
    const old = unit(changes, ['ws-old']);
    // Many younger units come and go while the old one runs.
    for (let i = 0; i < 1000; i++) {
      const u = unit(changes, [`ws-${i}`]);
      u.end();
      await u.done;
    }
    heard.length = 0;
    old.end();
    await old.done;
    assert.equal(heard.length, 1);
    assert.equal(heard[0]!.length, 1001);
    assert.ok(heard[0]!.includes('ws-old') && heard[0]!.includes('ws-999'));
  });
});
