/**
 * The server's background threads under SCHED_BATCH (decision 0019).
 *
 * The event loop hands work to other threads all the time: a threadpool job per certificate,
 * a batch of writes to the SQLite writer thread. Under the normal policy, waking such a
 * thread often preempts the event loop on its own core, which then waits in the run queue
 * while the woken thread runs. Under SCHED_BATCH a woken thread never preempts on wake-up;
 * it still gets its full share of the CPU.
 *
 * Node.js's own threads, those that exist before this module is first loaded (V8's platform
 * workers, which run the garbage collector's parallel phases while the event loop waits for
 * them), keep the normal policy: under SCHED_BATCH the event loop waited longer for its
 * garbage collections whenever a busy thread held the other core. The libuv threadpool may
 * be among them (module loading can start it); its threads are found instead by the addon's
 * jobs, each of which puts the thread it runs on under SCHED_BATCH once (`batchThreadpool`).
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

function threadIds(): number[] | null {
  try {
    return readdirSync('/proc/self/task').map(Number).filter((tid) => Number.isInteger(tid));
  } catch {
    return null;
  }
}

/** Node.js's own threads: those running when the process first loaded this module (the main thread among them). */
const nodeThreads = new Set(isMainThread ? (threadIds() ?? []) : []);

/**
 * Puts every thread of this process started since this module was loaded (the SQLite
 * writer, worker threads, the threadpool if it started later) under SCHED_BATCH, once, and
 * has the addon's threadpool jobs do the same for the threads they run on. Null where that cannot be
 * done: off Linux, without the native addon, or called off the main thread.
 */
export function batchBackgroundThreads(): BatchPass | null {
  const addon = nativeAddon();
  const set = addon?.batchScheduling;
  const pool = addon?.batchThreadpool;
  if (typeof set !== 'function' || typeof pool !== 'function' || !isMainThread) return null;
  (pool as () => void)();
  const tids = threadIds();
  if (!tids) return null;
  const pass: BatchPass = { threads: 0, failed: 0 };
  for (const tid of tids) {
    // On Linux the main thread's id is the process id; it is among Node.js's own threads.
    if (tid === process.pid || nodeThreads.has(tid)) continue;
    const r = (set as (tid: number) => number)(tid);
    if (r === 0) pass.threads++;
    else if (r !== ESRCH) pass.failed++;
  }
  return pass;
}

/**
 * `batchBackgroundThreads()` now and then every `everyMs`, for threads made later (the
 * threadpool starts on first use, job workers come and go). Returns a stop function, or null
 * where it cannot be done. The timer does not keep the process alive.
 */
export function keepBackgroundThreadsBatched(everyMs: number, onPass?: (pass: BatchPass) => void): { first: BatchPass; stop: () => void } | null {
  const first = batchBackgroundThreads();
  if (!first) return null;
  onPass?.(first);
  const timer = setInterval(() => {
    const pass = batchBackgroundThreads();
    if (pass) onPass?.(pass);
  }, everyMs);
  timer.unref();
  return { first, stop: () => clearInterval(timer) };
}
