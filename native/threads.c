/*
 * Scheduling policy of this process's threads (decision 0019).
 *
 * batchScheduling(tid) -> 0, or the errno of sched_setscheduler (ENOSYS off Linux)
 * batchThreadpool()    -> from now on, each libuv threadpool thread that runs one of this
 *                         addon's jobs puts itself under SCHED_BATCH first (once per thread)
 *
 * A thread under SCHED_BATCH keeps its full share of the CPU, but waking it (a threadpool
 * job queued, a write posted to the SQLite writer thread) no longer preempts the thread
 * that woke it, usually the event loop. Lowering a thread's own policy needs no privilege.
 * The threadpool's threads cannot be told apart from Node.js's own from outside, hence
 * the second call: they are found by the jobs that run on them.
 */
#define _GNU_SOURCE
#include "addon.h"
#include <errno.h>
#include <sched.h>
#include <sys/types.h>

static int batch_pool; /* set once, read by threadpool threads */
static __thread int thread_batched;

static int set_batch(pid_t tid) {
#ifdef __linux__
  struct sched_param param = {.sched_priority = 0};
  return sched_setscheduler(tid, SCHED_BATCH, &param) == 0 ? 0 : errno;
#else
  (void)tid;
  return ENOSYS;
#endif
}

void batch_this_thread_once(void) {
  if (thread_batched || !__atomic_load_n(&batch_pool, __ATOMIC_RELAXED)) return;
  thread_batched = 1;
  set_batch(0);
}

static napi_value BatchThreadpool(napi_env env, napi_callback_info info) {
  __atomic_store_n(&batch_pool, 1, __ATOMIC_RELAXED);
  return NULL;
}

static napi_value BatchScheduling(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  int32_t tid;
  napi_value out;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 || napi_get_value_int32(env, argv[0], &tid) != napi_ok ||
      tid <= 0) {
    napi_throw_type_error(env, NULL, "expected (thread id)");
    return NULL;
  }
  napi_create_int32(env, set_batch((pid_t)tid), &out);
  return out;
}

void threads_export(napi_env env, napi_value exports) {
  export_function(env, exports, "batchScheduling", BatchScheduling);
  export_function(env, exports, "batchThreadpool", BatchThreadpool);
}
