/**
 * The server's threads other than the event loop under SCHED_BATCH (decision 0019).
 *
 * The event loop hands work to other threads all the time: a threadpool job per certificate,
 * a batch of writes to the SQLite writer thread, garbage collection to V8's helpers. Under the
 * normal policy, waking such a thread often preempts the event loop on its own core, which
 * then waits in the run queue while the woken thread runs. Under SCHED_BATCH a woken thread
 * never preempts on wake-up; it still gets its full share of the CPU.
 */
import { readdirSync } from 'node:fs';
import { isMainThread } from 'node:worker_threads';
import { nativeAddon } from './native-addon.js';

/** What one pass did: threads moved to SCHED_BATCH (or already there) and threads that refused. */
export interface BatchPass {
  threads: number;
  failed: number;
}

const ESRCH = 3; // the thread ended between listing and setting

/**
 * Puts every thread of this process but the main thread under SCHED_BATCH, once. Null where
 * that cannot be done: off Linux, without the native addon, or called off the main thread.
 */
export function batchBackgroundThreads(): BatchPass | null {
  const set = nativeAddon()?.batchScheduling;
  if (typeof set !== 'function' || !isMainThread) return null;
  let tids: string[];
  try {
    tids = readdirSync('/proc/self/task');
  } catch {
    return null;
  }
  const pass: BatchPass = { threads: 0, failed: 0 };
  for (const t of tids) {
    const tid = Number(t);
    // On Linux the main thread's id is the process id.
    if (!Number.isInteger(tid) || tid === process.pid) continue;
    const r = (set as (tid: number) => number)(tid);
    if (r === 0) pass.threads++;
    else if (r !== ESRCH) pass.failed++;
  }
  return pass;
}

/**
 * `batchBackgroundThreads()` now and then every `everyMs`, for threads made later (the
 * threadpool starts on first use, job workers come and go). Returns the first pass, or null
 * where it cannot be done. The timer does not keep the process alive.
 */
export function keepBackgroundThreadsBatched(everyMs: number, onPass?: (pass: BatchPass) => void): BatchPass | null {
  const first = batchBackgroundThreads();
  if (!first) return null;
  onPass?.(first);
  const timer = setInterval(() => {
    const pass = batchBackgroundThreads();
    if (pass) onPass?.(pass);
  }, everyMs);
  timer.unref();
  return first;
}
