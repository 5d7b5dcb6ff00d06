import { Worker } from 'node:worker_threads';
import type { StateDiff } from './state-diff.js';

/**
 * Runs a state diff in a worker thread, so that comparing two large states never holds
 * up the event loop serving the API. The two states are posted as chunks one after the
 * other, a few chunks ahead of the worker at most (it acknowledges each).
 */

export type DiffWorkerRequest = { type: 'chunk'; data: ArrayBuffer } | { type: 'end' };
export type DiffWorkerResult =
  { ok: true; diff: StateDiff } | { ok: false; which: 'against' | 'version'; error: string };
export type DiffWorkerReply = { type: 'ack' } | { type: 'next' } | { type: 'result'; result: DiffWorkerResult };

const WORKER_URL = new URL('./state-diff-worker-thread.js', import.meta.url);
const MAX_IN_FLIGHT = 4;

/**
 * Compares the `against` state with the `version` state (opened only once the first was
 * read). Unreadable content resolves to `{ ok: false }` naming the side; an abort
 * terminates the worker and rejects with the signal's reason.
 */
export async function diffInWorker(
  against: AsyncIterable<Uint8Array>,
  version: () => Promise<AsyncIterable<Uint8Array>>,
  opts: { signal?: AbortSignal; maxHeapMb?: number } = {},
): Promise<DiffWorkerResult> {
  opts.signal?.throwIfAborted();
  const worker = new Worker(WORKER_URL, {
    resourceLimits: { maxOldGenerationSizeMb: opts.maxHeapMb ?? 1024 },
    stdout: false,
    stderr: false,
  });
  let inFlight = 0;
  let settled = false;
  let wakePump: (() => void) | null = null;
  let wakeNext: ((ready: boolean) => void) | null = null;
  const wake = () => {
    const w = wakePump;
    wakePump = null;
    w?.();
  };
  const result = new Promise<DiffWorkerResult>((resolve, reject) => {
    const settle = (f: () => void) => {
      if (settled) return;
      settled = true;
      opts.signal?.removeEventListener('abort', onAbort);
      wake();
      wakeNext?.(false);
      f();
      void worker.terminate();
    };
    const onAbort = () => settle(() => reject(opts.signal?.reason));
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    worker.on('message', (m: DiffWorkerReply) => {
      if (m.type === 'ack') {
        inFlight--;
        wake();
      } else if (m.type === 'next') {
        const w = wakeNext;
        wakeNext = null;
        w?.(true);
      } else settle(() => resolve(m.result));
    });
    worker.on('error', (err) =>
      settle(() => resolve({ ok: false, which: 'version', error: `diff failed: ${err.message}` })),
    );
    worker.on('exit', (code) =>
      settle(() => resolve({ ok: false, which: 'version', error: `diff failed: worker exited with code ${code}` })),
    );
  });
  result.catch(() => undefined);
  const nextRequested = new Promise<boolean>((r) => (wakeNext = r));

  const pump = async (source: AsyncIterable<Uint8Array>) => {
    for await (const chunk of source) {
      while (!settled && inFlight >= MAX_IN_FLIGHT) await new Promise<void>((r) => (wakePump = r));
      if (settled) return;
      const copy = new Uint8Array(chunk.byteLength);
      copy.set(chunk);
      inFlight++;
      const m: DiffWorkerRequest = { type: 'chunk', data: copy.buffer };
      worker.postMessage(m, [copy.buffer]);
    }
    if (!settled) worker.postMessage({ type: 'end' } satisfies DiffWorkerRequest);
  };

  const drive = async (): Promise<DiffWorkerResult> => {
    try {
      await pump(against);
      if (await nextRequested) await pump(await version());
    } catch (err) {
      settled = true;
      void worker.terminate();
      throw err;
    }
    return result;
  };
  return Promise.race([drive(), result]);
}
