/* The parts of the native addon (one shared object, strongroom_native.node). */
#ifndef STRONGROOM_ADDON_H
#define STRONGROOM_ADDON_H
#define NAPI_VERSION 8
#include <node_api.h>

/* Sets exports[name] to a new function. */
void export_function(napi_env env, napi_value exports, const char *name, napi_callback cb);

/* ecdsa.c: CSR checks, EC signatures and EC key batches. Returns 0 (with an exception pending) on failure. */
int ecdsa_export(napi_env env, napi_value exports);

/* aes-gcm.c: AES-256-GCM in place and HKDF-SHA256 for stored content (exports.aesGcm). */
void aes_gcm_export(napi_env env, napi_value exports);

/* audit-hmac.c: HMAC-SHA256 of audit entry values under a device's salt (exports.auditHmac). */
void audit_hmac_export(napi_env env, napi_value exports);

/* threads.c: scheduling policy of this process's threads. */
void threads_export(napi_env env, napi_value exports);

#endif
