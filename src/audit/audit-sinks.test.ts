import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileSink } from './audit-sinks.js';

const lines = (path: string) => readFileSync(path, 'utf8').split('\n').slice(0, -1);

/** Runs `fn` with the path of a log file in a fresh directory, removed afterwards. */
async function withLog(fn: (path: string) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'audit-sink-'));
  try {
    await fn(join(dir, 'audit.log'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The file device's grouped writes, on real files (and /dev/full for a full disk). */
describe('audit file sink', () => {
  it('writes batches of any size and any text exactly, each line once and in order', () =>
    withLog(async (path) => {
      const sink = new FileSink(path, 0o600);
      // Small, then larger than the reused encoding buffer (it grows), then larger than its
      // largest size (a buffer of its own), with text of one, two, three and four UTF-8 bytes.
      const batches = [10, 3_000, 60_000].map((n, b) =>
        Array.from({ length: n }, (_, i) => `b${b} ${i} é€😀 ${'x'.repeat(i % 97)}`),
      );
      for (const batch of batches) await Promise.all(batch.map((l) => sink.write(l)));
      await sink.close();
      assert.deepEqual(lines(path), batches.flat());
    }));

  it('writes the lines of one turn together, after it, and each writer learns when its line is written', () =>
    withLog(async (path) => {
      const sink = new FileSink(path, 0o600);
      const written = Array.from({ length: 500 }, (_, i) => sink.write(`line ${i}`));
      // Nothing is written while the turn that made the lines runs.
      assert.equal(readFileSync(path, 'utf8'), '');
      await Promise.all(written);
      assert.deepEqual(
        lines(path),
        Array.from({ length: 500 }, (_, i) => `line ${i}`),
      );
      // Lines made in later turns, while others wait, keep their order.
      const more: Promise<void>[] = [];
      for (let i = 0; i < 20; i++) {
        more.push(sink.write(`later ${i}`));
        await new Promise((r) => setImmediate(r));
      }
      await Promise.all(more);
      assert.equal(lines(path).length, 520);
      assert.equal(lines(path)[519], 'later 19');
      await sink.close();
    }));

  it('writes what is pending when closed (a clean shutdown loses no line)', () =>
    withLog(async (path) => {
      const sink = new FileSink(path, 0o600);
      const pending = Array.from({ length: 100 }, (_, i) => sink.write(`pending ${i}`));
      await sink.close();
      assert.equal(lines(path).length, 100);
      await Promise.all(pending);
    }));

  it('fails every writer of a group the disk refuses (ENOSPC)', async () => {
    if (!existsSync('/dev/full')) return;
    // Mode null: the device's mode is left alone.
    const sink = new FileSink('/dev/full', null);
    const results = await Promise.allSettled(Array.from({ length: 10 }, (_, i) => sink.write(`x ${i}`)));
    assert.ok(results.every((r) => r.status === 'rejected' && /ENOSPC/.test(String(r.reason))));
    await sink.close();
  });

  it('reopens its file (log rotation): lines after the reopen go to the new file', () =>
    withLog(async (path) => {
      const sink = new FileSink(path, 0o600);
      await sink.write('before');
      renameSync(path, `${path}.1`);
      const queued = sink.write('queued before the reopen');
      sink.reopen();
      await queued;
      await sink.write('after');
      await sink.close();
      assert.deepEqual(lines(`${path}.1`), ['before']);
      assert.deepEqual(lines(path), ['queued before the reopen', 'after']);
    }));
});
