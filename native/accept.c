/*
 * The connections waiting in a listening socket's accept queue, taken at once (decision 0057).
 *
 * acceptPending(fd, max) -> [fd, ...]: up to max new connections, non-blocking and
 * close-on-exec; an empty array when none waits. Stops early, without an error, on anything
 * but a connection aborted before it was taken (the next wake-up of the event loop tries
 * again): out of file descriptors, say, is for the event loop's own accept to report.
 *
 * The event loop of Node.js 20 (libuv 1.45 and later) takes one connection per pass; a
 * server whose passes take tens of milliseconds under load then lets new clients wait
 * seconds for their first answer while it serves the ones it has.
 */
#define _GNU_SOURCE
#include "addon.h"
#include <errno.h>
#include <sys/socket.h>

static napi_value AcceptPending(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  int32_t fd, max;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 2 ||
      napi_get_value_int32(env, argv[0], &fd) != napi_ok || napi_get_value_int32(env, argv[1], &max) != napi_ok ||
      fd < 0 || max < 0) {
    napi_throw_type_error(env, NULL, "expected (listening fd, max)");
    return NULL;
  }
  napi_value out;
  napi_create_array(env, &out);
  uint32_t n = 0;
  while (n < (uint32_t)max) {
    int c = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (c < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      break;
    }
    napi_value v;
    napi_create_int32(env, c, &v);
    napi_set_element(env, out, n++, v);
  }
  return out;
}

void accept_export(napi_env env, napi_value exports) {
  export_function(env, exports, "acceptPending", AcceptPending);
}
