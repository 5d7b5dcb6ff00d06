/*
 * Module entry of the native addon. Each part exports its own functions (addon.h).
 * May run once per worker thread that loads the addon.
 */
#include "addon.h"

void export_function(napi_env env, napi_value exports, const char *name, napi_callback cb) {
  napi_value fn;
  napi_create_function(env, name, NAPI_AUTO_LENGTH, cb, NULL, &fn);
  napi_set_named_property(env, exports, name, fn);
}

NAPI_MODULE_INIT() {
  if (!ecdsa_export(env, exports)) return NULL;
  threads_export(env, exports);
  aes_gcm_export(env, exports);
  audit_hmac_export(env, exports);
  blob_writer_export(env, exports);
  accept_export(env, exports);
  return exports;
}
