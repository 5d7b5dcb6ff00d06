/*
 * Scheduling policy of this process's threads (decision 0019).
 *
 * batchScheduling(tid) -> 0, or the errno of sched_setscheduler (ENOSYS off Linux)
 *
 * Puts one thread of this process under SCHED_BATCH: it keeps its full share of the CPU,
 * but waking it (a threadpool job queued, a write posted to the SQLite writer thread)
 * no longer preempts the thread that woke it, usually the event loop. Lowering a thread's
 * own policy needs no privilege.
 */
#define _GNU_SOURCE
#include "addon.h"
#include <errno.h>
#include <sched.h>
#include <sys/types.h>

static napi_value BatchScheduling(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  int32_t tid;
  napi_value out;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 ||
      napi_get_value_int32(env, argv[0], &tid) != napi_ok ||
      tid <= 0) {
    napi_throw_type_error(env, NULL, "expected (thread id)");
    return NULL;
  }
  int result;
#ifdef __linux__
  struct sched_param param = {.sched_priority = 0};
  result = sched_setscheduler((pid_t)tid, SCHED_BATCH, &param) == 0 ? 0 : errno;
#else
  result = ENOSYS;
#endif
  napi_create_int32(env, result, &out);
  return out;
}

void threads_export(napi_env env, napi_value exports) {
  export_function(env, exports, "batchScheduling", BatchScheduling);
}
